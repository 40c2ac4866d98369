import Foundation
import Testing
import TocsinTesting

@Suite("Daemon process: kill -9 and restart")
struct CrashRecoveryTests {
    @Test("scheduled over D-Bus, kill -9 before due, restarted: fires exactly once at its time, and never again")
    func killNine() async throws {
        let bus = try await PrivateBus.start()
        defer { Task { await bus.stop() } }
        let d = try DaemonUnderTest(config: "[backend.log]\ntype = \"log\"\nformat = \"json\"\n", environment: bus.environment)

        let first = try d.start(["--bus", bus.address])
        try await first.waitForStderr(containing: "serving the D-Bus API", timeout: .seconds(30))
        // Time for the kill and a restart before it is due, also for a daemon under a sanitizer.
        let ahead = Int((5 * min(TimingBudget.scale, 3)).rounded(.up))
        let due = rfc3339(secondsFromNow: ahead)
        let reply = try await TestProcess.run("gdbus", ["call", "--address", bus.address, "-d", GatewayFixture.dest, "-o", GatewayFixture.path,
                                                        "-m", "\(GatewayFixture.iface).Schedule", "{'key': <'once'>, 'title': <'Exactly once'>, 'at': <'\(due)'>}"])
        #expect(reply.status == .exited(0), "\(reply.stderrText)")
        // The reply means durable: crash at once.
        try await first.kill()
        #expect(first.firings(key: "once").isEmpty, "fired before its time (the machine took over 5 s to reach kill -9)")

        let second = try d.start(["--bus", bus.address, "--log-level", "debug"])
        try await second.waitForOutput(containing: "\"key\":\"once\"", timeout: .seconds(20 + ahead))
        let fired = second.firings(key: "once")
        #expect(fired.count == 1)
        #expect(fired.first?["due"] as? String == due)
        #expect(fired.first?["late"] as? Bool == false, "fired late: \(fired)")
        // Past the at-least-once window: the delivery is recorded before we crash the daemon.
        try await second.waitForStderr(containing: "delivery recorded backend=log key=once", timeout: .seconds(10))
        try await second.kill()

        // Restarted after the firing was recorded: nothing is delivered again. A graceful stop
        // flushes deliveries in flight, so the output is complete when the process has exited.
        let third = try d.start(["--bus", bus.address])
        try await third.waitForStderr(containing: "serving the D-Bus API", timeout: .seconds(30))
        third.signal(SIGTERM)
        let status = try await third.waitForExit(timeout: .seconds(10))
        #expect(status == .exited(0))
        #expect(third.firings(key: "once").isEmpty, "a recorded firing was delivered again: \(third.stdout)")
        await bus.stop()
    }

    @Test("SIGTERM stops the daemon cleanly within 2 seconds")
    func gracefulStop() async throws {
        let d = try DaemonUnderTest(config: "[backend.log]\ntype = \"log\"\n")
        let p = try await d.startAndWait()
        let start = ContinuousClock.now
        p.signal(SIGTERM)
        let status = try await p.waitForExit(timeout: .seconds(10))
        #expect(status == .exited(0))
        #expect(ContinuousClock.now - start < TimingBudget.scaled(.seconds(2)))
    }
}
