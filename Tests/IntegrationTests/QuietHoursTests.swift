import Foundation
import Testing
import TocsinTesting

/// Quiet hours end to end: the real daemon on a private bus, driven by gdbus, busctl and the
/// CLI, watched with `gdbus monitor`, with a restart in the middle on the same SQLite state.
@Suite("Quiet hours over D-Bus, across a restart")
struct QuietHoursTests {
    static let config = """
        [backend.events]
        type = "dbus-signal"

        [backend.log]
        type = "log"
        format = "json"

        [quiet]
        backends = { log = "hold" }
        """

    @Test("QuietOn holds the log's firing while Fired still goes out; held across a restart; tocsin quiet off delivers it once")
    func endToEnd() async throws {
        let bus = try await PrivateBus.start()
        defer { Task { await bus.stop() } }
        let d = try DaemonUnderTest(config: Self.config, environment: bus.environment)
        let first = try d.start(["--bus", bus.address])
        try await first.waitForStderr(containing: "serving the D-Bus API", timeout: .seconds(30))
        let monitor = try TestProcess("gdbus", ["monitor", "--address", bus.address, "-d", GatewayFixture.dest])
        try await monitor.waitForOutput(containing: "name", timeout: TimingBudget.scaled(.seconds(10)))

        func call(_ method: String, _ args: String...) async throws -> TestProcess.Output {
            try await TestProcess.run("gdbus", ["call", "--address", bus.address, "-d", GatewayFixture.dest, "-o", GatewayFixture.path,
                                                "-m", "\(GatewayFixture.iface).\(method)"] + args)
        }

        let on = try await call("QuietOn", "", "")
        #expect(on.status == .exited(0), "\(on.stderrText)")
        #expect(on.stdoutText.contains("'active': <true>"), "\(on.stdoutText)")
        try await monitor.waitForOutput(containing: "QuietChanged (true,", timeout: TimingBudget.scaled(.seconds(10)))
        let property = try await TestProcess.run("busctl", ["--address=\(bus.address)", "get-property", GatewayFixture.dest,
                                                            GatewayFixture.path, GatewayFixture.iface, "Quiet"])
        #expect(property.stdoutText.contains("\"active\" b true"), "\(property.stdoutText)")

        let bad = try await call("QuietOn", "1 parsec", "")
        #expect(bad.stderrText.contains("org.freedesktop.DBus.Error.InvalidArgs"), "\(bad.stderrText)")
        #expect(bad.stderrText.contains("field 'for'"), "\(bad.stderrText)")

        let scheduled = try await call("Schedule", "{'key': <'tea'>, 'title': <'Tea while quiet'>, 'after': <'1s'>}")
        #expect(scheduled.status == .exited(0), "\(scheduled.stderrText)")
        try await monitor.waitForOutput(containing: "Fired ('tea'", timeout: TimingBudget.scaled(.seconds(20)))
        try await first.waitForStderr(containing: "firing held", timeout: TimingBudget.scaled(.seconds(10)))
        #expect(first.firings(key: "tea").isEmpty, "the log delivered during quiet hours: \(first.stdout)")

        first.signal(SIGTERM)
        #expect(try await first.waitForExit(timeout: TimingBudget.scaled(.seconds(10))) == .exited(0))
        let second = try d.start(["--bus", bus.address])
        try await second.waitForStderr(containing: "serving the D-Bus API", timeout: .seconds(30))
        let shown = try await TestProcess.run(Products.executable("tocsin"), ["quiet", "--json", "--bus", bus.address])
        #expect(shown.stdoutText.contains("\"active\":true"), "\(shown.stdoutText) \(shown.stderrText)")
        #expect(shown.stdoutText.contains("\"held\":1"), "\(shown.stdoutText)")
        #expect(second.firings(key: "tea").isEmpty, "the restart delivered the held firing")

        let badCLI = try await TestProcess.run(Products.executable("tocsin"), ["quiet", "on", "--for", "1 parsec", "--bus", bus.address])
        #expect(badCLI.status == .exited(1))
        #expect(badCLI.stderrText.hasPrefix("error: field 'for': unknown time unit 'parsec'"), "\(badCLI.stderrText)")

        let off = try await TestProcess.run(Products.executable("tocsin"), ["quiet", "off", "--bus", bus.address])
        #expect(off.status == .exited(0), "\(off.stderrText)")
        #expect(off.stdoutText.hasPrefix("quiet: off; 0 held"), "\(off.stdoutText)")
        try await second.waitForOutput(containing: "\"key\":\"tea\"", timeout: TimingBudget.scaled(.seconds(10)))
        try await monitor.waitForOutput(containing: "QuietChanged (false,", timeout: TimingBudget.scaled(.seconds(10)))
        second.signal(SIGTERM)
        #expect(try await second.waitForExit(timeout: TimingBudget.scaled(.seconds(10))) == .exited(0))
        #expect(second.firings(key: "tea").count == 1)
        #expect(second.firings(key: "tea").first?["reason"] as? String == "quiet-ended")

        let third = try d.start(["--bus", bus.address])
        try await third.waitForStderr(containing: "serving the D-Bus API", timeout: .seconds(30))
        third.signal(SIGTERM)
        #expect(try await third.waitForExit(timeout: TimingBudget.scaled(.seconds(10))) == .exited(0))
        #expect(third.firings(key: "tea").isEmpty, "a released firing was delivered again: \(third.stdout)")
        _ = try await monitor.kill()
        await bus.stop()
    }

    @Test("tocsin check names a [[quiet.window]] zone that does not exist at file:line:column; exit 1")
    func checkUnknownZone() async throws {
        let dir = TemporaryDirectory()
        let path = try dir.write("quiet.toml", """
            [[quiet.window]]
            on_calendar = "Mon..Fri 22:00"
            duration = "9h"
            timezone = "Mars/Olympus_Mons"
            """)
        let out = try await TestProcess.run(Products.executable("tocsin"), ["check", path])
        #expect(out.status == .exited(1))
        #expect(out.stderrText.hasPrefix("\(path):4:12: error: unknown time zone 'Mars/Olympus_Mons' in [[quiet.window]] #1 'timezone'"), "\(out.stderrText)")
    }
}
