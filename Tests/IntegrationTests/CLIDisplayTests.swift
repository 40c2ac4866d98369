import Foundation
import Glibc
import Testing
import TocsinTesting

/// What a person sees: `list`, `status`, `watch` and `check` through the built binary, in a
/// fixed zone (TZ) so the local rendering is checked exactly where it can be.
@Suite("tocsin output for people: list, status, watch, check")
struct CLIDisplayTests {
    /// No DST, an abbreviation that differs from UTC and a half-hour offset: a wrong zone shows.
    static let zone = ["TZ": "Asia/Kolkata"]
    static let config = """
        [backend.events]
        type = "dbus-signal"

        [backend.log]
        type = "log"

        [backend.desktop]
        type = "libnotify"
        """

    static func tocsin(_ g: GatewayFixture, _ args: String...) async throws -> TestProcess.Output {
        try await TestProcess.run(Products.executable("tocsin"), args + ["--bus", g.bus.address], environment: zone)
    }

    @Test("list: local NEXT/LEFT/LAST/PASSED to the second, --utc, and --json unchanged; watch uses the same times")
    func listAndWatch() async throws {
        try await withGateway(config: Self.config) { g in
            // `watch` says nothing once it has subscribed, but the bus shows its AddMatch to a
            // monitor as it installs the rule: the firing below cannot come before it.
            let monitor = try TestProcess("dbus-monitor", ["--address", g.bus.address, "type='method_call',member='AddMatch'"])
            _ = try await monitor.waitForOutput(containing: "NameAcquired", timeout: .seconds(20))
            let watch = try TestProcess(Products.executable("tocsin"), ["watch", "--bus", g.bus.address], environment: Self.zone)
            _ = try await monitor.waitForOutput(containing: "interface='io.github.tocsin.Gateway1',path='/io/github/tocsin/Gateway'",
                                                timeout: .seconds(20))
            _ = try? await monitor.kill()
            var s = try await Self.tocsin(g, "schedule", "--key", "far", "--title", "Far away", "--at", "2030-01-01T00:00:00Z")
            #expect(s.status == .exited(0), "\(s.stderrText)")
            // Fires in a second, then hourly: after the first firing it has both a LAST and a NEXT.
            s = try await Self.tocsin(g, "schedule", "--key", "tick", "--title", "Tick", "--every", "1h", "--starting", "+1s")
            #expect(s.status == .exited(0), "\(s.stderrText)")
            let events = try await watch.waitForOutput(containing: "Fired tick", timeout: .seconds(20))
            _ = try await watch.kill()
            let fired = try #require(events.split(separator: "\n").first { $0.hasPrefix("Fired tick") }.map(String.init))
            #expect(fired.contains(#/ due="[A-Z][a-z]{2} \d{4}-\d\d-\d\d \d\d:\d\d:\d\d IST \((now|\d+s ago)\)"/#), "watch line: \(fired)")

            let list = try await Self.tocsin(g, "list")
            #expect(list.status == .exited(0), "\(list.stderrText)")
            let lines = list.stdoutText.split(separator: "\n").map(String.init)
            try #require(lines.count == 3, "list: \(list.stdoutText)")
            #expect(lines[0].contains(#/^NEXT +LEFT +LAST +PASSED +KEY +STATE +TRIGGER +TITLE$/#), "header: \(lines[0])")
            // Soonest first: tick (within the hour), then far.
            #expect(lines[1].contains(#/^[A-Z][a-z]{2} \S+ \S+ IST +(59min|1h)\S* .*left +[A-Z][a-z]{2} \S+ \S+ IST +(now|\d+s ago) +tick +scheduled +every 1h from [A-Z][a-z]{2} \S+ \S+ IST +Tick$/#),
                    "tick row: \(lines[1])")
            #expect(lines[2].contains(#/^Tue 2030-01-01 05:30:00 IST +\d+ years? \d+ months? left +- +- +far +scheduled +at Tue 2030-01-01 05:30:00 IST +Far away$/#),
                    "far row: \(lines[2])")
            #expect(!list.stdoutText.contains(#/\d\d:\d\d:\d\d\.\d|\dT\d\d:/#), "no RFC 3339 or sub-second instants: \(list.stdoutText)")

            let utc = try await Self.tocsin(g, "list", "--utc")
            let far = try #require(utc.stdoutText.split(separator: "\n").last.map(String.init))
            #expect(far.hasPrefix("Tue 2030-01-01 00:00:00 UTC "), "--utc row: \(far)")
            #expect(!utc.stdoutText.contains("IST"), "--utc: \(utc.stdoutText)")

