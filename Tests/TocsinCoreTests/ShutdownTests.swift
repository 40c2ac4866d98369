import Synchronization
import Testing
import TocsinCore
import TocsinModel
import TocsinTesting
import TocsinTime

/// What a stop does to a batch already under way: its claims are made, so it must end before
/// the backends shut down and the store closes. A slice handed over after that would reach a
/// backend that is gone, or (committed on a closed store) be delivered unrecorded and delivered
/// again by the next start as missed.
@Suite("Shutting the center down mid-batch")
struct ShutdownTests {
    /// Counts deliveries, and those that came after its shutdown.
    final class Spy: DeliveryBackend, Sendable {
        let name = "spy"
        struct State { var keys: [String] = [], down = false, afterDown = 0 }
        let state = Mutex(State())
        let first = WaitableState(false)
        var ringPolicy: RingPolicy? { nil }
        var quietMode: QuietMode { .deliver }
        func start(events: any BackendEventSink) async { state.withLock { $0.down = false } }
        func deliver(_ firing: Firing) async throws(DeliveryError) {
            state.withLock { s in
                s.keys.append(firing.key)
                if s.down { s.afterDown += 1 }
            }
            first.update { $0 = true }
        }
        func withdraw(key: String, reason: WithdrawReason) async {}
        func shutdown() async { state.withLock { $0.down = true } }
        func health() async -> BackendHealth { .ok }
    }

    @Test("a stop during a burst finishes the batch first: every firing reaches the backend while it is up, once, and none again after the restart")
    func stopDuringABurst() async throws {
        let total = 3_000
        let spy = Spy()
        let h = try await Harness(backends: [], others: [spy])
        try await scheduleBurst(total, dueAt: 10, on: h.center)
        h.clock.advance(to: t0 + .seconds(10))
        let center = h.center
        let tick = Task { await center.tick() }
        // The batch is under way: its first slice has reached the backend, the others not yet.
        _ = try await spy.first.wait("the burst's first delivery", timeout: .seconds(20)) { $0 }
        await center.shutdown(grace: .zero)
        await tick.value
        let firstRun = spy.state.withLock { $0 }

        try await h.restart()
        await h.center.tick()
        await h.center.waitForDeliveries()
        var seen: [String: Int] = [:]
        for key in spy.state.withLock({ $0.keys }) { seen[key, default: 0] += 1 }
        let twice = seen.filter { $0.value > 1 }
        #expect(firstRun.keys.count == total, "delivered before the stop")
        #expect(firstRun.afterDown == 0, "delivered to a backend already shut down")
        #expect(twice.count == 0, "delivered again after the restart: \(twice.count), e.g. \(twice.keys.sorted().prefix(3))")
        #expect(seen.count == total)
    }
}
