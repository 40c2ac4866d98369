import Foundation
import Testing
import TocsinTesting
import TocsinTime

/// The real `tocsin daemon` and its `CLOCK_REALTIME_ALARM` timerfd: armed for the earliest wake
/// notification as the kernel reads it back (`timerfd_gettime`, shown by `Status`), and the
/// fallback when the kernel refuses the timer, as `capsh --drop=cap_wake_alarm` makes it do.
@Suite("Wake-alarm timer")
struct WakeTimerTests {
    struct Row: Sendable, CustomTestStringConvertible {
        var name: String
        /// Run before the daemon (a capability dropped).
        var prefix: [String]
        var daemonSection: String
        /// What `Status`'s `wake` says.
        var wake: String
        /// Whether the kernel holds an armed timer.
        var arms: Bool
        var testDescription: String { name }
    }

    static let capsh = ["capsh", "--drop=cap_wake_alarm", "--", "-c", "exec \"$0\" \"$@\""]

    static let rows: [Row] = [
        Row(name: "with CAP_WAKE_ALARM (root)", prefix: [], daemonSection: "", wake: "available", arms: true),
        Row(name: "without CAP_WAKE_ALARM (capsh --drop)", prefix: capsh, daemonSection: "",
            wake: "unavailable: no CAP_WAKE_ALARM; see \"Sleep and wake\"", arms: false),
        Row(name: "[daemon] wake_alarms = false", prefix: [], daemonSection: "[daemon]\nwake_alarms = false\n",
            wake: "off ([daemon] wake_alarms = false)", arms: false),
    ]

    static func config(_ row: Row) -> String { row.daemonSection + "\n" + GatewayFixture.defaultConfig }

    /// `Status` as `tocsin status --json` prints it.
    static func status(_ g: Fixture) async throws -> [String: Any] {
        let out = try await g.tocsin("status", "--json")
        let object = try JSONSerialization.jsonObject(with: Data(out.stdoutText.utf8)) as? [String: Any]
        return object ?? [:]
    }

    /// The kernel's armed instant against the one asked for: read back as the remaining time plus
    /// the clock, so they agree to the time between those two reads.
    /// The kernel's timer goes off 30 s before the firing (`TocsinCenter.wakeMargin`): resuming takes seconds.
    static func armed(_ s: [String: Any], near firing: Int64) -> Bool {
        guard let armed = (s["wake_armed"] as? NSNumber)?.int64Value else { return false }
        return abs(armed - (firing - 30) * 1_000_000) < 1_000_000
    }

    /// A private bus and the daemon under `row.prefix`, its log in stderr.
    final class Fixture: Sendable {
        let bus: PrivateBus
        let daemon: DaemonUnderTest
        let process: TestProcess
        init(_ row: Row) async throws {
            bus = try await PrivateBus.start()
            daemon = try DaemonUnderTest(config: WakeTimerTests.config(row), environment: bus.environment)
            let argv = row.prefix + [Products.executable("tocsin"), "daemon", "--config", daemon.configPath,
                                     "--state-dir", daemon.stateDirectory, "--bus", bus.address]
            process = try TestProcess(argv[0], Array(argv.dropFirst()), environment: daemon.environment)
            try await process.waitForStderr(containing: "started", timeout: .seconds(30))
        }
        func tocsin(_ args: String...) async throws -> TestProcess.Output {
            try await TestProcess.run(Products.executable("tocsin"), args + ["--bus", bus.address])
        }
        func stop() async {
            process.signal(SIGTERM)
            _ = try? await process.waitForExit(timeout: .seconds(10))
            await bus.stop()
        }
    }