            let json = try await Self.tocsin(g, "list", "--json")
            let items = try #require(try JSONSerialization.jsonObject(with: Data(json.stdoutText.utf8)) as? [[String: Any]])
            let byKey = Dictionary(uniqueKeysWithValues: items.compactMap { i in (i["key"] as? String).map { ($0, i) } })
            #expect(byKey["far"]?["next_fire"] as? Int64 == 1_893_456_000_000_000, "far: \(json.stdoutText)")
            #expect(byKey["far"]?["last_fire"] == nil)
            let last = try #require(byKey["tick"]?["last_fire"] as? Int64, "tick has a last_fire: \(json.stdoutText)")
            let next = try #require(byKey["tick"]?["next_fire"] as? Int64)
            #expect(next - last == 3_600_000_000)
        }
    }

    @Test("status: pid, uptime, config, backends' health, pending and next; --json")
    func status() async throws {
        try await withGateway(config: Self.config) { g in
            _ = try await Self.tocsin(g, "schedule", "--key", "soon", "--title", "Soon", "--after", "2h")
            _ = try await Self.tocsin(g, "schedule", "--key", "later", "--title", "Later", "--after", "3h")
            let text = try await Self.tocsin(g, "status")
            #expect(text.status == .exited(0), "\(text.stderrText)")
            let out = text.stdoutText
            // Each line as a pattern; local times are `Tue 2030-01-01 05:30:00 IST` (weekday, date, time, zone).
            let time = #"[A-Z][a-z]{2} \S+ \S+ IST"#
            let expected: [(String, String)] = [
                ("headline", #"^Tocsin daemon: running$"#),
                ("pid", "^ +PID: \(g.process.pid)$"),
                ("uptime", #"^ +Uptime: (0s|\d+s|\d+min \d+s) \(since "# + time + #"\)$"#),
                ("config", "^ +Config: \(NSRegularExpression.escapedPattern(for: g.daemon.configPath))$"),
                ("pending", #"^ +Pending: 2 notifications$"#),
                ("next", "^ +Next: " + time + #" \((1h 59min|2h 0min) left\): soon$"#),
                ("first backend", #"^ +Backends: events: ok$"#),
                ("log backend", #"^ +log: ok$"#),
                ("desktop backend", #"^ +desktop: no notification server$"#),
            ]
            let lines = out.split(separator: "\n").map(String.init)
            for (name, pattern) in expected {
                let regex = try Regex(pattern)
                #expect(lines.contains { $0.contains(regex) }, "status line '\(name)' (\(pattern)) missing in:\n\(out)")
            }

            let json = try await Self.tocsin(g, "status", "--json")
            let object = try #require(try JSONSerialization.jsonObject(with: Data(json.stdoutText.utf8)) as? [String: Any], "\(json.stdoutText)")
            #expect(object["pid"] as? Int == Int(g.process.pid))
            #expect(object["pending"] as? Int == 2)
            #expect(object["next_key"] as? String == "soon")
            #expect(object["config"] as? String == g.daemon.configPath)
            #expect((object["started"] as? Int64).map { $0 > 1_700_000_000_000_000 } == true, "started: \(json.stdoutText)")
            #expect(object["backends"] as? [String: String] == ["events": "ok", "log": "ok", "desktop": "no notification server"])

            // Health is asked when status is, not remembered: a server that appears shows at once.
            let server = try await NotificationServer.mock(bus: g.bus, capabilities: "body actions")
            let healthy = try await Self.tocsin(g, "status", "--json")
            await server.stop()
            let after = try #require(try JSONSerialization.jsonObject(with: Data(healthy.stdoutText.utf8)) as? [String: Any], "\(healthy.stdoutText)")
            #expect((after["backends"] as? [String: String])?["desktop"] == "ok", "with a server: \(healthy.stdoutText)")
        }
    }

    @Test("status and list without a daemon: how to start it, no bare bus error")
    func noDaemon() async throws {
        let bus = try await PrivateBus.start()
        for command in ["status", "list", "cancel --all"] {
            let out = try await TestProcess.run(Products.executable("tocsin"), command.split(separator: " ").map(String.init) + ["--bus", bus.address])
            #expect(out.status == .exited(1), "\(command)")
            #expect(out.stderrText.contains("the Tocsin daemon is not running on \(bus.address); start it with 'tocsin daemon' or 'systemctl --user start tocsin'"),
                    "\(command): \(out.stderrText)")
        }
        // watch may wait for a daemon started later, but says once that there is none yet.
        let watch = try TestProcess(Products.executable("tocsin"), ["watch", "--bus", bus.address])
        try await watch.waitForStderr(containing: "note: the Tocsin daemon is not running on \(bus.address) yet; start it with 'tocsin daemon'",
                                      timeout: .seconds(20))
        _ = try await watch.kill()
        await bus.stop()
    }

    @Test("check on a huge config reports progress on stderr once it takes more than a second; stdout stays the result")
    func checkProgress() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("tocsin-check-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        var text = "[backend.log]\ntype = \"log\"\n"
        for i in 0..<40_000 {
            text += "[[notification]]\nkey = \"n\(i)\"\ntitle = \"Notification \(i)\"\non_calendar = \"*-*-* \(i % 24):\(i % 60):00\"\n"
        }
        let file = dir.appendingPathComponent("huge.toml").path
        try text.write(toFile: file, atomically: true, encoding: .utf8)
        let began = ContinuousClock.now
        let out = try await TestProcess.run(Products.executable("tocsin"), ["check", file], timeout: .seconds(120))
        let took = ContinuousClock.now - began
        #expect(out.status == .exited(0), "\(out.stderrText)")
        #expect(out.stdoutText == "ok: 1 backend, 40000 notifications\n")
        try #require(took > .milliseconds(1500), "the config must take over a second to check for this test to mean anything (took \(took))")
        #expect(out.stderrText.contains(#/^checking \S+huge\.toml: (reading and decoding|checking backends, zones and 40000 notifications) \(1 s\)$/#.anchorsMatchLineEndings()),
                "stderr: \(out.stderrText.prefix(500))")
    }

    @Test("check on a small config prints no progress")
    func checkQuiet() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("tocsin-check-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("small.toml").path
        try "[backend.log]\ntype = \"log\"\n".write(toFile: file, atomically: true, encoding: .utf8)
        let out = try await TestProcess.run(Products.executable("tocsin"), ["check", file])
        #expect(out.stdoutText == "ok: 1 backend, 0 notifications\n")
        #expect(out.stderrText == "")
    }
}
