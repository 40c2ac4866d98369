import Logging
import Testing
import TocsinConfig
@testable import TocsinCore
import TocsinTesting
import TocsinTime

/// The window a burst is claimed in (`CenterBatch.runBatch`): claims run at most two slices ahead
/// of the deliveries, and confirmations of what went out ride in the burst's later commits, but
/// never in a batch that also carries requests (their rollback would undo the confirmation).
@Suite("Burst window")
struct BurstWindowTests {
    static func key(_ i: Int) -> String { "k" + String(1000 + i).dropFirst() }

    /// The keys whose rows a commit deletes: a one-shot's confirmation ends it.
    static func deleted(_ ops: [StoreOp]) -> Set<String> {
        Set(ops.compactMap { if case .delete(let k, _) = $0 { return k }; return nil })
    }

    @Test("the first slice's confirmations ride in the burst's third commit, not after the whole burst")
    func confirmationsRideInTheBurst() async throws {
        let store = InMemoryStore()
        let clock = VirtualClock(now: t0)
        let spy = RecordingBackend(name: "spy")
        let c = try await memoryCenter(store, clock, [spy])
        for i in 0..<400 { try await c.schedule(spec(Self.key(i), at(10))) }
        let before = store.commits.count
        clock.advance(by: .seconds(10))
        await c.tick()
        await c.waitForDeliveries()
        let burst = Array(store.commits.dropFirst(before).prefix(4))
        let claims = burst.map { ops in ops.filter { if case .progress = $0 { return true }; return false }.count }
        #expect(claims == [128, 128, 128, 16], "claims per transaction")
        let firstSlice = Set((0..<128).map(Self.key))
        let confirmedLater = burst.dropFirst(2).reduce(Set<String>()) { $0.union(Self.deleted($1)) }
        #expect(!confirmedLater.intersection(firstSlice).isEmpty, "no confirmation of the first slice rode in the burst")
        #expect(Self.deleted(burst[0]).isEmpty && Self.deleted(burst[1]).isEmpty, "a confirmation cannot come before its claim's slice went out")
        #expect(spy.deliveries.count == 400 && Set(spy.deliveries.map(\.key)).count == 400)
        #expect(store.rows.isEmpty, "every one-shot ended once confirmed")
    }

    @Test("a backend that never answers does not hold the burst: the window counts deliveries started, not finished")
    func hangingBackendDoesNotStall() async throws {
        let store = InMemoryStore()
        let clock = VirtualClock(now: t0)
        let spy = RecordingBackend(name: "spy", behaviour: .hang)
        let c = try await memoryCenter(store, clock, [spy])
        for i in 0..<400 { try await c.schedule(spec(Self.key(i), at(10))) }
        let before = store.commits.count
        clock.advance(by: .seconds(10))
        await c.tick()
        let burst = store.commits.dropFirst(before).prefix(4)
        let claims = burst.map { ops in ops.filter { if case .progress = $0 { return true }; return false }.count }
        #expect(claims == [128, 128, 128, 16], "the whole burst is claimed although no delivery finished")
    }

    @Test("a burst batch that also carries requests folds no confirmation into its slices")
    func noFoldBesideRequests() async throws {
        let store = InMemoryStore()
        let clock = VirtualClock(now: t0)
        let spy = RecordingBackend(name: "spy")
        let c = try await memoryCenter(store, clock, [spy])
        for i in 0..<400 { try await c.schedule(spec(Self.key(i), at(10))) }
        try await c.schedule(spec("other", at(99)))
        let before = store.commits.count
        store.hold()
        let first = Task { try await c.schedule(spec("first", at(99))) }
        try await store.state.wait("the first commit", timeout: .seconds(10)) { $0.commits.count == before + 1 }
        clock.advance(by: .seconds(10))
        let tick = Task { await c.tick() }
        let cancel = Task { try await c.cancel("other") }
        try await waitUntil("the tick and the cancel queued") { await c.queuedWork >= 2 }
        store.release()
        _ = try await first.value
        await tick.value
        #expect(try await cancel.value)
        let burst = Array(store.commits.dropFirst(before + 1).prefix(4))
        let folded = burst.reduce(Set<String>()) { $0.union(Self.deleted($1)) }.subtracting(["other"])
        #expect(folded.isEmpty, "confirmations folded beside a request: \(folded.sorted().prefix(5))")
        await c.waitForDeliveries()
        #expect(spy.deliveries.count == 400)
    }
}
