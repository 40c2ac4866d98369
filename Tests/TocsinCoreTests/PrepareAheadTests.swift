import Logging
import Testing
@testable import TocsinCore
import TocsinTesting
import TocsinTime
import TocsinModel

/// Firings claimed ahead are handed to their batch backends' `prepare` before the instant, so
/// that only the hand-off is left at it; what a backend prepared is what it is then given.
@Suite("Preparing firings claimed ahead")
struct PrepareAheadTests {
    /// A batch backend (as dbus-signal is) that records what it is asked to prepare and deliver.
    final class Preparing: BatchDeliveryBackend, Sendable {
        let name = "signals"
        let prepared = WaitableState<[Firing]>([])
        let delivered = WaitableState<[Firing]>([])
        var ringPolicy: RingPolicy? { nil }
        var quietMode: QuietMode { .hold }
        func start(events: any BackendEventSink) async {}
        func deliver(_ firing: Firing) async throws(DeliveryError) { delivered.update { $0.append(firing) } }
        func deliver(batch: [Firing]) -> BatchHandOff {
            delivered.update { $0 += batch }
            return BatchHandOff(errors: batch.map { _ in nil })
        }
        /// Called with the number of `prepare` calls so far, after recording each.
        let onPrepare = WaitableState<(@Sendable (Int) -> Void)?>(nil)
        func prepare(batch: [Firing]) {
            prepared.update { $0 += batch }
            let calls = preparations.value + 1
            preparations.update { $0 = calls }
            onPrepare.value?(calls)
        }
        let preparations = WaitableState<Int>(0)
        func withdraw(key: String, reason: WithdrawReason) async {}
        func shutdown() async {}
        func health() async -> BackendHealth { .ok }
    }

    /// A center whose one backend is a `Preparing`.
    struct Rig {
        let h: Harness
        let backend = Preparing()
        var center: TocsinCenter { h.center }
        var clock: VirtualClock { h.clock }
        var lead: TimeSpan { h.options.claimAhead }

        init() async throws { h = try await Harness(backends: [], others: [backend]) }

        func wake() async throws -> Instant { try await h.wake() }
    }

    @Test("a firing claimed ahead is prepared before its instant and delivered at it as prepared")
    func preparedThenDelivered() async throws {
        let r = try await Rig()
        _ = try await r.center.schedule(spec("tea", at(10)))
        #expect(try await r.wake() == t0 + .seconds(10) - r.lead)
        let prepared = r.backend.prepared.value
        #expect(prepared.map(\.key) == ["tea"])
        #expect(prepared.first?.fired == t0 + .seconds(10), "prepared with its instant as its time")
        #expect(r.backend.delivered.value.isEmpty, "delivered before its instant")
        #expect(try await r.wake() == t0 + .seconds(10))
        #expect(r.backend.delivered.value == prepared, "delivered other than prepared")
    }

    /// Regression: the loop's next tick waits for the batch in progress, so a firing held for an
    /// instant that passed while a thousand others were being claimed went out only after them.
    @Test("a held firing whose instant passes while a long claim batch runs goes out during it, on time")
    func releasedDuringALongBatch() async throws {
        let r = try await Rig()
        let clock = r.clock
        _ = try await r.center.schedule(spec("tea", at(10)))
        let later = Instant(microseconds: (t0 + .seconds(10)).microseconds + 50_000)
        for i in 0..<300 { _ = try await r.center.schedule(spec("b\(i)", .at(.instant(later)))) }
        _ = try await r.wake()
        #expect(r.backend.prepared.value.map(\.key) == ["tea"], "tea alone is claimed first")
        // The burst's batch: its first slice's preparation outlasts tea's instant, its second
        // runs past the late tolerance. Released after the batch, tea would go out late.
        r.backend.onPrepare.update { $0 = { calls in
            if calls == 2 { clock.passWhileSuspended(TimeSpan(microseconds: 51_000)) }
            if calls == 3 { clock.passWhileSuspended(NotificationMachine.lateTolerance + .seconds(1)) }
        } }
        #expect(try await r.wake() == later - r.lead)
        let tea = r.backend.delivered.value.first { $0.key == "tea" }
        #expect(tea?.reason == .scheduled, "tea went out \(tea.map { "\($0.reason)" } ?? "never")")
        #expect(tea?.fired == t0 + .seconds(10))
    }

    @Test("cancelled between the claim and the instant: prepared, never delivered")
    func cancelledInTheLead() async throws {
        let r = try await Rig()
        _ = try await r.center.schedule(spec("tea", at(10)))
        _ = try await r.wake()
        #expect(r.backend.prepared.value.map(\.key) == ["tea"])
        #expect(try await r.center.cancel("tea"))
        r.clock.advance(to: t0 + .seconds(10))
        await r.center.tick()
        await r.center.waitForDeliveries()
        #expect(r.backend.delivered.value.isEmpty)
    }

    @Test("a burst of aheadLimit due together is claimed and prepared whole before its instant; the rest at it")
    func burstPreparedWhole() async throws {
        #expect(TocsinCenter.aheadLimit >= 1_000, "a burst of 1,000 (the benchmarks') is no longer prepared whole")
        let r = try await Rig()
        let count = TocsinCenter.aheadLimit + 10
        try await scheduleBurst(count, dueAt: 10, on: r.center)
        _ = try await r.wake()
        #expect(r.backend.prepared.value.count == TocsinCenter.aheadLimit)
        #expect(Set(r.backend.prepared.value.map(\.key)).count == TocsinCenter.aheadLimit)
        #expect(r.backend.delivered.value.isEmpty, "delivered before its instant")
        #expect(try await r.wake() == t0 + .seconds(10))
        let delivered = r.backend.delivered.value
        #expect(delivered.count == count)
        #expect(Set(delivered.map(\.key)).count == count, "some delivered twice")
        #expect(r.backend.prepared.value.count == TocsinCenter.aheadLimit, "what is claimed at the instant is not prepared")
    }
}
