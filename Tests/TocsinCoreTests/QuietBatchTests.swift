import Logging
import Testing
import TocsinConfig
@testable import TocsinCore
import TocsinTesting
import TocsinTime
import TocsinModel

/// Quiet hours as inputs of the center's batches: a switch shares a batch and its commit with
/// other requests, a hold commits with the confirmation of its claim, a failed commit rolls quiet
/// hours back with the rest, and released firings go through the usual delivery path.
@Suite("Quiet hours: in the batch")
struct QuietBatchTests {
    static func isQuiet(_ op: StoreOp) -> Bool {
        switch op {
        case .quietSwitch, .quietActive, .hold, .unhold: return true
        default: return false
        }
    }

    @Test("a quiet switch queued behind a commit shares the next batch and its one transaction with other requests")
    func switchSharesTheBatch() async throws {
        let store = InMemoryStore()
        let clock = VirtualClock(now: t0)
        let c = try await memoryCenter(store, clock, [RecordingBackend(name: "popup", quietMode: .hold)])
        let before = store.commits.count
        store.hold()
        let first = Task { try await c.schedule(spec("first", at(10))) }
        try await store.state.wait("the first commit", timeout: .seconds(10)) { $0.commits.count == before + 1 }
        let on = Task { try await c.quietOn(until: nil) }
        let second = Task { try await c.schedule(spec("second", at(20))) }
        try await waitUntil("two queued requests") { await c.queuedRequests >= 2 }
        store.release()
        _ = try await first.value
        #expect(try await on.value.active)
        _ = try await second.value
        let commits = Array(store.commits.dropFirst(before))
        #expect(commits.count == 2, "one transaction for the first call, one for the two queued behind it")
        #expect(commits.last?.contains(where: Self.isQuiet) == true && commits.last?.contains { if case .upsert = $0 { return true }; return false } == true,
                "the switch and the schedule in one transaction")
    }

    @Test("a held firing's hold and its backend's confirmation commit together; the log's confirmation too")
    func holdCommitsWithItsConfirmation() async throws {
        let store = InMemoryStore()
        let clock = VirtualClock(now: t0)
        let c = try await memoryCenter(store, clock, [RecordingBackend(name: "popup", quietMode: .hold)])
        try await c.quietOn(until: nil)
        try await c.schedule(spec("tea", at(10)))
        clock.advance(by: .seconds(10))
        await c.tick()
        await c.waitForDeliveries()
        let holding = store.commits.filter { ops in ops.contains { if case .hold(let h) = $0 { return h.firing.key == "tea" }; return false } }
        #expect(holding.count == 1)
        #expect(holding.first?.contains { if case .delete(key: "tea", _) = $0 { return true }; return false } == true,
                "the one-shot ends (its claim confirmed) in the hold's transaction")
        #expect(store.state.value.quiet.held.map(\.firing.key) == ["tea"])
        #expect(store.rows.isEmpty)
    }

    @Test("a reload whose commit fails leaves quiet hours, the backends and the schedule as they were")
    func failedReloadRollsQuietBack() async throws {
        let store = InMemoryStore()
        let clock = VirtualClock(now: t0)
        let popup = RecordingBackend(name: "popup", quietMode: .hold)
        let c = try await memoryCenter(store, clock, [popup])
        try await c.quietOn(until: nil)
        try await c.schedule(spec("tea", at(10)))
        clock.advance(by: .seconds(10))
        await c.tick()
        await c.waitForDeliveries()
        #expect(await c.heldFirings.count == 1)
        var q = QuietSettings()
        q.backends = ["popup": .drop]
        q.windows = [QuietWindowSpec(onCalendar: try CalendarSpec.parse("Mon 08:00"), duration: .hours(2))]
        store.failCommit(number: store.commits.count + 1)
        await #expect(throws: CenterError.self) {
            try await c.reload(backends: [popup], specs: [spec("new", at(100))], quiet: q)
        }
        #expect(await c.quietStatus() == QuietStatus(active: true, source: "manual", until: nil, held: 1))
        #expect(await c.activeCount == 0, "the reload's notification was rolled back with it")
        // Still `hold`, not the reload's `drop`: a switch off releases the held firing to it.
        try await c.quietOff()
        await c.waitForDeliveries()
        #expect(popup.deliveredKeys == ["tea"])
    }

    @Test("released firings go through the delivery path: counted as in flight, one backend's oldest first, then recorded")
    func releasedThroughDispatch() async throws {
        let store = InMemoryStore()
        let clock = VirtualClock(now: t0)
        let popup = RecordingBackend(name: "popup", quietMode: .hold)
        let c = try await memoryCenter(store, clock, [popup])
        try await c.quietOn(until: nil)
        for (i, key) in ["c", "a", "b"].enumerated() { try await c.schedule(spec(key, at(10 + Int64(i)))) }
        clock.advance(by: .seconds(12))
        await c.tick()
        await c.waitForDeliveries()
        #expect(await c.heldFirings.map(\.firing.key) == ["c", "a", "b"])
        try await c.quietOff()
        // No waiting on the backend: the released deliveries are in flight like any other.
        await c.waitForDeliveries()
        #expect(popup.deliveredKeys == ["c", "a", "b"], "oldest first (by due time)")
        #expect(popup.deliveries.allSatisfy { $0.reason == .quietEnded })
        #expect(store.state.value.quiet.held.isEmpty)
    }

    @Test("a hold that cannot be saved is forgotten and its firing delivered instead")
    func failedHoldDelivers() async throws {
        let store = InMemoryStore()
        let clock = VirtualClock(now: t0)
        let popup = RecordingBackend(name: "popup", quietMode: .hold)
        let c = try await memoryCenter(store, clock, [popup])
        try await c.quietOn(until: nil)
        try await c.schedule(spec("tea", at(10)))
        // Only the hold carries quiet ops: the claim before it commits.
        store.state.update { $0.failQuiet = true }
        clock.advance(by: .seconds(10))
        await c.tick()
        #expect(await popup.wait { d, _ in d.map(\.key) == ["tea"] }, "the firing delivered after its hold failed")
        await c.waitForDeliveries()
        #expect(await c.heldFirings.isEmpty)
        #expect(popup.deliveredKeys == ["tea"])
        // The rescued delivery is confirmed as any other: the one-shot's row goes, so a restart
        // does not report a delivered firing as interrupted.
        await c.settle()
        #expect(store.rows.isEmpty, "\(store.rows.keys)")
    }

    @Test("released firings to a batch-taking backend keep their order when one key's queue is busy")
    func releasedOrderOnABatchBackend() async throws {
        let store = InMemoryStore()
        let clock = VirtualClock(now: t0)
        let signals = BatchRecorder(name: "signals")
        let c = try await memoryCenter(store, clock, [signals])
        var q = QuietSettings()
        q.backends = ["signals": .hold]
        try await c.reload(backends: [signals], specs: [], quiet: q)
        try await c.quietOn(until: nil)
        for (i, key) in ["older", "newer"].enumerated() {
            try await c.schedule(spec(key, .every(.hours(1), count: nil, starting: .instant(t0 + .seconds(10 + Int64(i))), until: nil)))
        }
        clock.advance(by: .seconds(11))
        await c.tick()
        await c.waitForDeliveries()
        #expect(await c.heldFirings.map(\.firing.key) == ["older", "newer"])
        // The older key's queue is busy (its withdraw waits) when quiet ends: a snooze withdraws
        // and keeps what is held (a cancel would drop it).
        _ = try await c.snooze("older", for: .minutes(5))
        try await signals.withdrawing.wait("the withdraw to start", timeout: .seconds(10)) { $0 }
        try await c.quietOff()
        signals.gate.update { $0 = true }
        await c.waitForDeliveries()
        #expect(signals.delivered.value == ["older", "newer"], "oldest first, also through a batch-taking backend")
    }

    @Test("regression: shutdown's grace for a hung delivery elapses on the center's clock, not in real time")
    func graceOnTheCentersClock() async throws {
        let clock = VirtualClock(now: t0)
        let spy = RecordingBackend(name: "spy", behaviour: .hang)
        let log = WaitableState<[String]>([])
        let c = try await memoryCenter(InMemoryStore(), clock, [spy], logger: RecordingLogHandler.logger(log))
        try await c.schedule(spec("tea", at(10)))
        clock.advance(by: .seconds(10))
        await c.tick()
        // The delivery hangs; its attempt timeout (10 s on the clock) is the first sleeper.
        try await withTimeout(.seconds(10), "the delivery's timeout to wait on the clock") { await clock.waitForSleepers(atLeast: 1) }
        let shutdown = Task { await c.shutdown(grace: .seconds(5)) }
        try await withTimeout(.seconds(10), "shutdown's grace to wait on the clock") { await clock.waitForSleepers(atLeast: 2) }
        clock.advance(by: .seconds(4))
        #expect(clock.sleeperCount == 2, "a second before the grace ends, shutdown still waits (beside the delivery's timeout)")
        clock.advance(by: .seconds(1))
        try await withTimeout(.seconds(10), "shutdown to return once the grace elapsed") { await shutdown.value }
        _ = try await log.wait("the warning about the unfinished delivery", timeout: .seconds(10)) {
            $0.contains { $0.contains("shutting down with 1 deliveries still running") }
        }
        #expect(spy.deliveries.isEmpty)
    }
}

/// A backend that takes batches (as dbus-signal does), records the order of deliveries, and
/// whose withdraw waits for `gate`: a way to keep one key's queue busy.
final class BatchRecorder: BatchDeliveryBackend, Sendable {
    let name: String
    let delivered = WaitableState<[String]>([])
    let withdrawing = WaitableState<Bool>(false)
    let gate = WaitableState<Bool>(false)
    init(name: String) { self.name = name }
    var ringPolicy: RingPolicy? { nil }
    var quietMode: QuietMode { .hold }
    func start(events: any BackendEventSink) async {}
    func deliver(_ firing: Firing) async throws(DeliveryError) { delivered.update { $0.append(firing.key) } }
    func deliver(batch: [Firing]) -> BatchHandOff {
        delivered.update { $0 += batch.map(\.key) }
        return BatchHandOff(errors: batch.map { _ in nil })
    }
    func withdraw(key: String, reason: WithdrawReason) async {
        withdrawing.update { $0 = true }
        _ = try? await gate.wait("the test to open the gate", timeout: .seconds(10)) { $0 }
    }
    func shutdown() async {}
    func health() async -> BackendHealth { .ok }
}
