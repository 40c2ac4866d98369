import Foundation
import Testing
import TocsinTesting

/// The idle-wakeup guarantee with the mqtt backend and `[fleet]` configured and connected:
/// libmosquitto's network thread sleeps in its poll until the keepalive is due, so an idle
/// daemon wakes once per `keepalive` (a PINGREQ), and not at all within a window shorter than it.
@Suite("Fleet idle wake-ups", .serialized)
struct FleetIdleTests {
    @Test("an idle daemon connected to a broker (keepalive 1h) makes no wake-ups in 60 s", .timeLimit(.minutes(4)))
    func idle() async throws {
        let broker = try await MosquittoBroker.start()
        let config = """
            [backend.events]
            type = "dbus-signal"

            [backend.fleet]
            type = "mqtt"
            url = "\(broker.url)"
            client_id = "idle"
            keepalive = "1h"

            [fleet]
            backend = "fleet"
            """
        do {
            try await withGateway(config: config) { g in
                try await g.process.waitForStderr(containing: "mqtt fleet: connected", timeout: .seconds(30))
                // The subscription is sent with the connect; what follows is the measured window.
                let window = try await IdleWakeupTests.measure(pid: g.process.pid)
                #expect(window.total <= 1, "\(window.total) context switches in 60 s: \(window.perThread)")
                #expect(window.bornThreads.isEmpty, "threads born while idle: \(window.bornThreads)")
                #expect(window.threadNames.contains { $0.hasPrefix("mosquitto") }, "no libmosquitto network thread: \(window.threadNames)")
            }
        } catch {
            await broker.stop()
            throw error
        }
        await broker.stop()
    }
}
