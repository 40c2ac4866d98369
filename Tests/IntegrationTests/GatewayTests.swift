import Foundation
import Testing
import TocsinTesting

@Suite("D-Bus gateway, driven by clients we did not write")
struct GatewayTests {
    @Test("Schedule via gdbus returns a key; a subscriber gets Fired within 50 ms of due; List before, not after")
    func acceptance() async throws {
        try await withGateway { g in
            let watcher = try TestProcess("/usr/bin/python3", [GatewayFixture.repositoryRoot + "/contrib/clients/watch-fired.py",
                                                               "--address", g.bus.address])
            try await watcher.waitForOutput(containing: "\"ready\"", timeout: .seconds(20))

            // Far enough ahead that the List below always comes first, also under a sanitizer.
            let ahead = Int((2 * min(TimingBudget.scale, 3)).rounded(.up))
            let reply = try await g.gdbus("Schedule", "{'title': <'Tea'>, 'after': <'\(ahead)s'>}")
            #expect(reply.status == .exited(0), "\(reply.stderrText)")
            let key = reply.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines)
                .trimmingCharacters(in: CharacterSet(charactersIn: "(),'"))
            #expect(!key.isEmpty)
            #expect(try await g.gdbus("List").stdoutText.contains("'\(key)'"))

            let out = try await watcher.waitForOutput(containing: "\"Fired\"", timeout: .seconds(20 + ahead))
            let line = try #require(out.split(separator: "\n").first { $0.contains("\"Fired\"") })
            let event = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            let args = try #require(event["args"] as? [Any])
            #expect(args.first as? String == key)
            let info = try #require(args.last as? [String: Any])
            let due = try #require(info["due"] as? Int)
            let received = try #require(event["received_us"] as? Int)
            print("measured: Fired received \(received - due) us after due")
            #expect(received - due >= 0, "Fired arrived before its due time")
            #expect(received - due <= TimingBudget.scaled(50_000), "Fired arrived \(received - due) us after due")
            #expect(info["title"] as? String == "Tea")
            #expect(info["occurrence"] as? Int == 1)
            #expect(!(try await g.gdbus("List").stdoutText.contains("'\(key)'")))
            _ = try await watcher.kill()
        }
    }

    struct BadCall: Sendable, CustomTestStringConvertible {
        var name: String
        var tool: [String]
        var errorName: String
        var message: String
        var testDescription: String { name }
    }

    static let d = GatewayFixture.dest, p = GatewayFixture.path, i = GatewayFixture.iface
    static let badCalls: [BadCall] = [
        BadCall(name: "unknown method", tool: ["gdbus", "\(i).Nope"], errorName: "org.freedesktop.DBus.Error.UnknownMethod", message: "Nope"),
        BadCall(name: "wrong signature", tool: ["dbus-send", "\(i).Schedule", "string:x"],
                errorName: "org.freedesktop.DBus.Error.InvalidArgs", message: "expects arguments 'a{sv}', got 's'"),
        BadCall(name: "wrong variant type", tool: ["gdbus", "\(i).Schedule", "{'title': <5>, 'after': <'2s'>}"],
                errorName: "org.freedesktop.DBus.Error.InvalidArgs", message: "'title' in the notification spec must be a string, found integer"),
        BadCall(name: "bad duration", tool: ["gdbus", "\(i).Schedule", "{'title': <'x'>, 'after': <'soon'>}"],
                errorName: "org.freedesktop.DBus.Error.InvalidArgs", message: "invalid 'after'"),
        BadCall(name: "zero interval", tool: ["gdbus", "\(i).Schedule", "{'title': <'x'>, 'every': <'0s'>}"],
                errorName: "org.freedesktop.DBus.Error.InvalidArgs", message: "invalid 'every': the interval must be longer than zero"),
        BadCall(name: "bad time (systemd refuses it too)", tool: ["gdbus", "\(i).Schedule", "{'title': <'x'>, 'at': <'tomorrow 07:30'>}"],
                errorName: "org.freedesktop.DBus.Error.InvalidArgs", message: "invalid 'at': expected a date (2026-12-24), a date and time"),
        BadCall(name: "past time", tool: ["gdbus", "\(i).Schedule", "{'title': <'x'>, 'at': <'@1'>}"],
                errorName: "io.github.tocsin.Error.InvalidTrigger", message: "in the past"),
        BadCall(name: "unknown backend", tool: ["gdbus", "\(i).Schedule", "{'title': <'x'>, 'after': <'1h'>, 'backends': <['lgo']>}"],
                errorName: "io.github.tocsin.Error.UnknownBackend", message: "unknown backend 'lgo'; did you mean 'log'?"),
        BadCall(name: "unknown field", tool: ["gdbus", "\(i).Schedule", "{'titel': <'x'>, 'after': <'1h'>}"],
                errorName: "org.freedesktop.DBus.Error.InvalidArgs", message: "unknown key 'titel' in the notification spec; did you mean 'title'?"),
        BadCall(name: "two triggers", tool: ["gdbus", "\(i).Schedule", "{'title': <'x'>, 'after': <'1h'>, 'every': <'1h'>}"],
                errorName: "org.freedesktop.DBus.Error.InvalidArgs", message: "two triggers, 'after' and 'every'"),
        BadCall(name: "unsupported variant", tool: ["gdbus", "\(i).Schedule", "{'title': <'x'>, 'after': <('1h', 1)>}"],
                errorName: "org.freedesktop.DBus.Error.InvalidArgs", message: "'after' in the notification spec must be a string, found D-Bus type '(si)'"),
        BadCall(name: "action label not a string", tool: ["gdbus", "\(i).Schedule", "{'title': <'x'>, 'after': <'1h'>, 'actions': <{'ok': <5>}>}"],
                errorName: "org.freedesktop.DBus.Error.InvalidArgs", message: "'actions.ok' must be a string, found integer"),
        BadCall(name: "more entries than fields", tool: ["gdbus", "\(i).Schedule", "{" + (0..<65).map { "'k\($0)': <'x'>" }.joined(separator: ", ") + "}"],
                errorName: "org.freedesktop.DBus.Error.InvalidArgs", message: "the spec has 65 entries; a notification has at most 64"),
        BadCall(name: "cancel with a number", tool: ["busctl", "Cancel", "u", "5"],
                errorName: "org.freedesktop.DBus.Error.InvalidArgs", message: "expects arguments 's', got 'u'"),
        BadCall(name: "snooze an unknown key", tool: ["gdbus", "\(i).Snooze", "nope", "5min"],
                errorName: "io.github.tocsin.Error.NotFound", message: "no notification with key 'nope'"),
        BadCall(name: "snooze with a bad duration", tool: ["gdbus", "\(i).Snooze", "nope", "0"],
                errorName: "org.freedesktop.DBus.Error.InvalidArgs", message: "argument 'duration'"),
        BadCall(name: "unknown span unit, named with the valid ones and its column",
                tool: ["gdbus", "\(i).Schedule", "{'title': <'x'>, 'after': <'5 parsecs'>}"],
                errorName: "org.freedesktop.DBus.Error.InvalidArgs",
                message: "invalid 'after': unknown time unit 'parsecs' (expected us, ms, s, min, h, d, w, M, y) (column 3 of the value)"),
        BadCall(name: "snooze with an unknown span unit", tool: ["gdbus", "\(i).Snooze", "nope", "5 parsecs"],
                errorName: "org.freedesktop.DBus.Error.InvalidArgs",
                message: "argument 'duration': unknown time unit 'parsecs' (expected us, ms, s, min, h, d, w, M, y) (column 3 of '5 parsecs')"),
        BadCall(name: "calendar zone word that is neither a zone nor an abbreviation of the daemon's zone",
                tool: ["gdbus", "\(i).Schedule", "{'title': <'x'>, 'on_calendar': <'daily CEST'>, 'timezone': <'America/New_York'>}"],
                errorName: "io.github.tocsin.Error.InvalidTrigger",
                message: "unknown time zone 'CEST' (neither a zone name nor an abbreviation of America/New_York: EST, EDT) in 'on_calendar'"),
        BadCall(name: "empty backends in Schedule", tool: ["gdbus", "\(i).Schedule", "{'title': <'x'>, 'after': <'1h'>, 'backends': <@as []>}"],
                errorName: "org.freedesktop.DBus.Error.InvalidArgs",
                message: "'backends' in the notification spec is empty, so it would deliver to nothing"),
        BadCall(name: "empty backends in PostNow", tool: ["gdbus", "\(i).PostNow", "{'title': <'x'>, 'backends': <@as []>}"],
                errorName: "org.freedesktop.DBus.Error.InvalidArgs",
                message: "'backends' in the notification spec is empty, so it would deliver to nothing"),
    ]

    @Test("bad calls get error replies and leave the daemon healthy", arguments: badCalls)
    func badCall(_ row: BadCall) async throws {
        try await withGateway { g in
            let out: TestProcess.Output
            switch row.tool[0] {
            case "gdbus": out = try await TestProcess.run("gdbus", ["call", "--address", g.bus.address, "-d", Self.d, "-o", Self.p, "-m"] + row.tool.dropFirst())
            case "dbus-send": out = try await TestProcess.run("dbus-send", ["--bus=\(g.bus.address)", "--print-reply", "--dest=\(Self.d)", Self.p] + row.tool.dropFirst())
            default: out = try await TestProcess.run("busctl", ["--address=\(g.bus.address)", "call", Self.d, Self.p, Self.i] + row.tool.dropFirst())
            }
            #expect(out.status != .exited(0), "\(row.name): the call succeeded")
            let text = out.stderrText
            // busctl prints only the message; the others print the error name too.
            #expect(text.contains(row.errorName) || row.tool[0] == "busctl", "\(row.name): \(text)")
            #expect(text.contains(row.message), "\(row.name): \(text)")
            #expect(try await g.isHealthy(), "\(row.name): daemon unhealthy after the call")
        }
    }

    @Test("a 1 MB title is refused without harm")
    func hugeTitle() async throws {
        try await withGateway { g in
            let out = try await g.python("""
                import dbus
                bus = dbus.bus.BusConnection(ADDRESS)
                gw = dbus.Interface(bus.get_object('io.github.tocsin.Gateway', '/io/github/tocsin/Gateway'), 'io.github.tocsin.Gateway1')
                try:
                    gw.Schedule({'title': 'x' * (1 << 20), 'after': '1h'})
                    print('accepted')
                except dbus.exceptions.DBusException as e:
                    print(e.get_dbus_name(), e.get_dbus_message())
                """)
            #expect(out.stdoutText.hasPrefix("org.freedesktop.DBus.Error.InvalidArgs 'title' is 1048576 bytes; the limit is 4096"), "\(out.stdoutText) \(out.stderrText)")
            #expect(try await g.isHealthy())
        }
    }

    @Test("50 concurrent callers are all answered, each with its own key")
    func concurrentCallers() async throws {
        try await withGateway { g in
            let keys = try await withThrowingTaskGroup(of: String.self) { group in
                for n in 0..<50 {
                    group.addTask {
                        let out = try await g.gdbus("Schedule", "{'key': <'k\(n)'>, 'title': <'n\(n)'>, 'after': <'1h'>}")
                        return out.stdoutText
                    }
                }
                return try await group.reduce(into: [String]()) { $0.append($1) }
            }
            #expect(Set(keys).count == 50)
            let pending = try await g.busctl("get-property", GatewayFixture.dest, GatewayFixture.path, GatewayFixture.iface, "Pending")
            #expect(pending.stdoutText == "u 50\n")
        }
    }

    @Test("the served introspection equals contrib/io.github.tocsin.Gateway1.xml")
    func introspection() async throws {
        try await withGateway { g in
            let out = try await TestProcess.run("dbus-send", ["--bus=\(g.bus.address)", "--print-reply=literal", "--dest=\(GatewayFixture.dest)",
                                                              GatewayFixture.path, "org.freedesktop.DBus.Introspectable.Introspect"])
            let served = out.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines)
            let committed = try String(contentsOfFile: GatewayFixture.repositoryRoot + "/contrib/io.github.tocsin.Gateway1.xml", encoding: .utf8)
                .trimmingCharacters(in: .whitespacesAndNewlines)
            #expect(served == committed)
        }
    }

    @Test("properties: Version, Backends, Pending")
    func properties() async throws {
        try await withGateway { g in
            let backends = try await g.busctl("get-property", GatewayFixture.dest, GatewayFixture.path, GatewayFixture.iface, "Backends")
            #expect(backends.stdoutText == "as 2 \"events\" \"log\"\n")
            let version = try await g.busctl("get-property", GatewayFixture.dest, GatewayFixture.path, GatewayFixture.iface, "Version")
            #expect(version.stdoutText.hasPrefix("s \""))
        }
    }

    @Test("a second daemon on the same bus exits naming the owner")
    func secondDaemon() async throws {
        try await withGateway { g in
            let other = try DaemonUnderTest(config: GatewayFixture.defaultConfig, environment: g.bus.environment)
            let p = try other.start(["--bus", g.bus.address])
            let status = try await p.waitForExit(timeout: .seconds(20))
            #expect(status == .exited(1))
            #expect(p.stderr.contains("another Tocsin daemon is running: bus name io.github.tocsin.Gateway is already owned by :1."), "\(p.stderr)")
            #expect(p.stderr.contains("(pid \(g.process.pid))"), "\(p.stderr)")
        }
    }

    /// Regression: two daemons starting together on a new state directory both made its database,
    /// and the loser died with "disk I/O error"; two on different buses both fired every notification.
    @Test("a second daemon on the same state directory exits naming the first, on another bus or started at the same moment")
    func sameStateDirectory() async throws {
        let first = try DaemonUnderTest(config: "[backend.log]\ntype = \"log\"\n")
        try await PrivateBus.with { busA in
            try await PrivateBus.with { busB in
                let a = try first.start(["--bus", busA.address])
                let b = try first.start(["--bus", busB.address])
                // One of the two holds the directory; the other exits at once, naming it.
                let loser = try await withThrowingTaskGroup(of: TestProcess.self) { group in
                    for p in [a, b] { group.addTask { _ = try await p.waitForExit(timeout: .seconds(30)); return p } }
                    defer { group.cancelAll() }
                    return try #require(await group.next())
                }
                let winner = loser === a ? b : a
                #expect(try await loser.waitForExit(timeout: .seconds(20)) == .exited(1))
                #expect(loser.stderr.contains("another Tocsin daemon (pid \(winner.pid)) is using the state directory \(first.stateDirectory)"), "\(loser.stderr)")
                #expect(!loser.stderr.contains("disk I/O error"), "\(loser.stderr)")
                try await winner.waitForStderr(containing: "started", timeout: .seconds(30))
                #expect(winner.status == nil, "the first daemon keeps running")
                _ = try await winner.kill()
            }
        }
    }

    @Test("Reload with a broken config answers with its diagnostics and keeps the old config")
    func reloadBroken() async throws {
        let config = GatewayFixture.defaultConfig + "\n[[notification]]\nkey = \"cfg\"\ntitle = \"From config\"\nafter = \"1h\"\n"
        try await withGateway(config: config) { g in
            try g.daemon.rewrite(config: config + "[[notification]]\ntitle = 5\n")
            let out = try await g.gdbus("Reload")
            #expect(out.stderrText.contains("io.github.tocsin.Error.InvalidConfig"))
            #expect(out.stderrText.contains("config.toml:12:9: error: 'title' in [[notification]] #2 must be a string, found integer"), "\(out.stderrText)")
            #expect(try await g.gdbus("List").stdoutText.contains("'cfg'"))
            try g.daemon.rewrite(config: GatewayFixture.defaultConfig)
            #expect(try await g.gdbus("Reload").status == .exited(0))
            #expect(!(try await g.gdbus("List").stdoutText.contains("'cfg'")))
        }
    }
}
