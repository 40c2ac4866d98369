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
        var ringPolicy: RingPolicy? { nil }
        var quietMode: QuietMode { .deliver }
        func start(events: any BackendEventSink) async {}
        func deliver(_ firing: Firing) async throws(DeliveryError) { delivered.update { $0.append(firing.key) } }
        func deliver(batch: [Firing]) -> BatchHandOff {
            delivered.update { $0 += batch.map(\.key) }
            let out = out
            return BatchHandOff(errors: batch.map { _ in nil }, departure: {
                _ = try? await out.wait("the test to let the hand-off out", timeout: .seconds(60)) { $0 }
            })
        }
        func withdraw(key: String, reason: WithdrawReason) async {}
        func shutdown() async {}
        func health() async -> BackendHealth { .ok }
    }

    struct Row: CustomTestStringConvertible, Sendable {
        let name: String
        let outBeforeTheCrash: Bool
        let interrupted: Bool
        var testDescription: String { name }
    }

    static let rows = [
        Row(name: "still in the process at the crash: reported interrupted", outBeforeTheCrash: false, interrupted: true),
        Row(name: "out before the crash: recorded as delivered, not reported", outBeforeTheCrash: true, interrupted: false),
    ]

    @Test("a crash after the hand-off", arguments: rows)
    func crashAfterTheHandOff(_ row: Row) async throws {
        let slow = Slow()
        let h = try await Harness(backends: [], others: [slow])
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
        h.clock.advance(to: t0 + .seconds(11))
        try await h.restart()
        let history = try await h.center.history(HistoryQuery(key: "tea"))
        let interrupted = history.filter { $0.kind == .interrupted }.map(\.due)
        #expect(interrupted == (row.interrupted ? [t0 + .seconds(10)] : []), "row \(row.name)")
        #expect(slow.delivered.value == ["tea"], "row \(row.name): delivered again after the restart")
        // The crashed center's hand-off ends with the test, before its state directory goes.
        slow.out.update { $0 = true }
        await before.waitForDeliveries()
    }
}
