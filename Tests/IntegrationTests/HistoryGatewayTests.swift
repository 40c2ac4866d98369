import Foundation
import Testing
import TocsinTesting

/// History through the real daemon and its state file, read with gdbus, busctl and `tocsin history`.
@Suite("History over D-Bus")
struct HistoryGatewayTests {
    @Test("PostNow and Cancel are in History, newest first, with title and backends; key and limit filter")
    func historyMethod() async throws {
        try await withGateway { g in
            let posted = try await g.gdbus("PostNow", "{'key': <'now'>, 'title': <'Posted'>, 'backends': <['log']>}")
            #expect(posted.status == .exited(0), "\(posted.stderrText)")
            let scheduled = try await g.gdbus("Schedule", "{'key': <'tea'>, 'title': <'Tea'>, 'after': <'1h'>}")
            #expect(scheduled.status == .exited(0), "\(scheduled.stderrText)")
            let cancelled = try await g.gdbus("Cancel", "tea")
            #expect(cancelled.stdoutText.contains("true"), "\(cancelled.stdoutText)")

            // python3-dbus: a client we did not write decodes the whole reply.
            let out = try await g.python("""
                import dbus, json
                o = dbus.bus.BusConnection(ADDRESS).get_object('io.github.tocsin.Gateway', '/io/github/tocsin/Gateway')
                h = dbus.Interface(o, 'io.github.tocsin.Gateway1').History(dbus.Dictionary({}, signature='sv'))
                print(json.dumps([{k: (list(map(str, v)) if isinstance(v, dbus.Array) else (str(v) if isinstance(v, dbus.String) else int(v))) for k, v in e.items()} for e in h]))
                """)
            #expect(out.status == .exited(0), "\(out.stderrText)")
            let entries = try #require(try JSONSerialization.jsonObject(with: Data(out.stdoutText.utf8)) as? [[String: Any]])
            try #require(entries.map { $0["event"] as? String } == ["cancelled", "fired"], "\(entries)")
            #expect(entries.map { $0["key"] as? String } == ["tea", "now"])
            #expect(entries.map { $0["title"] as? String } == ["Tea", "Posted"])
            #expect(entries[1]["backends"] as? [String] == ["log"])
            #expect(entries[1]["occurrence"] as? Int == 1)

            let byKey = try await g.busctl("call", GatewayFixture.dest, GatewayFixture.path, GatewayFixture.iface,
                                           "History", "a{sv}", "1", "key", "s", "now")
            #expect(byKey.status == .exited(0), "\(byKey.stderrText)")
            #expect(byKey.stdoutText.hasPrefix("aa{sv} 1 "), "\(byKey.stdoutText)")
            #expect(byKey.stdoutText.contains("\"Posted\""), "\(byKey.stdoutText)")
            let limited = try await g.gdbus("History", "{'limit': <uint32 1>}")
            #expect(limited.stdoutText.contains("'cancelled'") && !limited.stdoutText.contains("'fired'"), "\(limited.stdoutText)")
            // Regression: a limit over the bound was cut to it without a word.
            let over = try await g.gdbus("History", "{'limit': <uint32 10001>}")
            #expect(over.status != .exited(0), "\(over.stdoutText)")
            #expect(over.stderrText.contains("InvalidArgs") && over.stderrText.contains("'limit' 10001 is over 10000"), "\(over.stderrText)")
            let most = try await g.gdbus("History", "{'limit': <uint32 10000>}")
            #expect(most.status == .exited(0), "\(most.stderrText)")
        }
    }

