import Foundation
import Testing
import TocsinTesting

/// A hostile D-Bus call or config reload must never stop firing: a notification due every second
/// keeps coming within 50 ms of due (measured by a subscriber we did not write) while it runs.
/// In the `timing` phase of scripts/phases.sh: its assertions are latency promises.
@Suite("Hostile calls and reloads keep firing on time")
struct HostileReloadTests {
    /// dbus-python: Schedule with a 4,000,000-letter unknown field, History with such a filter key,
    /// and Schedule naming such a backend, again and again for three seconds. Prints one JSON line
    /// per call: the error name, the message's length and start, and how long the answer took.
    static let hugeNames = """
        import dbus, json, time
        bus = dbus.bus.BusConnection(ADDRESS)
        gw = dbus.Interface(bus.get_object('io.github.tocsin.Gateway', '/io/github/tocsin/Gateway'), 'io.github.tocsin.Gateway1')
        name = 'z' * 4000000
        calls = [
            ('Schedule', lambda: gw.Schedule(dbus.Dictionary({'title': 't', 'after': '1h', name: 'x'}, signature='sv'), timeout=120)),
            ('History', lambda: gw.History(dbus.Dictionary({name: 'x'}, signature='sv'), timeout=120)),
            ('backends', lambda: gw.Schedule(dbus.Dictionary({'title': 't', 'after': '1h',
                'backends': dbus.Array([name], signature='s')}, signature='sv'), timeout=120)),
        ]
        start = time.monotonic()
        while True:
            for what, call in calls:
                t0 = time.monotonic()
                try:
                    call()
                    print(json.dumps({'call': what, 'error': None}), flush=True)
                except dbus.exceptions.DBusException as e:
                    m = e.get_dbus_message()
                    print(json.dumps({'call': what, 'error': e.get_dbus_name(), 'length': len(m), 'message': m[:300],
                                      'seconds': time.monotonic() - t0}), flush=True)
            if time.monotonic() - start > 3:
                break
        """

    @Test("regression: 4 MB unknown names in Schedule, History and backends answer at once with the name cut short; firing stays on time")
    func hugeUnknownNames() async throws {
        try await withGateway(config: OnTimeProbe.config) { g in
            let probe = try await OnTimeProbe.start(g)
            let (out, firings) = try await probe.during { try await g.python(Self.hugeNames) }
            #expect(out.status == .exited(0), "\(out.stderrText)")
            let replies = out.stdoutText.split(separator: "\n").compactMap {
                try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
            }
            #expect(replies.count >= 3, "\(out.stdoutText)")
            let cut = String(repeating: "z", count: 64) + "…"
            let expected = ["Schedule": "unknown key '\(cut)' in the notification spec",
                            "History": "unknown key '\(cut)' in the History filter",
                            "backends": "'\(cut)'"]
            for r in replies {
                let call = r["call"] as? String ?? "?"
                let message = r["message"] as? String ?? ""
                #expect(r["error"] as? String == "org.freedesktop.DBus.Error.InvalidArgs"
                        || r["error"] as? String == "io.github.tocsin.Error.UnknownBackend", "\(call): \(r)")
                #expect(message.contains(expected[call] ?? "?"), "\(call): \(message)")
                #expect((r["length"] as? Int ?? .max) < 1000, "\(call): a \(r["length"] ?? "?")-character error")
                #expect((r["seconds"] as? Double ?? .infinity) < TimingBudget.scaled(2.0), "\(call) answered in \(r["seconds"] ?? "?") s")
            }
            probe.expectOnTime(firings, atLeast: 3, "4 MB names")
            #expect(try await g.isHealthy())
            await probe.stop()
        }
    }

    @Test("regression: SIGHUP with a FIFO as sound file logs file:line:col and keeps firing, answering and stopping")
    func fifoSoundOnReload() async throws {
        try await withGateway(config: OnTimeProbe.config) { g in
            let probe = try await OnTimeProbe.start(g)
            let fifo = g.daemon.dir.path + "/alarm.fifo"
            #expect(mkfifo(fifo, 0o600) == 0)
            try g.daemon.rewrite(config: OnTimeProbe.config + "\n[backend.alarm]\ntype = \"sound\"\nfile = \"\(fifo)\"\nplayer = [\"/bin/true\", \"{file}\"]\n")
            let (log, firings) = try await probe.during { () async throws -> String in
                g.process.signal(SIGHUP)
                return try await g.process.waitForStderr(containing: "reload failed", timeout: .seconds(30))
            }
            #expect(log.contains("\(g.daemon.configPath):16:8: error: sound file '\(fifo)' is not a regular file"), "\(log)")
            probe.expectOnTime(firings, atLeast: 1, "FIFO reload")
            #expect(try await g.isHealthy())
            await probe.stop()
            g.process.signal(SIGTERM)
            #expect(try await g.process.waitForExit(timeout: .seconds(10)) == .exited(0))
        }
    }

    /// `[daemon]` with `n` unknown keys after the probe's config.
    static func unknownKeys(_ n: Int) -> String {
        var text = "[daemon]\n"
        for i in 0..<n { text += "unknown_key_\(i) = 1\n" }
        return text + "\n" + OnTimeProbe.config
    }

    @Test("regression: reloading 40,000 unknown keys (SIGHUP and D-Bus Reload) reports 100 and counts the rest; firing stays on time")
    func manyDiagnosticsOnReload() async throws {
        try await withGateway(config: OnTimeProbe.config) { g in
            let probe = try await OnTimeProbe.start(g)
            try g.daemon.rewrite(config: Self.unknownKeys(40_000))
            let ((log, reply), firings) = try await probe.during { () async throws -> (String, TestProcess.Output) in
                g.process.signal(SIGHUP)
                let log = try await g.process.waitForStderr(containing: "and 39900 more errors", timeout: .seconds(120))
                return (log, try await g.gdbus("Reload"))
            }
            let headers = log.split(separator: "\n").filter { $0.contains(": error: unknown key 'unknown_key_") }
            #expect(headers.count == 100, "the log has \(headers.count) diagnostics")
            #expect(headers.first?.contains("\(g.daemon.configPath):2:1: error: unknown key 'unknown_key_0' in [daemon]") == true)
            #expect(reply.status != .exited(0))
            #expect(reply.stderrText.contains("io.github.tocsin.Error.InvalidConfig"), "\(reply.stderrText.prefix(500))")
            #expect(reply.stderrText.contains("and 39900 more errors"), "\(reply.stderrText.suffix(500))")
            #expect(reply.stderrText.components(separatedBy: ": error: unknown key").count - 1 == 100)
            probe.expectOnTime(firings, atLeast: 2, "40,000-key reload")
            #expect(try await g.isHealthy())
            await probe.stop()
        }
    }
}
