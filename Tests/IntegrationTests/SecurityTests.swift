import Foundation
import Testing
import TocsinTesting

/// What a hostile or buggy client on the session bus can do to the daemon: oversized and
/// malformed fields, flooding, text that tries to become a command, and a state directory others
/// can write. Markup in popup text is covered by `DesktopPopupTests` (dunst: body escaped; the
/// mock server without body-markup: plain text).
@Suite("Security: input limits, per-client quotas, exec, state permissions")
struct SecurityTests {
    /// One `Schedule` request, built in Python (dbus-python) so sizes and characters are exact.
    struct LimitRow: Sendable {
        var name: String
        /// A Python expression for the spec dict (`dbus` is imported).
        var spec: String
        /// nil: must be accepted. Otherwise the D-Bus error name and text the reply must contain.
        var error: String?
        var mentions: [String] = []
    }

    static let infoError = "org.freedesktop.DBus.Error.InvalidArgs"
    static let limitRows: [LimitRow] = [
        LimitRow(name: "title at the limit (4096 bytes)", spec: "{'title': 'x' * 4096, 'after': '1h'}"),
        LimitRow(name: "title over the limit", spec: "{'title': 'x' * 4097, 'after': '1h'}",
                 error: infoError, mentions: ["'title'", "4097 bytes", "4096"]),
        LimitRow(name: "title of multi-byte characters over the limit", spec: "{'title': '\\u00e9' * 2049, 'after': '1h'}",
                 error: infoError, mentions: ["'title'", "4098 bytes"]),
        LimitRow(name: "title of the wrong type", spec: "{'title': dbus.Int32(5), 'after': '1h'}",
                 error: infoError, mentions: ["'title'", "must be a string"]),
        LimitRow(name: "body at the limit", spec: "{'title': 't', 'body': 'b' * 65536, 'after': '1h'}"),
        LimitRow(name: "body over the limit", spec: "{'title': 't', 'body': 'b' * 65537, 'after': '1h'}",
                 error: infoError, mentions: ["'body'", "65536"]),
        LimitRow(name: "key at the limit (255 bytes)", spec: "{'key': 'k' * 255, 'title': 't', 'after': '1h'}"),
        LimitRow(name: "key over the limit", spec: "{'key': 'k' * 256, 'title': 't', 'after': '1h'}",
                 error: infoError, mentions: ["'key'", "255"]),
        LimitRow(name: "empty key", spec: "{'key': '', 'title': 't', 'after': '1h'}",
                 error: infoError, mentions: ["'key'", "empty"]),
        LimitRow(name: "key with a space", spec: "{'key': 'a b', 'title': 't', 'after': '1h'}",
                 error: infoError, mentions: ["'key'", "spaces"]),
        LimitRow(name: "key with a control character", spec: "{'key': 'a\\x01b', 'title': 't', 'after': '1h'}",
                 error: infoError, mentions: ["'key'", "control"]),
        LimitRow(name: "key with a newline", spec: "{'key': 'a\\nb', 'title': 't', 'after': '1h'}",
                 error: infoError, mentions: ["'key'", "control"]),
        LimitRow(name: "16 actions", spec: "{'title': 't', 'after': '1h', 'actions': dbus.Dictionary({'a%d' % i: 'A' for i in range(16)}, signature='ss')}"),
        LimitRow(name: "17 actions", spec: "{'title': 't', 'after': '1h', 'actions': dbus.Dictionary({'a%d' % i: 'A' for i in range(17)}, signature='ss')}",
                 error: infoError, mentions: ["'actions'", "17 entries", "16"]),
        LimitRow(name: "64 user_info entries", spec: "{'title': 't', 'after': '1h', 'user_info': dbus.Dictionary({'k%d' % i: 'v' for i in range(64)}, signature='ss')}"),
        LimitRow(name: "65 user_info entries", spec: "{'title': 't', 'after': '1h', 'user_info': dbus.Dictionary({'k%d' % i: 'v' for i in range(65)}, signature='ss')}",
                 error: infoError, mentions: ["'user_info'", "65 entries"]),
        LimitRow(name: "user_info over 64 KiB", spec: "{'title': 't', 'after': '1h', 'user_info': dbus.Dictionary({'k': 'v' * 65536}, signature='ss')}",
                 error: infoError, mentions: ["'user_info'", "65537 bytes"]),
        LimitRow(name: "65 remind_before offsets", spec: "{'title': 't', 'at': '+2h', 'remind_before': ['%ds' % i for i in range(65)]}",
                 error: infoError, mentions: ["'remind_before'", "65 offsets", "64"]),
        LimitRow(name: "timezone as a path", spec: "{'title': 't', 'on_calendar': 'daily', 'timezone': '../../../etc/passwd'}",
                 error: infoError, mentions: ["'timezone'"]),
        LimitRow(name: "timezone that does not exist", spec: "{'title': 't', 'on_calendar': 'daily', 'timezone': 'Mars/Olympus'}",
                 error: "io.github.tocsin.Error.InvalidTrigger", mentions: ["'timezone'", "Mars/Olympus"]),
        LimitRow(name: "unknown field", spec: "{'title': 't', 'after': '1h', 'exec': 'rm -rf /'}",
                 error: infoError, mentions: ["unknown key 'exec'"]),
        LimitRow(name: "nested dictionary where a string belongs", spec: "{'title': dbus.Dictionary({'a': 'b'}, signature='sv'), 'after': '1h'}",
                 error: infoError, mentions: ["'title'"]),
    ]

