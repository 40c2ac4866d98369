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
                // Settle: a measurement window, not synchronisation (the subscription is sent with the connect).
                try await Task.sleep(for: .seconds(2))
                let pid = g.process.pid
                let before = IdleWakeupTests.switches(of: pid)
                var last = before
                // As in IdleWakeupTests: under ThreadSanitizer its runtime's own thread (parked in
                // nanosleep, waking ten times a second) is left out, and only then.
                let underTSan = ProcessInfo.processInfo.environment["TSAN_OPTIONS"] != nil
                var sanitizerThreads = Set<String>()
                let end = ContinuousClock.now + .seconds(60)
                while ContinuousClock.now < end {
                    try await Task.sleep(for: .milliseconds(100))
                    for (tid, sample) in IdleWakeupTests.switches(of: pid) { last[tid] = sample }
                    if underTSan { sanitizerThreads.formUnion(IdleWakeupTests.sleepers(of: pid)) }
                }
                let perThread = last.filter { !sanitizerThreads.contains($0.key) }
                    .map { tid, s in (tid, s.comm, s.count - (before[tid]?.count ?? 0)) }.filter { $0.2 > 0 }
                let total = perThread.reduce(0) { $0 + $1.2 }
                #expect(total <= 1, "\(total) context switches in 60 s: \(perThread.map { "\($0.1)[\($0.0)]=\($0.2)" })")
                #expect(last.count == before.count, "threads born while idle: \(Set(last.keys).subtracting(before.keys))")
                #expect(last.values.contains { $0.comm.hasPrefix("mosquitto") }, "no libmosquitto network thread: \(last.values.map(\.comm))")
            }
        } catch {
            await broker.stop()
            throw error
        }
        await broker.stop()
    }
}
