import Foundation
import Testing
import TocsinTesting

@Suite("Daemon process: kill -9 and restart")
struct CrashRecoveryTests {
    @Test("scheduled, kill -9 before due, restarted: fires exactly once at its time, and never again")
    func killNine() async throws {
        let due = rfc3339(secondsFromNow: 4)
        let config = """
        [backend.log]
        type = "log"
        format = "json"

        [[notification]]
        key = "once"
        title = "Exactly once"
        at = \(due)
        """
        let d = try DaemonUnderTest(config: config)

        let first = try await d.startAndWait()
        try await first.kill()
        #expect(first.firings(key: "once").isEmpty, "fired before its time")

        let second = try await d.startAndWait(["--log-level", "debug"])
        try await second.waitForOutput(containing: "\"key\":\"once\"", timeout: .seconds(20))
        // Past the at-least-once window: the delivery is recorded before we crash the daemon.
        try await second.waitForStderr(containing: "delivery recorded backend=log key=once", timeout: .seconds(10))
        let fired = second.firings(key: "once")
        #expect(fired.count == 1)
        #expect(fired.first?["due"] as? String == due)
        #expect(fired.first?["late"] as? Bool == false, "fired late: \(fired)")
        try await second.kill()

        // Restarted after the firing was recorded: nothing is delivered again. A graceful stop
        // flushes deliveries in flight, so the output is complete when the process has exited.
        let third = try await d.startAndWait()
        third.signal(SIGTERM)
        let status = try await third.waitForExit(timeout: .seconds(10))
        #expect(status == .exited(0))
        #expect(third.firings(key: "once").isEmpty, "a recorded firing was delivered again: \(third.stdout)")
    }

    @Test("SIGTERM stops the daemon cleanly within 2 seconds")
    func gracefulStop() async throws {
        let d = try DaemonUnderTest(config: "[backend.log]\ntype = \"log\"\n")
        let p = try await d.startAndWait()
        let start = ContinuousClock.now
        p.signal(SIGTERM)
        let status = try await p.waitForExit(timeout: .seconds(10))
        #expect(status == .exited(0))
        #expect(ContinuousClock.now - start < .seconds(2))
    }
}