    @Test("every input limit of Schedule: at the limit accepted, over it refused with an error naming the field")
    func inputLimits() async throws {
        try await withGateway { g in
            let rows = Self.limitRows.enumerated().map { "(\($0.offset), \($0.element.spec))" }.joined(separator: ",\n")
            let out = try await g.python("""
                import dbus, json
                bus = dbus.bus.BusConnection(ADDRESS)
                gw = dbus.Interface(bus.get_object('io.github.tocsin.Gateway', '/io/github/tocsin/Gateway'), 'io.github.tocsin.Gateway1')
                for i, spec in [\(rows)]:
                    try:
                        gw.Schedule(dbus.Dictionary(spec, signature='sv'))
                        print(json.dumps([i, None, '']))
                    except dbus.DBusException as e:
                        print(json.dumps([i, e.get_dbus_name(), e.get_dbus_message()]))
                """)
            try #require(out.status == .exited(0), "\(out.stderrText)")
            var results: [Int: (String?, String)] = [:]
            for line in out.stdoutText.split(separator: "\n") {
                guard let a = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [Any], let i = a[0] as? Int else { continue }
                results[i] = (a[1] as? String, a[2] as? String ?? "")
            }
            for (i, row) in Self.limitRows.enumerated() {
                guard let (name, message) = results[i] else {
                    Issue.record("row '\(row.name)': no result")
                    continue
                }
                #expect(name == row.error, "row '\(row.name)': got \(name ?? "success") \(message)")
                for m in row.mentions {
                    #expect(message.contains(m), "row '\(row.name)': the message should mention \(m): \(message)")
                }
            }
            #expect(try await g.isHealthy())
        }
    }

    @Test("a 10 MB title is refused naming the field, and the daemon does not grow")
    func hugeTitle() async throws {
        // Under AddressSanitizer freed memory waits in its quarantine (256 MB by default) instead of
        // returning to the system, so RSS would measure the sanitizer; the daemon of this test runs
        // without quarantine, keeping every other ASan check and making the RSS figure mean growth again.
        var env: [String: String] = [:]
        if let asan = ProcessInfo.processInfo.environment["ASAN_OPTIONS"] { env["ASAN_OPTIONS"] = asan + ":quarantine_size_mb=0" }
        try await withGateway(environment: env) { g in
            // Warm up the paths a refused call takes, so the baseline includes their one-time allocations.
            _ = try await g.gdbus("Schedule", "{'title': <'warm'>, 'after': <'soon'>}")
            let before = try residentKiB(g.process.pid)
            let out = try await g.python("""
                import dbus
                bus = dbus.bus.BusConnection(ADDRESS)
                gw = dbus.Interface(bus.get_object('io.github.tocsin.Gateway', '/io/github/tocsin/Gateway'), 'io.github.tocsin.Gateway1')
                for i in range(5):
                    try:
                        gw.Schedule(dbus.Dictionary({'title': 'x' * (10 * 1024 * 1024), 'after': '1h'}, signature='sv'), timeout=60)
                        print('accepted')
                    except dbus.DBusException as e:
                        print(e.get_dbus_name(), e.get_dbus_message()[:200])
                """)
            try #require(out.status == .exited(0), "\(out.stderrText)")
            let lines = out.stdoutText.split(separator: "\n")
            #expect(lines.count == 5)
            for l in lines {
                #expect(l.hasPrefix("org.freedesktop.DBus.Error.InvalidArgs") && l.contains("'title' is 10485760 bytes; the limit is 4096"), "\(l)")
            }
            let after = try residentKiB(g.process.pid)
            print("measured: daemon RSS \(before) KiB before five 10 MB titles, \(after) KiB after")
            #expect(after - before < 12 * 1024, "RSS grew from \(before) KiB to \(after) KiB")
            #expect(try await g.isHealthy())
        }
    }