    @Test("tocsin history shows the events as a table and as JSON")
    func cli() async throws {
        try await withGateway { g in
            _ = try await g.gdbus("PostNow", "{'key': <'now'>, 'title': <'Posted'>, 'backends': <['log']>}")
            _ = try await g.gdbus("Schedule", "{'key': <'tea'>, 'title': <'Tea'>, 'after': <'1h'>}")
            _ = try await g.gdbus("Cancel", "tea")
            let table = try await g.tocsin("history")
            #expect(table.status == .exited(0), "\(table.stderrText)")
            let lines = table.stdoutText.split(separator: "\n").map(String.init)
            #expect(lines.count == 3, "\(table.stdoutText)")
            #expect(lines.first?.hasPrefix("TIME") == true)
            #expect(lines.dropFirst().first?.contains("cancelled") == true && lines.dropFirst().first?.hasSuffix("Tea") == true, "\(lines)")
            #expect(lines.last?.contains("fired") == true && lines.last?.contains("#1") == true && lines.last?.hasSuffix("Posted") == true, "\(lines)")
            let json = try await g.tocsin("history", "--json", "--key", "now")
            let entries = try #require(try JSONSerialization.jsonObject(with: Data(json.stdoutText.utf8)) as? [[String: Any]], "\(json.stdoutText)")
            #expect(entries.count == 1)
            #expect(entries.first?["event"] as? String == "fired")
            // systemd's local forms, in the CLI's zone: everything since yesterday's midnight, nothing since tomorrow's.
            let sinceYesterday = try await g.tocsin("history", "--json", "--since", "yesterday")
            let recent = try JSONSerialization.jsonObject(with: Data(sinceYesterday.stdoutText.utf8)) as? [[String: Any]]
            #expect(recent?.count == 2, "\(sinceYesterday.stdoutText) \(sinceYesterday.stderrText)")
            let sinceTomorrow = try await g.tocsin("history", "--json", "--since", "tomorrow")
            #expect(sinceTomorrow.status == .exited(0) && sinceTomorrow.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines) == "[]",
                    "\(sinceTomorrow.stdoutText) \(sinceTomorrow.stderrText)")
            let bad = try await g.tocsin("history", "--since", "soon")
            #expect(bad.status == .exited(64), "a usage error: \(bad.stderrText)")
            #expect(bad.stderrText.contains("invalid --since 'soon'"), "\(bad.stderrText)")
        }
    }
}

@Suite("History: kill -9")
struct HistoryCrashTests {
    @Test("events recorded before kill -9 are in History after the restart")
    func survivesKillNine() async throws {
        let bus = try await PrivateBus.start()
        defer { Task { await bus.stop() } }
        let d = try DaemonUnderTest(config: "[backend.log]\ntype = \"log\"\n", environment: bus.environment)
        func call(_ method: String, _ args: String...) async throws -> TestProcess.Output {
            try await TestProcess.run("gdbus", ["call", "--address", bus.address, "-d", GatewayFixture.dest, "-o", GatewayFixture.path,
                                                "-m", "\(GatewayFixture.iface).\(method)"] + args)
        }
        let first = try d.start(["--bus", bus.address])
        try await first.waitForStderr(containing: "serving the D-Bus API", timeout: .seconds(30))
        #expect(try await call("PostNow", "{'key': <'now'>, 'title': <'Posted'>}").status == .exited(0))
        #expect(try await call("Schedule", "{'key': <'tea'>, 'title': <'Tea'>, 'after': <'1h'>}").status == .exited(0))
        #expect(try await call("Cancel", "tea").status == .exited(0))
        // Each reply means durable, the entry included: crash at once.
        try await first.kill()

        let second = try d.start(["--bus", bus.address])
        try await second.waitForStderr(containing: "serving the D-Bus API", timeout: .seconds(30))
        let history = try await call("History", "{}")
        #expect(history.status == .exited(0), "\(history.stderrText)")
        let text = history.stdoutText
        let cancelled = try #require(text.range(of: "'cancelled'"), "\(text)")
        let fired = try #require(text.range(of: "'fired'"), "\(text)")
        #expect(cancelled.lowerBound < fired.lowerBound, "not newest first: \(text)")
        #expect(text.contains("'Posted'") && text.contains("'Tea'"), "\(text)")
        second.signal(SIGTERM)
        _ = try await second.waitForExit(timeout: .seconds(10))
        await bus.stop()
    }
}
