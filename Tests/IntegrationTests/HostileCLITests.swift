import DBus
import Foundation
import Glibc
import Testing
import TocsinTesting

/// The CLI facing hostile or broken surroundings, through the built binary: client text that
/// would drive the terminal, a daemon that stopped answering, a bus address nothing listens on.
@Suite("tocsin CLI against hostile input and a broken session")
struct HostileCLITests {
    /// ESC ] 0 ; … BEL retitles an xterm, ESC [ 2 J clears the screen, U+009B is the one-character
    /// CSI, U+202E reverses what follows.
    static let hostileTitle = "\u{1b}]0;PWNED\u{07}x\u{1b}[2Jy\u{9b}31mz\u{202e}evil"
    /// How every human-readable output shows it.
    static let visibleTitle = #"\u001b]0;PWNED\u0007x\u001b[2Jy\u009b31mz\u202eevil"#

    /// Bytes a terminal acts on instead of showing: C0 but newline, DEL, C1 (as UTF-8, `C2 80`…`C2 9F`),
    /// and the bidi controls U+202A–U+202E and U+2066–U+2069 (`E2 80 AA`…, `E2 81 A6`…).
    static func rawControls(_ bytes: [UInt8]) -> [String] {
        var found: [String] = []
        for (i, b) in bytes.enumerated() {
            let next = i + 1 < bytes.count ? bytes[i + 1] : 0
            let third = i + 2 < bytes.count ? bytes[i + 2] : 0
            if (b < 0x20 && b != 0x0a) || b == 0x7f { found.append("0x\(String(b, radix: 16)) at \(i)") }
            if b == 0xc2 && (0x80...0x9f).contains(next) { found.append("C1 0x\(String(next, radix: 16)) at \(i)") }
            if b == 0xe2 && next == 0x80 && (0xaa...0xae).contains(third) { found.append("bidi at \(i)") }
            if b == 0xe2 && next == 0x81 && (0xa6...0xa9).contains(third) { found.append("bidi at \(i)") }
        }
        return found
    }

