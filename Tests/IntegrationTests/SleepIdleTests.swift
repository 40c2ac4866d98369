import Foundation
import Testing
import TocsinTesting

/// Sleep and wake add no idle wake-up: the system-bus connection to logind sits on the same epoll
/// loop, the inhibitor is a descriptor nobody polls, and the `CLOCK_REALTIME_ALARM` timerfd is
/// armed but never read.
@Suite("Idle wake-ups with sleep watched", .serialized)
struct SleepIdleTests {
    @Test("an idle daemon watching logind, holding its inhibitor and with a wake alarm armed makes no wake-ups in 60 s",
          .timeLimit(.minutes(4)))
    func idleWhileWatching() async throws {
        let logind = try await MockLogind.start()
        do {
            try await withGateway(config: IdleWakeupTests.config, environment: ["DBUS_SYSTEM_BUS_ADDRESS": logind.bus.address]) { g in
                try await g.process.waitForStderr(containing: "watching logind for sleep", timeout: .seconds(30))
                let scheduled = try await g.tocsin("schedule", "--key", "wake", "--title", "Up", "--after", "30d", "--wake")
                #expect(scheduled.status == .exited(0), "\(scheduled.stderrText)")
                let status = try await g.tocsin("status", "--json").stdoutText
                #expect(status.contains("\"wake_armed\""), "the alarm timer is armed: \(status)")
                #expect(status.contains("delay inhibitor held"), "\(status)")

                let window = try await IdleWakeupTests.measure(pid: g.process.pid)
                print("measured: \(window.total) context switches in 60 s while watching logind with a wake alarm armed")
                #expect(window.total <= 1, "\(window.total) context switches in 60 s: \(window.perThread)")
                #expect(window.bornThreads.isEmpty, "threads born while idle: \(window.bornThreads)")
            }
        } catch {
            await logind.stop()
            throw error
        }
        await logind.stop()
    }
}