    @Test("armed for the earliest wake notification, re-armed when it changes, or the reason it cannot be", arguments: rows)
    func armsAndFallsBack(row: Row) async throws {
        let g = try await Fixture(row)
        do {
            let now = Int64(Date().timeIntervalSince1970)
            let later = now + 7200, sooner = now + 3600
            _ = try await g.tocsin("schedule", "--key", "later", "--title", "L", "--at", "@\(later)", "--wake")
            var s = try await Self.status(g)
            #expect((s["wake"] as? String)?.hasPrefix(row.wake) == true, "\(row.name): \(s["wake"] ?? "none")")
            #expect((s["wake_next"] as? NSNumber)?.int64Value == later * 1_000_000, "\(row.name)")
            #expect(Self.armed(s, near: later) == row.arms, "\(row.name): \(s)")

            _ = try await g.tocsin("schedule", "--key", "sooner", "--title", "S", "--at", "@\(sooner)", "--wake")
            _ = try await g.tocsin("schedule", "--key", "plain", "--title", "P", "--at", "@\(now + 1800)")
            s = try await Self.status(g)
            #expect(s["wake_next_key"] as? String == "sooner", "\(row.name)")
            #expect(Self.armed(s, near: sooner) == row.arms, "\(row.name): scheduling an earlier wake re-arms: \(s)")

            _ = try await g.tocsin("cancel", "sooner")
            s = try await Self.status(g)
            #expect(Self.armed(s, near: later) == row.arms, "\(row.name): cancelling it re-arms for the next: \(s)")
            _ = try await g.tocsin("cancel", "later")
            s = try await Self.status(g)
            #expect(s["wake_next"] == nil && s["wake_armed"] == nil, "\(row.name): nothing to wake for: \(s)")

            let list = try await g.tocsin("list")
            #expect(!list.stdoutText.contains("+wake"), "\(row.name): \(list.stdoutText)")
            _ = try await g.tocsin("schedule", "--key", "marked", "--title", "M", "--after", "1h", "--wake")
            #expect(try await g.tocsin("list").stdoutText.contains("scheduled+wake"), "\(row.name): list marks wake notifications")

            // Whatever the kernel says, the notification fires once the machine is awake.
            _ = try await g.tocsin("schedule", "--key", "fires", "--title", "F", "--after", "1s", "--wake", "--backend", "log")
            _ = try await g.process.waitForOutput(containing: "\"key\":\"fires\"", timeout: .seconds(30))
            let reported = g.process.stderr.components(separatedBy: "wake alarms unavailable").count - 1
            #expect(reported == (row.wake.hasPrefix("unavailable") ? 1 : 0), "\(row.name): the reason is logged once")
            // The test's system bus (the private session bus) has no logind: sleep is not watched,
            // said once, and nothing else changed above.
            #expect((s["sleep"] as? String)?.hasPrefix("off: logind is not reachable") == true, "\(row.name): \(s["sleep"] ?? "none")")
            #expect(g.process.stderr.components(separatedBy: "sleep and resume are not watched").count == 2, "\(row.name): said once")
        } catch {
            await g.stop()
            throw error
        }
        await g.stop()
    }

    @Test("Schedule with a wake that is not a boolean is InvalidArgs naming the field; nothing is scheduled")
    func badWakeOverDBus() async throws {
        try await withGateway { g in
            let out = try await g.gdbus("Schedule", "{'title': <'Up'>, 'after': <'1h'>, 'wake': <'yes'>}")
            #expect(out.status != .exited(0))
            #expect(out.stderrText.contains("InvalidArgs") && out.stderrText.contains("'wake'"), "\(out.stderrText)")
            #expect(try await g.isHealthy())
            #expect(try await g.gdbus("List").stdoutText.contains("[]"), "nothing is scheduled")
        }
    }

    @Test("tocsin check says whether wake notifications can wake the machine, and refuses nothing")
    func check() async throws {
        let dir = TemporaryDirectory(prefix: "tocsin-wake-check")
        let path = try dir.write("config.toml", "[[notification]]\ntitle = \"Up\"\non_calendar = \"07:00\"\nwake = true\n")
        let root = try await TestProcess.run(Products.executable("tocsin"), ["check", path])
        #expect(root.status == .exited(0) && root.stdoutText.contains("wake: available"), "\(root.stdoutText) \(root.stderrText)")
        let dropped = try await TestProcess.run(Self.capsh[0], Array(Self.capsh.dropFirst()) + [Products.executable("tocsin"), "check", path])
        #expect(dropped.status == .exited(0), "\(dropped.stderrText)")
        #expect(dropped.stdoutText.contains("wake: unavailable: no CAP_WAKE_ALARM"), "\(dropped.stdoutText)")
    }
}
