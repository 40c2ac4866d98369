import Foundation
import Testing
import TocsinTesting

/// The `libnotify` backend in the real daemon, against real notification servers on the test bus:
/// dunst under Xvfb (what a person sees), and python-dbusmock's server (any button can be "pressed").
@Suite("Desktop popups against real notification servers")
struct DesktopPopupTests {
    static let config = """
        [backend.popup]
        type = "libnotify"
        snooze = "10min"

        [backend.events]
        type = "dbus-signal"
        """

    /// Where the screenshot goes: under `.build`, which is never committed.
    static let screenshotPath = GatewayFixture.repositoryRoot + "/.build/test-artifacts/desktop-popup.png"

    @Test("dunst receives the exact popup, shows it on screen, and its default action reaches the center")
    func dunst() async throws {
        try await withGateway(config: Self.config) { g in try await withTeardown { t in
            let display = try await VirtualDisplay.start()
            t.add { await display.stop() }
            let server = try await NotificationServer.dunst(bus: g.bus, display: display)
            t.add { await server.stop() }
            let monitor = try await NotificationMonitor.start(bus: g.bus)
            t.add { await monitor.stop() }
            let watcher = try await GatewayWatcher.start(bus: g.bus)
            t.add { await watcher.stop() }

            let post = try await g.gdbus("PostNow", """
                {'key': <'tea'>, 'title': <'Tea <time>'>, 'body': <'Fish & <b>chips</b>'>, 'urgency': <'critical'>, \
                'actions': <{'open': 'Open page'}>}
                """)
            #expect(post.status == .exited(0), "\(post.stderrText)")

            let call = try #require(try await monitor.wait("call", "Notify").first)
            let id = try #require(try await monitor.wait("return", "Notify").first?.args.first as? Int)
            #expect(call.args.count == 8)
            #expect(call.args[0] as? String == "Tocsin")
            #expect(call.args[1] as? Int == 0, "a fresh key replaces nothing")
            #expect(call.args[3] as? String == "Tea <time>")
            #expect(call.args[4] as? String == "Fish &amp; &lt;b&gt;chips&lt;/b&gt;", "dunst has body-markup: the body is escaped")
            #expect(actionPairs(call.args[5]) == ["open": "Open page", "default": "Open"])
            let hints = try #require(call.args[6] as? [String: Any])
            #expect(hints["urgency"] as? Int == 2)
            #expect(call.args[7] as? Int == -1, "no timeout configured: the server decides")

            let count = try await server.dunstctl("count")
            #expect(count.stdoutText.contains("Currently displayed: 1"), "\(count.stdoutText)")

            try FileManager.default.createDirectory(atPath: (Self.screenshotPath as NSString).deletingLastPathComponent,
                                                    withIntermediateDirectories: true)
            try await display.screenshot(to: Self.screenshotPath)
            let colours = try await TestProcess.run("identify", ["-format", "%k", Self.screenshotPath])
            #expect((Int(colours.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0) > 2,
                    "the screen should show more than a blank background: \(colours.stdoutText)")

            // dunst's "action" on the first popup invokes its default action (a click on the body).
            let action = try await server.dunstctl("action", "0")
            #expect(action.status == .exited(0), "\(action.stderrText)")
            let invoked = try await monitor.wait("signal", "ActionInvoked")
            #expect(invoked.first?.args.first as? Int == id)
            let args = try await watcher.wait("ActionInvoked", key: "tea")
            #expect(args.count == 3)
            #expect(args[1] as? String == "default")
        } }
    }

    @Test("custom buttons, Snooze and closing on withdraw, against dbusmock's server without body-markup")
    func mockActions() async throws {
        try await withGateway(config: Self.config) { g in try await withTeardown { t in
            let (server, monitor, watcher) = try await mockSession(g, t)

            // A notification that keeps its key after firing (so its user_info and snooze apply).
            let sched = try await g.gdbus("Schedule", """
                {'key': <'sn'>, 'title': <'Sn'>, 'body': <'a <b> & c'>, 'every': <'1h'>, 'starting': <'+1s'>, \
                'actions': <{'open': 'Open page', 'snooze': 'Later'}>, 'user_info': <{'ticket': '42'}>}
                """)
            #expect(sched.status == .exited(0), "\(sched.stderrText)")
            _ = try await watcher.wait("Fired", key: "sn")
            let call = try #require(try await monitor.wait("call", "Notify").first)
            #expect(call.args[4] as? String == "a <b> & c", "no body-markup: plain text, unescaped")
            #expect(actionPairs(call.args[5]) == ["open": "Open page", "snooze": "Later", "default": "Open"])
            let snID = try #require(try await monitor.wait("return", "Notify").first?.args.first as? Int)

            // A custom button comes back as ActionInvoked with the notification's user_info.
            try await server.pressMock(id: UInt32(snID), action: "open")
            let opened = try await watcher.wait("ActionInvoked", key: "sn")
            #expect(opened[1] as? String == "open")
            #expect((opened[2] as? [String: Any])?["ticket"] as? String == "42")

            // Snooze snoozes for the configured length.
            let pressed = Date()
            try await server.pressMock(id: UInt32(snID), action: "snooze")
            let snoozed = try await watcher.wait("Snoozed", key: "sn")
            let until = try #require(snoozed[1] as? Int)
            let seconds = Double(until) / 1e6 - pressed.timeIntervalSince1970
            #expect(abs(seconds - 600) < 30, "snooze = \"10min\" from the config; got \(seconds) s")
            // Snoozing withdraws the notification: its popup is closed on the server.
            let close = try await monitor.wait("call", "CloseNotification")
            #expect(close.first?.args.first as? Int == snID)
        } }
    }

    @Test("a later firing of the same key replaces its popup in place instead of stacking")
    func replaceByKey() async throws {
        try await withGateway(config: Self.config) { g in try await withTeardown { t in
            let server = try await NotificationServer.mock(bus: g.bus, capabilities: "body body-markup actions")
            t.add { await server.stop() }
            let monitor = try await NotificationMonitor.start(bus: g.bus)
            t.add { await monitor.stop() }

            let sched = try await g.gdbus("Schedule", "{'key': <'rep'>, 'title': <'Rep'>, 'every': <'1s'>, 'count': <2>}")
            #expect(sched.status == .exited(0), "\(sched.stderrText)")
            let calls = try await monitor.wait("call", "Notify", count: 2)
            let returns = try await monitor.wait("return", "Notify", count: 2)
            let firstID = try #require(returns[0].args.first as? Int)
            #expect(calls[0].args[1] as? Int == 0)
            #expect(calls[1].args[1] as? Int == firstID, "the second Notify must carry the first popup's id")
            #expect(returns[1].args.first as? Int == firstID)
        } }
    }

    @Test("without a notification server the popup fails fast and is retried; dbus-signal still fires; a server that appears gets it")
    func noServer() async throws {
        try await withGateway(config: Self.config) { g in try await withTeardown { t in
            let watcher = try await GatewayWatcher.start(bus: g.bus)
            t.add { await watcher.stop() }
            let monitor = try await NotificationMonitor.start(bus: g.bus)
            t.add { await monitor.stop() }

            _ = try await g.gdbus("PostNow", "{'key': <'lonely'>, 'title': <'Lonely'>}")
            let fired = try await watcher.wait("Fired", key: "lonely")
            #expect(fired.count == 2)
            let log = try await g.process.waitForStderr(containing: "no notification server on the session bus", timeout: .seconds(20))
            #expect(log.contains("will retry"))
            #expect(log.contains("backend=popup"))

            // The retry (bounded backoff) reaches a server that starts meanwhile.
            let server = try await NotificationServer.mock(bus: g.bus, capabilities: "body actions")
            t.add { await server.stop() }
            let call = try #require(try await monitor.wait("call", "Notify").first)
            #expect(call.args[3] as? String == "Lonely")
            #expect(g.process.status == nil, "the daemon is still running")
        } }
    }

    @Test("health before the first popup follows the server without loading libnotify or starting GLib's bus threads; after a popup, the same answer")
    func healthBeforeFirstPopup() async throws {
        try await withGateway(config: Self.config) { g in try await withTeardown { t in
            func desktopHealth() async throws -> String? {
                let out = try await TestProcess.run(Products.executable("tocsin"), ["status", "--json", "--bus", g.bus.address])
                #expect(out.status == .exited(0), "\(out.stderrText)")
                let object = try JSONSerialization.jsonObject(with: Data(out.stdoutText.utf8)) as? [String: Any]
                return (object?["backends"] as? [String: String])?["popup"]
            }
            // GDBus's worker threads, which live as long as the daemon once a GLib bus connection was made.
            func glibThreads() -> Set<String> {
                let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(g.process.pid)/task")) ?? []
                return Set(tasks.compactMap { try? String(contentsOfFile: "/proc/\(g.process.pid)/task/\($0)/comm", encoding: .utf8) }
                    .map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
                    .filter { $0 == "gmain" || $0 == "gdbus" })
            }
            // Whether libnotify (and with it GLib, GIO and gdk-pixbuf) is mapped into the daemon.
            // (Read by cat: procfs reports a size of 0, which file APIs that trust the size read as empty.)
            func libNotifyLoaded() async throws -> Bool {
                let maps = try await TestProcess.run("cat", ["/proc/\(g.process.pid)/maps"])
                #expect(maps.stdoutText.contains("/libdbus-1.so"), "read the daemon's maps: \(maps.stderrText)")
                return maps.stdoutText.contains("/libnotify.so.4")
            }
            #expect(try await desktopHealth() == "no notification server")
            let server = try await NotificationServer.mock(bus: g.bus, capabilities: "body actions")
            t.add { await server.stop() }
            #expect(try await desktopHealth() == "ok")
            #expect(glibThreads().isEmpty, "status started GLib's bus threads before any popup")
            #expect(try await !libNotifyLoaded(), "status loaded libnotify before any popup")

            // A popup starts the GLib link; health is then asked over its connection, with the same answer.
            let monitor = try await NotificationMonitor.start(bus: g.bus)
            t.add { await monitor.stop() }
            _ = try await g.gdbus("PostNow", "{'key': <'first'>, 'title': <'First'>}")
            _ = try #require(try await monitor.wait("return", "Notify").first)
            #expect(glibThreads() == ["gmain", "gdbus"], "the popup's GLib connection runs its threads")
            #expect(try await libNotifyLoaded())
            #expect(try await desktopHealth() == "ok")
        } }
    }

    @Test("the session bus dies and comes back: the daemon stays up and popups reach the new bus's server")
    func busRestart() async throws {
        try await withTeardown { t in
            let listen = try PrivateBus.temporarySocketAddress()
            let bus = try await PrivateBus.start(listenAddress: listen)
            t.add { await bus.stop() }
            // The address without the guid: the restarted bus has a new one, and libnotify reads this variable.
            let daemon = try DaemonUnderTest(config: Self.config, environment: ["DBUS_SESSION_BUS_ADDRESS": listen])
            let p = try daemon.start(["--bus", listen])
            t.add { p.signal(SIGKILL); _ = try? await p.waitForExit(timeout: .seconds(10)) }
            try await p.waitForStderr(containing: "serving the D-Bus API", timeout: .seconds(30))

            let first = try await NotificationServer.mock(bus: bus, capabilities: "body actions")
            t.add { await first.stop() }
            _ = try await TestProcess.run("gdbus", ["call", "--address", bus.address, "-d", GatewayFixture.dest, "-o", GatewayFixture.path,
                                                    "-m", "\(GatewayFixture.iface).PostNow", "{'key': <'one'>, 'title': <'Before'>}"])
            try await first.process.waitForOutput(containing: "\"Before\"", timeout: .seconds(20))

            try await bus.crash()
            try await p.waitForStderr(containing: "lost the bus connection; reconnecting", timeout: .seconds(20))

            let again = try await PrivateBus.start(listenAddress: listen)
            t.add { await again.stop() }
            _ = try await p.output.wait("second 'serving the D-Bus API'", timeout: .seconds(30)) {
                $0.stderrText.components(separatedBy: "serving the D-Bus API").count >= 3
            }
            let second = try await NotificationServer.mock(bus: again, capabilities: "body actions")
            t.add { await second.stop() }
            _ = try await TestProcess.run("gdbus", ["call", "--address", again.address, "-d", GatewayFixture.dest, "-o", GatewayFixture.path,
                                                    "-m", "\(GatewayFixture.iface).PostNow", "{'key': <'two'>, 'title': <'After'>}"])
            try await second.process.waitForOutput(containing: "\"After\"", timeout: .seconds(30))
            // GLib's shared session connection is documented to raise SIGTERM when the bus closes unless
            // told not to (the backend turns that off); nothing about the bus loss may stop the daemon.
            #expect(p.status == nil)
            #expect(!p.stderr.contains("stopping"), "the daemon must not stop because the bus went away: \(p.stderr.suffix(2000))")
        }
    }
}

