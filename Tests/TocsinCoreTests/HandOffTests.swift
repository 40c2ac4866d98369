import Testing
import TocsinCore
import TocsinTesting
import TocsinTime
import TocsinModel

/// A batch backend's hand-off may still be inside the process when `deliver(batch:)` returns (the
/// dbus-signal backend's signals, queued on the bus connection): the center records the delivery
/// only once it is out (`BatchHandOff.departure`), so that a crash before then reports the firing
/// as interrupted instead of losing it unreported.
@Suite("Recording a batch hand-off once it is out")
struct HandOffTests {
    /// A batch backend whose hand-offs leave the process when the test says.
    final class Slow: BatchDeliveryBackend, Sendable {
        let name = "signals"
        let delivered = WaitableState<[String]>([])
        let out = WaitableState<Bool>(false)
        /// What the hand-off ends with once out: nil (written), or the error of a dropped one.
        let dropped: DeliveryError?
        init(dropped: DeliveryError? = nil) { self.dropped = dropped }
        var ringPolicy: RingPolicy? { nil }
        var quietMode: QuietMode { .deliver }
        func start(events: any BackendEventSink) async {}
        func deliver(_ firing: Firing) async throws(DeliveryError) { delivered.update { $0.append(firing.key) } }
        func deliver(batch: [Firing]) -> BatchHandOff {
            delivered.update { $0 += batch.map(\.key) }
            let (out, dropped) = (out, dropped)
            return BatchHandOff(errors: batch.map { _ in nil }, departure: {
                _ = try? await out.wait("the test to let the hand-off out", timeout: .seconds(60)) { $0 }
                return dropped
            })
        }
        func withdraw(key: String, reason: WithdrawReason) async {}
        func shutdown() async {}
        func health() async -> BackendHealth { .ok }
    }

    struct Row: CustomTestStringConvertible, Sendable {
        let name: String
        let outBeforeTheCrash: Bool
        var dropped: DeliveryError? = nil
        let interrupted: Bool
        var testDescription: String { name }
    }

    static let rows = [
        Row(name: "still in the process at the crash: reported interrupted", outBeforeTheCrash: false, interrupted: true),
        Row(name: "out before the crash: recorded as delivered, not reported", outBeforeTheCrash: true, interrupted: false),
        Row(name: "dropped before the crash (a lost bus): a failed delivery, not reported again", outBeforeTheCrash: true,
            dropped: DeliveryError(.permanent, "the bus connection was lost"), interrupted: false),
    ]

    @Test("a crash after the hand-off", arguments: rows)
    func crashAfterTheHandOff(_ row: Row) async throws {
        let slow = Slow(dropped: row.dropped)
        let h = try await Harness(backends: [], others: [slow])
        let events = await h.center.events()
        try await h.center.schedule(spec("tea", at(10)))
        _ = try await h.wake()  // the claim, made ahead
        h.clock.advance(to: t0 + .seconds(10))
        await h.center.tick()
        #expect(slow.delivered.value == ["tea"], "row \(row.name)")
        let before = h.center
        if row.outBeforeTheCrash {
            slow.out.update { $0 = true }
            await before.waitForDeliveries()
        }
        // Everything the crashed center queued is committed: a confirmation it would have
        // recorded is durable before the restart, so only the hand-off's wait can keep it out.
        await before.settle()
        h.clock.advance(to: t0 + .seconds(11))
        try await h.restart()
        let history = try await h.center.history(HistoryQuery(key: "tea"))
        let interrupted = history.filter { $0.kind == .interrupted }.map(\.due)
        #expect(interrupted == (row.interrupted ? [t0 + .seconds(10)] : []), "row \(row.name)")
        #expect(slow.delivered.value == ["tea"], "row \(row.name): delivered again after the restart")
        if let dropped = row.dropped {
            let failed = try await withTimeout(.seconds(20), "the failed delivery's event") { () -> String? in
                for await e in events {
                    if case .deliveryFailed(let key, let backend, let message) = e { return "\(key) \(backend): \(message)" }
                }
                return nil
            }
            #expect(failed == "tea signals: \(dropped.message)", "row \(row.name)")
        }
        // The crashed center's hand-off ends with the test, before its state directory goes.
        slow.out.update { $0 = true }
        await before.waitForDeliveries()
    }