    @Test("per-client quota: a process at max_pending_per_client is refused naming the limit, on every connection it opens (regression: reconnecting evaded it); another process still schedules")
    func perClientQuota() async throws {
        let config = GatewayFixture.defaultConfig + "\n[daemon]\nmax_pending_per_client = 5\n"
        try await withGateway(config: config) { g in
            let out = try await g.python("""
                import dbus, subprocess
                def gateway():
                    bus = dbus.bus.BusConnection(ADDRESS)
                    return bus, dbus.Interface(bus.get_object('io.github.tocsin.Gateway', '/io/github/tocsin/Gateway'), 'io.github.tocsin.Gateway1')
                def schedule(gw, key, after='1h'):
                    try:
                        gw.Schedule(dbus.Dictionary({'key': key, 'title': key, 'after': after}, signature='sv'))
                        return 'ok'
                    except dbus.DBusException as e:
                        return e.get_dbus_name() + ': ' + e.get_dbus_message()
                _, a = gateway()
                for i in range(3):
                    print('a%d' % i, schedule(a, 'a%d' % i))
                # Two more from new connections of the same process, each closed after its call.
                for i in (3, 4):
                    bus, c = gateway()
                    print('a%d' % i, schedule(c, 'a%d' % i))
                    bus.close()
                # The sixth, from a sixth connection: the same process, over its quota.
                bus, c = gateway()
                print('a5', schedule(c, 'a5'))
                bus.close()
                print('a0-again', schedule(a, 'a0'))
                b = subprocess.run(['gdbus', 'call', '--address', ADDRESS, '-d', 'io.github.tocsin.Gateway', '-o', '/io/github/tocsin/Gateway',
                                    '-m', 'io.github.tocsin.Gateway1.Schedule', "{'key': <'b0'>, 'title': <'b0'>, 'after': <'1h'>}"],
                                   capture_output=True, text=True)
                print('b0', 'ok' if b.returncode == 0 else b.stderr.strip())
                a.Cancel('a1')
                print('a6-after-cancel', schedule(a, 'a6'))
                print('a7', schedule(a, 'a7'))
                """)
            try #require(out.status == .exited(0), "\(out.stderrText)")
            var got: [String: String] = [:]
            for line in out.stdoutText.split(separator: "\n") {
                let parts = line.split(separator: " ", maxSplits: 1)
                if parts.count == 2 { got[String(parts[0])] = String(parts[1]) }
            }
            for i in 0..<5 { #expect(got["a\(i)"] == "ok", "a\(i): \(got["a\(i)"] ?? "-")") }
            let refused = got["a5"] ?? ""
            #expect(refused.hasPrefix("io.github.tocsin.Error.QuotaExceeded"), "a new connection of the same process must not get a new quota: \(refused)")
            #expect(refused.contains("max_pending_per_client") && refused.contains("5"), "\(refused)")
            // Replacing one of its own pending notifications adds nothing: allowed at the limit.
            #expect(got["a0-again"] == "ok", "\(got["a0-again"] ?? "-")")
            #expect(got["b0"] == "ok", "another process must not be affected: \(got["b0"] ?? "-")")
            #expect(got["a6-after-cancel"] == "ok", "a cancel frees a slot: \(got["a6-after-cancel"] ?? "-")")
            #expect(got["a7"]?.hasPrefix("io.github.tocsin.Error.QuotaExceeded") == true)
            let list = try await g.gdbus("List").stdoutText
            for k in ["a0", "a2", "a3", "a4", "a6", "b0"] { #expect(list.contains("'\(k)'"), "\(k) missing from List") }
            for k in ["a1", "a5", "a7"] { #expect(!list.contains("'\(k)'"), "\(k) should not be pending") }
        }
    }

    @Test("per-client quota: notifications that fired free their slots")
    func quotaFreedByFiring() async throws {
        let config = GatewayFixture.defaultConfig + "\n[daemon]\nmax_pending_per_client = 3\n"
        try await withGateway(config: config) { g in
            let out = try await g.python("""
                import dbus, dbus.mainloop.glib
                from gi.repository import GLib
                dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)
                bus = dbus.bus.BusConnection(ADDRESS)
                gw = dbus.Interface(bus.get_object('io.github.tocsin.Gateway', '/io/github/tocsin/Gateway'), 'io.github.tocsin.Gateway1')
                fired = set()
                loop = GLib.MainLoop()
                def on_fired(key, info):
                    fired.add(str(key))
                    if fired >= {'f0', 'f1', 'f2'}:
                        loop.quit()
                bus.add_signal_receiver(on_fired, 'Fired', 'io.github.tocsin.Gateway1')
                for i in range(3):
                    gw.Schedule(dbus.Dictionary({'key': 'f%d' % i, 'title': 't', 'after': '1s'}, signature='sv'))
                try:
                    gw.Schedule(dbus.Dictionary({'key': 'over', 'title': 't', 'after': '1h'}, signature='sv'))
                    print('over accepted')
                except dbus.DBusException as e:
                    print('over refused', e.get_dbus_name())
                GLib.timeout_add_seconds(30, loop.quit)
                loop.run()
                print('fired', len(fired))
                for i in range(3):
                    gw.Schedule(dbus.Dictionary({'key': 'g%d' % i, 'title': 't', 'after': '1h'}, signature='sv'))
                print('after firing: 3 more accepted')
                """)
            #expect(out.status == .exited(0), "\(out.stderrText)")
            #expect(out.stdoutText.contains("over refused io.github.tocsin.Error.QuotaExceeded"), "\(out.stdoutText)")
            #expect(out.stdoutText.contains("fired 3"), "\(out.stdoutText)")
            #expect(out.stdoutText.contains("after firing: 3 more accepted"), "\(out.stdoutText) \(out.stderrText)")
        }
    }

    @Test("exec backend: notification text reaches the program only as environment values, never as a command or an option")
    func execInjection() async throws {
        let dir = TemporaryDirectory(prefix: "tocsin-exec")
        let record = dir.path + "/record.jsonl"
        let shellOut = dir.path + "/shell.txt"
        let pwned = dir.path + "/pwned"
        let config = """
            [backend.probe]
            type = "exec"
            command = ["/usr/bin/python3", "-c", "import json, os, sys; open('\(record)', 'a').write(json.dumps({'argv': sys.argv, 'env': dict(os.environ)}) + chr(10))"]

            [backend.shell]
            type = "exec"
            command = ["/bin/sh", "-c", "printf '%s|%s\\\\n' \\"$TOCSIN_TITLE\\" \\"$TOCSIN_BODY\\" >> '\(shellOut)'"]

            [backend.log]
            type = "log"
            format = "json"
            """
        try await withGateway(config: config, arguments: ["--log-level", "debug"]) { g in
            let title = "$(touch \(pwned)) `touch \(pwned)` --help"
            let body = "; touch \(pwned) #\n-rf /"
            let out = try await g.python("""
                import dbus
                bus = dbus.bus.BusConnection(ADDRESS)
                gw = dbus.Interface(bus.get_object('io.github.tocsin.Gateway', '/io/github/tocsin/Gateway'), 'io.github.tocsin.Gateway1')
                gw.PostNow(dbus.Dictionary({'key': '--version', 'title': \(pythonString(title)), 'body': \(pythonString(body)),
                    'user_info': dbus.Dictionary({'LD_PRELOAD': '/tmp/evil.so', 'PATH': '/tmp/evil'}, signature='ss')}, signature='sv'))
                """)
            try #require(out.status == .exited(0), "\(out.stderrText)")
            try await g.process.waitForStderr(containing: "delivery recorded backend=probe", timeout: .seconds(30))
            try await g.process.waitForStderr(containing: "delivery recorded backend=shell", timeout: .seconds(30))
        }
        let line = try String(contentsOfFile: record, encoding: .utf8).split(separator: "\n").first.map(String.init) ?? ""
        let o = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        #expect(o["argv"] as? [String] == ["-c"], "the argv is the configured one and nothing else: \(o["argv"] ?? "")")
        let env = try #require(o["env"] as? [String: String])
        #expect(env["TOCSIN_TITLE"] == "$(touch \(pwned)) `touch \(pwned)` --help")
        #expect(env["TOCSIN_KEY"] == "--version")
        #expect(env["TOCSIN_INFO_LD_PRELOAD"] == "/tmp/evil.so")
        #expect(env["LD_PRELOAD"] == nil, "user_info must not set the real LD_PRELOAD")
        #expect(env["PATH"] != "/tmp/evil", "user_info must not set PATH")
        // LC_CTYPE: Python itself sets it when the locale is C (PEP 538), not the daemon.
        let allowed: Set<String> = ["PATH", "HOME", "LANG", "XDG_RUNTIME_DIR", "DBUS_SESSION_BUS_ADDRESS", "DISPLAY", "WAYLAND_DISPLAY", "LC_CTYPE"]
        let extra = env.keys.filter { !$0.hasPrefix("TOCSIN_") && !allowed.contains($0) }
        #expect(extra.isEmpty, "the environment is minimal; unexpected: \(extra.sorted())")
        let shell = try String(contentsOfFile: shellOut, encoding: .utf8)
        #expect(shell == "$(touch \(pwned)) `touch \(pwned)` --help|; touch \(pwned) #\n-rf /\n", "\(shell)")
        #expect(!FileManager.default.fileExists(atPath: pwned), "notification text was executed")
    }

    @Test("state files are 0600 in a 0700 directory")
    func stateFileModes() async throws {
        let d = try DaemonUnderTest(config: "[backend.log]\ntype = \"log\"\n")
        let p = try await d.startAndWait()
        // While running: the WAL and shared-memory files exist too.
        #expect(try mode(of: d.stateDirectory) == 0o700)
        let files = try FileManager.default.contentsOfDirectory(atPath: d.stateDirectory)
        #expect(Set(files).isSuperset(of: ["state.sqlite3", "state.sqlite3-wal", "state.sqlite3-shm"]), "\(files)")
        for f in files {
            let m = try mode(of: d.stateDirectory + "/" + f)
            #expect(m == 0o600, "\(f) is \(String(m, radix: 8))")
        }
        p.signal(SIGTERM)
        #expect(try await p.waitForExit(timeout: .seconds(10)) == .exited(0))
    }

    @Test("a state directory writable by others is refused at start: exit 1 with the reason and the fix", arguments: [0o777, 0o770, 0o702])
    func unsafeStateDirectory(_ m: Int) async throws {
        let d = try DaemonUnderTest(config: "[backend.log]\ntype = \"log\"\n")
        try FileManager.default.createDirectory(atPath: d.stateDirectory, withIntermediateDirectories: true)
        #expect(chmod(d.stateDirectory, mode_t(m)) == 0)
        let p = try d.start()
        let status = try await p.waitForExit(timeout: .seconds(30))
        #expect(status == .exited(1), "mode \(String(m, radix: 8)): \(status)")
        #expect(p.stderr.contains("state directory \(d.stateDirectory) is writable by group or others (mode \(String(m, radix: 8)))"), "\(p.stderr)")
        #expect(p.stderr.contains("chmod 700 \(d.stateDirectory)"), "\(p.stderr)")
        #expect(!FileManager.default.fileExists(atPath: d.stateDirectory + "/state.sqlite3"), "nothing may be created there")
    }

    @Test("a debug log does not print the daemon's environment")
    func debugLogKeepsEnvironment() async throws {
        let secret = "tocsin-secret-\(UInt64.random(in: 0...UInt64.max))"
        let process = try await withGateway(arguments: ["--log-level", "debug"], environment: ["TOCSIN_TEST_SECRET": secret]) { g in
            let status = try await g.gdbus("Status")
            #expect(status.status == .exited(0), "\(status.stderrText)")
            return g.process
        }
        // The stop logs each service at debug level; that is where the environment was printed.
        #expect(process.stderr.contains("Service lifecycle ended"), "\(process.stderr.suffix(2000))")
        #expect(!process.stderr.contains(secret))
    }
}

/// The daemon's resident set from /proc, in KiB.
func residentKiB(_ pid: pid_t) throws -> Int {
    let text = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
    guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
          let kib = Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "") else {
        throw TestProcessError("no VmRSS for \(pid)")
    }
    return kib
}

func mode(of path: String) throws -> Int {
    var st = stat()
    guard stat(path, &st) == 0 else { throw TestProcessError("stat \(path): errno \(errno)") }
    return Int(st.st_mode & 0o777)
}

/// A Python string literal for any text (JSON string syntax is valid Python).
func pythonString(_ s: String) -> String {
    let data = (try? JSONSerialization.data(withJSONObject: [s], options: [.withoutEscapingSlashes])) ?? Data("[\"\"]".utf8)
    let text = String(decoding: data, as: UTF8.self)
    return String(text.dropFirst().dropLast())
}