/// Notify's `actions` (`as`, id/label pairs) as a dictionary: libnotify sends them in hash order.
private func actionPairs(_ value: Any) -> [String: String] {
    guard let list = value as? [String], list.count % 2 == 0 else { return [:] }
    var out: [String: String] = [:]
    for i in stride(from: 0, to: list.count, by: 2) { out[list[i]] = list[i + 1] }
    return out
}

/// Popups of alarms: Dismiss and Snooze buttons that act on the ringing alarm in the center.
@Suite("Alarm popups")
struct AlarmPopupTests {
    static var config: String {
        """
        [backend.popup]
        type = "libnotify"

        [backend.alarm]
        type = "sound"
        file = "\(GatewayFixture.repositoryRoot)/contrib/sounds/alarm.wav"
        player = ["/bin/true", "{file}"]
        every = "1min"

        [backend.events]
        type = "dbus-signal"
        """
    }

    @Test("an alarm popup carries Dismiss and Snooze; Dismiss acknowledges, Snooze snoozes, as tocsin list and the signals show")
    func dismissAndSnooze() async throws {
        try await withGateway(config: Self.config) { g in try await withTeardown { t in
            let (server, monitor, watcher) = try await mockSession(g, t)

            for key in ["wake", "nap"] {
                let s = try await g.gdbus("Schedule", "{'key': <'\(key)'>, 'title': <'Alarm \(key)'>, 'after': <'1s'>, 'backends': <['popup', 'alarm', 'events']>}")
                #expect(s.status == .exited(0), "\(s.stderrText)")
            }
            _ = try await watcher.wait("Fired", key: "wake")
            _ = try await watcher.wait("Fired", key: "nap")
            let calls = try await monitor.wait("call", "Notify", count: 2)
            for call in calls {
                let pairs = actionPairs(call.args[5])
                #expect(pairs["dismiss"] == "Dismiss", "\(pairs)")
                #expect(pairs["snooze"] == "Snooze", "\(pairs)")
            }
            let ids = try await monitor.wait("return", "Notify", count: 2).compactMap { $0.args.first as? Int }
            #expect(ids.count == 2)
            let list = try await g.tocsin("list", "--json")
            #expect(list.stdoutText.contains("\"key\":\"wake\"") && list.stdoutText.contains("\"state\":\"ringing\""), "\(list.stdoutText)")

            // The first Notify belongs to whichever fired first: find each key's popup by its summary.
            let idOf = Dictionary(uniqueKeysWithValues: zip(calls.map { ($0.args[3] as? String) ?? "" }, ids))
            try await server.pressMock(id: UInt32(try #require(idOf["Alarm wake"])), action: "dismiss")
            _ = try await watcher.wait("Acknowledged", key: "wake")
            try await server.pressMock(id: UInt32(try #require(idOf["Alarm nap"])), action: "snooze")
            _ = try await watcher.wait("Snoozed", key: "nap")

            let after = try await g.tocsin("list", "--json")
            let items = try #require(try JSONSerialization.jsonObject(with: Data(after.stdoutText.utf8)) as? [[String: Any]])
            #expect(!items.contains { $0["key"] as? String == "wake" }, "an acknowledged one-shot alarm is still listed")
            #expect(items.first { $0["key"] as? String == "nap" }?["state"] as? String == "snoozed")
        } }
    }
}

extension AlarmPopupTests {
    /// Regression: an alarm's popup closed by the person (not acknowledged) while the sound rang
    /// on never came back, and with it the buttons to stop the alarm.
    @Test("a ringing alarm's popup closed by the person comes back at the next ring, with its buttons; an open one is left as it is")
    func closedPopupComesBack() async throws {
        let config = Self.config.replacingOccurrences(of: "every = \"1min\"", with: "every = \"2s\"")
        try await withGateway(config: config, arguments: ["--log-level", "debug"]) { g in try await withTeardown { t in
            let (server, monitor, watcher) = try await mockSession(g, t)
            let s = try await g.gdbus("Schedule", "{'key': <'wake'>, 'title': <'Alarm wake'>, 'after': <'1s'>, 'backends': <['popup', 'alarm', 'events']>}")
            #expect(s.status == .exited(0), "\(s.stderrText)")
            let first = try #require(try await monitor.wait("return", "Notify").first?.args.first as? Int)
            // Ring 2 reached the popup backend too (its delivery ends long before ring 3, 2 s on).
            _ = try await g.process.waitForStderr(containing: "ring=3", timeout: .seconds(15))
            #expect(monitor.messages.filter { $0.kind == "call" && $0.member == "Notify" }.count == 1,
                    "ring 2 replaced the open popup: \(monitor.messages.map(\.member))")

            // The person closes it (reason 2, dismissed by the user), without acknowledging.
            try await server.emitMock("NotificationClosed", "uu", "[<uint32 \(first)>, <uint32 2>]")
            let calls = try await monitor.wait("call", "Notify", count: 2, timeout: .seconds(15))
            #expect(calls[1].args[3] as? String == "Alarm wake")
            let pairs = actionPairs(calls[1].args[5])
            #expect(pairs["dismiss"] == "Dismiss" && pairs["snooze"] == "Snooze", "\(pairs)")
            #expect(calls[1].args[1] as? Int == 0, "shown afresh, not as a replacement of the closed popup")
            let second = try #require(try await monitor.wait("return", "Notify", count: 2)[1].args.first as? Int)

            // Open again: the next ring leaves it be.
            let rang = g.process.stderr.components(separatedBy: "ring=").count - 1
            _ = try await g.process.output.wait("one ring more", timeout: .seconds(15)) {
                $0.stderrText.components(separatedBy: "ring=").count - 1 > rang + 1
            }
            #expect(monitor.messages.filter { $0.kind == "call" && $0.member == "Notify" }.count == 2, "\(monitor.messages.map(\.member))")

            try await server.pressMock(id: UInt32(second), action: "dismiss")
            _ = try await watcher.wait("Acknowledged", key: "wake")
        } }
    }
}

/// dbusmock's notification server (with actions, without body markup), a monitor of what it is
/// sent, and a watcher of the gateway's signals, all stopped by `t`.
func mockSession(_ g: GatewayFixture, _ t: Teardown) async throws -> (NotificationServer, NotificationMonitor, GatewayWatcher) {
    let server = try await NotificationServer.mock(bus: g.bus, capabilities: "body actions")
    t.add { await server.stop() }
    let monitor = try await NotificationMonitor.start(bus: g.bus)
    t.add { await monitor.stop() }
    let watcher = try await GatewayWatcher.start(bus: g.bus)
    t.add { await watcher.stop() }
    return (server, monitor, watcher)
}
