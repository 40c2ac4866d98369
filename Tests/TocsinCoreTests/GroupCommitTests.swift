import Logging
import Testing
import TocsinConfig
@testable import TocsinCore
import TocsinTesting
import TocsinTime

/// Group commit against a store whose commits can be held and failed: which requests share a
/// transaction, when callers are answered, and that a failed commit changes nothing.
@Suite("Group commit")
struct GroupCommitTests {
    /// Waits (yielding, with a deadline) until `n` requests are queued behind a held commit.
    func queued(_ c: TocsinCenter, _ n: Int) async throws {
        try await waitUntil("\(n) queued requests") { await c.queuedRequests >= n }
    }

    @Test("requests arriving during a commit share the next transaction, and are answered only after it")
    func batching() async throws {
        let store = InMemoryStore()
        let clock = VirtualClock(now: t0)
        let c = try await memoryCenter(store, clock, [RecordingBackend(name: "spy")])
        let before = store.commits.count
        store.hold()
        let first = Task { try await c.schedule(spec("first", at(10))) }
        try await store.state.wait("the first commit", timeout: .seconds(10)) { $0.commits.count == before + 1 }
        let rest = (0..<10).map { i in Task { try await c.schedule(spec("k\(i)", at(20))) } }
        try await queued(c, 10)
        #expect(await c.activeCount == 1, "queued requests are not applied before their batch")
        store.release()
        #expect(try await first.value == "first")
        for (i, t) in rest.enumerated() { #expect(try await t.value == "k\(i)") }
        let commits = Array(store.commits.dropFirst(before))
        #expect(commits.map(\.count) == [1, 10], "one transaction for the first call, one for the ten queued behind it")
        #expect(store.rows.count == 11)
    }

    @Test("a failed commit fails exactly the calls in its batch and leaves the state as it was")
    func failedCommit() async throws {
        let store = InMemoryStore()
        let clock = VirtualClock(now: t0)
        let spy = RecordingBackend(name: "spy")
        let c = try await memoryCenter(store, clock, [spy])
        try await c.schedule(spec("keep", at(10)))
        try await c.schedule(spec("old", at(30), title: "old"))
        let before = store.commits.count
        store.hold()
        let first = Task { try await c.schedule(spec("ok", at(15))) }
        try await store.state.wait("the first commit", timeout: .seconds(10)) { $0.commits.count == before + 1 }
        store.failCommit(number: before + 2)
        let doomed: [Task<String, any Error>] = [
            Task { try await c.schedule(spec("new", at(5))) },
            Task { try await c.cancel("keep") ? "cancelled" : "not" },
            Task { try await c.schedule(spec("old", at(99), title: "replaced")) },
        ]
        try await queued(c, 3)
        store.release()
        #expect(try await first.value == "ok")
        for t in doomed {
            do {
                _ = try await t.value
                Issue.record("a call of the failed batch succeeded")
            } catch let e as CenterError {
                #expect(e.code == .storage)
            }
        }
        #expect(await c.list().map(\.notification.key) == ["keep", "ok", "old"])
        #expect(await c.lookup("old")?.notification.title == "old")
        #expect(await c.lookup("old")?.nextFire == t0 + .seconds(30))
        #expect(await c.nextDeadline() == t0 + .seconds(10))
        #expect(spy.withdrawals.isEmpty, "nothing of the failed batch was performed")
        clock.advance(by: .seconds(10))
        await c.tick()
        await c.waitForDeliveries()
        #expect(spy.deliveries.map(\.key) == ["keep"])
    }

    @Test("a burst due together is claimed in slices, one transaction each, and every firing is delivered once")
    func burstInSlices() async throws {
        let store = InMemoryStore()
        let clock = VirtualClock(now: t0)
        let spy = RecordingBackend(name: "spy")
        let c = try await memoryCenter(store, clock, [spy])
        for i in 0..<300 { try await c.schedule(spec("k" + String(1000 + i).dropFirst(), at(10))) }
        let before = store.commits.count
        store.failCommit(number: before + 2)
        clock.advance(by: .seconds(10))
        await c.tick()
        await c.waitForDeliveries()
        let slices = store.commits.dropFirst(before).prefix(3).map { ops in
            ops.filter { if case .progress = $0 { return true }; return false }.count
        }
        #expect(slices == [128, 128, 44], "claims per transaction")
        #expect(store.state.value.failed == [before + 2])
        let keys = spy.deliveries.map(\.key)
        #expect(keys.count == 300 && Set(keys).count == 300, "a slice whose claim failed is still delivered, once")
    }

    @Test("a firing whose claim cannot be recorded does not fail a request of the same batch that changed nothing")
    func factFailureSparesRequests() async throws {
        let store = InMemoryStore()
        let clock = VirtualClock(now: t0)
        let spy = RecordingBackend(name: "spy")
        let c = try await memoryCenter(store, clock, [spy])
        try await c.schedule(spec("due", at(10)))
        let before = store.commits.count
        store.hold()
        let first = Task { try await c.schedule(spec("x", at(99))) }
        try await store.state.wait("the first commit", timeout: .seconds(10)) { $0.commits.count == before + 1 }
        store.failCommit(number: before + 2)
        clock.advance(by: .seconds(10))
        let tick = Task { await c.tick() }
        let reload = Task { try await c.applyConfig([]) }
        try await waitUntil("the tick and the reload queued") { await c.queuedWork >= 2 }
        store.release()
        _ = try await first.value
        await tick.value
        let report = try await reload.value
        #expect(report.added.isEmpty && report.removed.isEmpty)
        #expect(store.state.value.failed == [before + 2], "the claim's commit failed")
        await c.waitForDeliveries()
        #expect(spy.deliveries.map(\.key) == ["due"], "delivered anyway")
    }
}