    @Test("regression: list, history, status, watch and error messages show control characters escaped; --json stays exact")
    func terminalInjection() async throws {
        try await withGateway { g in
            // `watch` prints nothing once subscribed; the bus shows its AddMatch to a monitor.
            let monitor = try TestProcess("dbus-monitor", ["--address", g.bus.address, "type='method_call',member='AddMatch'"])
            _ = try await monitor.waitForOutput(containing: "NameAcquired", timeout: .seconds(20))
            let watch = try TestProcess(Products.executable("tocsin"), ["watch", "--bus", g.bus.address])
            _ = try await monitor.waitForOutput(containing: "interface='io.github.tocsin.Gateway1',path='/io/github/tocsin/Gateway'",
                                                timeout: .seconds(20))
            _ = try? await monitor.kill()

            var s = try await g.tocsin("schedule", "--key", "inj", "--title", Self.hostileTitle, "--after", "1h")
            #expect(s.status == .exited(0), "\(s.stderrText)")
            s = try await g.tocsin("post", "--key", "injnow", "--title", Self.hostileTitle)
            #expect(s.status == .exited(0), "\(s.stderrText)")
            _ = try await watch.waitForOutput(containing: "Fired injnow", timeout: .seconds(20))
            _ = try await watch.kill()

            let list = try await g.tocsin("list")
            let history = try await g.tocsin("history")
            let status = try await g.tocsin("status")
            // An error that echoes client text: the key is not pending.
            let cancel = try await g.tocsin("cancel", "gone\u{1b}[2J")
            let outputs: [(String, [UInt8])] = [
                ("list", list.stdout), ("history", history.stdout), ("status", status.stdout),
                ("watch", watch.output.value.stdout), ("cancel stderr", cancel.stderr),
            ]
            for (name, bytes) in outputs {
                #expect(Self.rawControls(bytes).isEmpty, "\(name) prints raw control bytes \(Self.rawControls(bytes)): \(String(decoding: bytes, as: UTF8.self))")
            }
            #expect(list.status == .exited(0), "\(list.stderrText)")
            #expect(list.stdoutText.contains(" " + Self.visibleTitle + "\n"), "list: \(list.stdoutText)")
            #expect(history.stdoutText.contains(" " + Self.visibleTitle + "\n"), "history: \(history.stdoutText)")
            #expect(watch.output.value.stdoutText.contains(#"title="\u001b]0;PWNED\u0007x\u001b[2Jy\u009b31mz\u202eevil""#),
                    "watch: \(watch.output.value.stdoutText)")
            #expect(cancel.status == .exited(1))
            #expect(cancel.stderrText == #"error: no pending notification with key 'gone\u001b[2J'"# + "\n", "cancel: \(cancel.stderrText)")
            // A line break in echoed text would forge a line of its own (regression: it was kept).
            let ack = try await g.tocsin("ack", "x\nerror: FAKE")
            #expect(ack.status == .exited(1))
            #expect(ack.stderrText == #"error: no notification with key 'x\nerror: FAKE'"# + "\n", "ack: \(ack.stderrText)")

            // The machine-readable form still carries the exact title.
            let json = try await g.tocsin("list", "--json")
            #expect(Self.rawControls(json.stdout).isEmpty, "list --json: \(json.stdoutText)")
            let items = try #require(try JSONSerialization.jsonObject(with: Data(json.stdoutText.utf8)) as? [[String: Any]])
            #expect(items.first { $0["key"] as? String == "inj" }?["title"] as? String == Self.hostileTitle, "\(json.stdoutText)")
        }
    }

    /// The escaping of error messages keeps their lines: a refused `Reload` answers with the
    /// config's diagnostics, each with its source line and caret.
    @Test("a refused reload still prints its diagnostics one per line")
    func reloadDiagnosticsKeepTheirLines() async throws {
        try await withGateway { g in
            try g.daemon.rewrite(config: "[backend.log]\ntype = \"log\"\nformat = \"jsno\"\n")
            let r = try await g.tocsin("reload")
            #expect(r.status == .exited(1))
            let lines = r.stderrText.split(separator: "\n").map(String.init)
            #expect(lines.count >= 3, "\(r.stderrText)")
            // As `tocsin check` prints them: no `error:` in front of the file's own `error:`.
            #expect(lines.first?.hasPrefix("\(g.daemon.configPath):3:") == true, "\(r.stderrText)")
            #expect(lines.first?.contains(": error: ") == true, "\(r.stderrText)")
            #expect(lines.contains { $0.contains("format = \"jsno\"") }, "\(r.stderrText)")
            #expect(!r.stderrText.contains(#"\n"#), "\(r.stderrText)")
        }
    }

    @Test("regression: a stopped daemon: the CLI gives up after --timeout (or $TOCSIN_TIMEOUT), says the request may still apply, and it does")
    func stoppedDaemon() async throws {
        try await withGateway { g in
            g.process.signal(SIGSTOP)
            defer { g.process.signal(SIGCONT) }
            let started = ContinuousClock.now
            let s = try await g.tocsin("schedule", "--key", "while-stopped", "--title", "T", "--after", "1h", "--timeout", "1s")
            let waited = ContinuousClock.now - started
            #expect(s.status == .exited(1), "\(s.stderrText)")
            #expect(s.stdoutText.isEmpty)
            #expect(s.stderrText.hasPrefix("error: the Tocsin daemon on \(g.bus.address) did not answer within 1s"), "\(s.stderrText)")
            #expect(s.stderrText.contains("the request may still be applied when it answers"), "\(s.stderrText)")
            #expect(s.stderrText.contains("with --key a retry is safe"), "\(s.stderrText)")
            #expect(!s.stderrText.contains("Did not receive a reply"), "\(s.stderrText)")
            // libdbus's own default is 25 s; the 1 s asked for, plus process start-up.
            #expect(waited < .seconds(15), "waited \(waited)")

            let env = try await TestProcess.run(Products.executable("tocsin"), ["status", "--bus", g.bus.address],
                                                environment: ["TOCSIN_TIMEOUT": "1s"])
            #expect(env.status == .exited(1), "\(env.stderrText)")
            #expect(env.stderrText.contains("did not answer within 1s"), "\(env.stderrText)")

            g.process.signal(SIGCONT)
            // The queued Schedule is applied once the daemon runs again: wait for it in List.
            let deadline = ContinuousClock.now + .seconds(20)
            var listed = ""
            while ContinuousClock.now < deadline {
                listed = try await g.tocsin("list", "--json").stdoutText
                if listed.contains("\"key\":\"while-stopped\"") { break }
            }
            #expect(listed.contains("\"key\":\"while-stopped\""), "after SIGCONT: \(listed)")
        }
    }

    @Test("regression: 'tocsin snooze K 9223372036854s' and Schedule 'after' 9223372036854s are refused naming the field and the limit")
    func durationsPastTheLimit() async throws {
        try await withGateway { g in
            let s = try await g.tocsin("schedule", "--key", "tick", "--title", "Tick", "--every", "1h", "--starting", "+1s")
            #expect(s.status == .exited(0), "\(s.stderrText)")
            try await g.process.waitForOutput(containing: "\"key\":\"tick\"", timeout: .seconds(20))
            let limit = "reaches past 9999-12-31T23:59:59Z, the latest instant Tocsin schedules"

            let snooze = try await g.tocsin("snooze", "tick", "9223372036854s")
            #expect(snooze.status == .exited(1), "\(snooze.stdoutText)")
            #expect(snooze.stderrText == "error: argument 'duration' 9223372036854s \(limit)\n", "\(snooze.stderrText)")
            let busctl = try await g.busctl("call", GatewayFixture.dest, GatewayFixture.path, GatewayFixture.iface, "Snooze", "ss", "tick", "292000y")
            #expect(busctl.status != .exited(0))
            #expect(busctl.stderrText.contains("'duration' 292000y \(limit)"), "\(busctl.stderrText)")

            let after = try await g.gdbus("Schedule", "{'title': <'t'>, 'after': <'9223372036854s'>}")
            #expect(after.status != .exited(0))
            #expect(after.stderrText.contains("'after' 9223372036854s \(limit)"), "\(after.stderrText)")
            let cli = try await g.tocsin("schedule", "--title", "t", "--after", "292000y")
            #expect(cli.status == .exited(1))
            #expect(cli.stderrText.contains("'after' 292000y \(limit)"), "\(cli.stderrText)")

            // Nothing was snoozed (the history had a snooze due in year -290251) and nothing added.
            let history = try await g.tocsin("history", "--json")
            #expect(!history.stdoutText.contains("\"snoozed\""), "\(history.stdoutText)")
            let list = try await g.tocsin("list", "--json")
            let items = try #require(try JSONSerialization.jsonObject(with: Data(list.stdoutText.utf8)) as? [[String: Any]])
            #expect(items.map { $0["key"] as? String } == ["tick"], "\(list.stdoutText)")
            #expect(items.first?["state"] as? String == "scheduled", "\(list.stdoutText)")
        }
    }

    @Test("a malformed --timeout or $TOCSIN_TIMEOUT is refused by name, as a usage error (exit 64)")
    func badTimeout() async throws {
        let flag = try await TestProcess.run(Products.executable("tocsin"), ["list", "--bus", "unix:path=/nonexistent", "--timeout", "soon"])
        #expect(flag.status == .exited(64))
        #expect(flag.stderrText.hasPrefix("Error: invalid --timeout 'soon': "), "\(flag.stderrText)")
        let env = try await TestProcess.run(Products.executable("tocsin"), ["list", "--bus", "unix:path=/nonexistent"],
                                            environment: ["TOCSIN_TIMEOUT": "0"])
        #expect(env.status == .exited(64))
        #expect(env.stderrText.hasPrefix("Error: invalid $TOCSIN_TIMEOUT '0': "), "\(env.stderrText)")
    }

    /// A socket server that accepts every connection and never answers: the handshake with the bus
    /// had no deadline, so `--timeout` was never reached (one `list` waited 11 minutes).
    @Test("regression: a bus that accepts and never answers fails each command at --timeout or $TOCSIN_TIMEOUT, naming the address")
    func silentBus() async throws {
        let dir = TemporaryDirectory(prefix: "tocsin-silentbus")
        let path = dir.path + "/bus"
        let server = try TestProcess("/usr/bin/python3", ["-c", """
            import socket, sys
            s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen()
            print("listening", flush=True)
            held = []
            while True: held.append(s.accept())
            """, path])
        defer { server.signal(SIGKILL) }
        try await server.waitForOutput(containing: "listening", timeout: .seconds(20))
        let address = "unix:path=\(path)"
        let expected = "error: the bus at \(address) accepted the connection but did not complete authentication within 1s (it is stopped, wedged, or not a D-Bus bus); wait longer with --timeout or $TOCSIN_TIMEOUT"

        let runs: [(String, [String], [String: String])] = [
            ("list --timeout", ["list", "--bus", address, "--timeout", "1s"], [:]),
            ("status --timeout", ["status", "--bus", address, "--timeout", "1s"], [:]),
            ("schedule --timeout", ["schedule", "--title", "x", "--after", "1h", "--bus", address, "--timeout", "1s"], [:]),
            ("session bus, $TOCSIN_TIMEOUT", ["list"], ["DBUS_SESSION_BUS_ADDRESS": address, "TOCSIN_TIMEOUT": "1s"]),
        ]
        for (name, arguments, environment) in runs {
            let started = ContinuousClock.now
            // Killed (and the test failed) at the deadline if it still waits.
            let out = try await TestProcess.run(Products.executable("tocsin"), arguments, environment: environment, timeout: .seconds(10))
            let waited = ContinuousClock.now - started
            #expect(out.status == .exited(1), "\(name): \(out.stderrText)")
            #expect(out.stderrText == expected + "\n", "\(name): \(out.stderrText)")
            #expect(out.stdoutText.isEmpty, "\(name): \(out.stdoutText)")
            #expect(waited >= .milliseconds(900) && waited < .seconds(10), "\(name): waited \(waited)")
        }
    }

    /// Regression: any client could make `watch` print a gateway event (the match rule named no
    /// sender), and a lost bus ended `watch` with exit 0 and nothing said.
    @Test("watch shows only the gateway's own signals, and a lost bus is an error (exit 1)")
    func watchSenderAndLostBus() async throws {
        let bus = try await PrivateBus.start()
        let watch = try TestProcess(Products.executable("tocsin"), ["watch", "--bus", bus.address])
        defer { watch.signal(SIGKILL) }
        // The gateway's name, owned by a connection of this test.
        let gateway = try await DBusConnection.connect(address: bus.address)
        defer { gateway.close() }
        _ = try await gateway.requestName(BusName("io.github.tocsin.Gateway"))
        // Wait (bounded) for watch to subscribe: its subscription shows as a match rule on the bus.
        let deadline = ContinuousClock.now + .seconds(20)
        var subscribed = false
        while !subscribed, ContinuousClock.now < deadline {
            let forged = try await TestProcess.run("/usr/bin/dbus-send", ["--bus=\(bus.address)", "--type=signal",
                "/io/github/tocsin/Gateway", "io.github.tocsin.Gateway1.Acknowledged", "string:forged"])
            #expect(forged.status == .exited(0), "\(forged.stderrText)")
            try gateway.emit(path: ObjectPath("/io/github/tocsin/Gateway"),
                             interface: InterfaceName("io.github.tocsin.Gateway1"),
                             member: MemberName("Acknowledged"), arguments: [.string("real")])
            subscribed = (try? await watch.waitForOutput(containing: "Acknowledged real", timeout: .milliseconds(500))) != nil
        }
        #expect(subscribed, "watch never showed the gateway's signal: \(watch.stdout)")
        #expect(!watch.stdout.contains("forged"), "\(watch.stdout)")
        try await bus.crash()
        let status = try await watch.waitForExit(timeout: .seconds(20))
        #expect(status == .exited(1), "\(watch.stderr)")
        #expect(watch.stderr.contains("lost the connection to"), "\(watch.stderr)")
    }

    @Test("regression: DBUS_SESSION_BUS_ADDRESS naming a missing socket or one nobody listens on gets a hint", arguments: ["missing", "unbound"])
    func deadSessionAddress(kind: String) async throws {
        let dir = TemporaryDirectory(prefix: "tocsin-deadbus")
        let path = dir.path + "/bus"
        if kind == "unbound" {
            // A socket file left behind: bound once, never listened on, its process gone.
            let made = try await TestProcess.run("/usr/bin/python3", ["-c", "import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])", path])
            #expect(made.status == .exited(0), "\(made.stderrText)")
            #expect(FileManager.default.fileExists(atPath: path))
        }
        let address = "unix:path=\(path)"
        let out = try await TestProcess.run(Products.executable("tocsin"), ["list"], environment: ["DBUS_SESSION_BUS_ADDRESS": address])
        #expect(out.status == .exited(1), "\(kind): \(out.stderrText)")
        #expect(out.stderrText.hasPrefix("error: cannot connect to the session bus: "), "\(kind): \(out.stderrText)")
        #expect(out.stderrText.contains("(DBUS_SESSION_BUS_ADDRESS is '\(address)', but no bus answers there: the session it belongs to has ended, or the address is wrong; run inside a desktop session or under dbus-run-session)"),
                "\(kind): \(out.stderrText)")

        let explicit = try await TestProcess.run(Products.executable("tocsin"), ["list", "--bus", address])
        #expect(explicit.status == .exited(1))
        #expect(explicit.stderrText.contains("(no bus answers at '\(address)':"), "\(kind): \(explicit.stderrText)")
    }
}