    /// A bus that does not read holds the confirmation for as long as it does not: the log must
    /// say why the firing is neither confirmed nor failed. The wake-up timer carries the
    /// warning's instant, and drops it once the hand-off is out.
    @Test("a hand-off still inside after 10 s is named in the log, once, and the delivery ends when it leaves")
    func slowHandOffIsLogged() async throws {
        let slow = Slow()
        let lines = WaitableState<[String]>([])
        let clock = VirtualClock(now: t0)
        let c = try await memoryCenter(InMemoryStore(), clock, [slow], logger: RecordingLogHandler.logger(lines))
        try await c.schedule(spec("tea", at(10)))
        clock.advance(to: t0 + .seconds(10))
        await c.tick()
        #expect(slow.delivered.value == ["tea"])
        #expect(clock.armedAt == t0 + .seconds(20), "the timer is armed for the warning")
        let warning = "deliveries still waiting to leave the process"
        func warnings() -> Int { lines.value.filter { $0.hasPrefix(warning) }.count }
        clock.advance(to: t0 + .seconds(19))
        await c.tick()
        #expect(warnings() == 0, "warned before 10 s")
        clock.advance(to: t0 + .seconds(20))
        await c.tick()
        #expect(warnings() == 1)
        #expect(clock.armedAt == nil, "armed again for a warning already given")
        clock.advance(to: t0 + .seconds(30))
        await c.tick()
        #expect(warnings() == 1, "warned again")
        slow.out.update { $0 = true }
        await c.waitForDeliveries()
        await c.settle()
        let history = try await c.history(HistoryQuery(key: "tea"))
        #expect(history.map(\.kind) == [.fired], "fired once, not failed: \(history.map(\.kind))")
        // Out quickly: once it is out, the timer no longer carries a warning for it.
        try await c.schedule(spec("quick", at(40)))
        slow.out.update { $0 = true }
        clock.advance(to: t0 + .seconds(40))
        await c.tick()
        await c.waitForDeliveries()
        await c.settle()
        #expect(clock.armedAt == nil, "still armed for a hand-off that is out")
        #expect(warnings() == 1)
    }

    /// The daemon stops firing before it stops serving the bus: the center closes its store while
    /// a hand-off may still wait for a bus that does not read, and calls may still arrive.
    @Test("shut down with the hand-off still in the process: later calls are refused, and the next start reports the firing interrupted")
    func shutdownBeforeTheHandOffIsOut() async throws {
        let slow = Slow()
        let h = try await Harness(backends: [], others: [slow])
        try await h.center.schedule(spec("tea", at(10)))
        _ = try await h.wake()
        h.clock.advance(to: t0 + .seconds(10))
        await h.center.tick()
        #expect(slow.delivered.value == ["tea"])
        let before = h.center
        await before.shutdown(grace: .zero)
        await #expect(throws: CenterError(.stopping, "the daemon is stopping; nothing was changed")) {
            try await before.schedule(spec("later", at(20)))
        }
        // Out after the store closed: nothing can record it, and nothing may fail on that.
        slow.out.update { $0 = true }
        await before.waitForDeliveries()
        h.clock.advance(to: t0 + .seconds(11))
        try await h.restart()
        let history = try await h.center.history(HistoryQuery(key: "tea"))
        #expect(history.filter { $0.kind == .interrupted }.map(\.due) == [t0 + .seconds(10)])
        #expect(await h.center.lookup("later") == nil, "a call refused during the stop changed the schedule")
        #expect(slow.delivered.value == ["tea"], "delivered again after the restart")
    }
}
