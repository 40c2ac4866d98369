import Foundation
import Synchronization
import TocsinTesting

/// An Xvfb server on a display number it picks itself (`-displayfd`), so parallel tests never collide.
final class VirtualDisplay: Sendable {
    let process: TestProcess
    /// `:N`, for `DISPLAY`.
    let name: String

    private init(process: TestProcess, name: String) {
        self.process = process
        self.name = name
    }

    static func start() async throws -> VirtualDisplay {
        // Xvfb writes the display number to the given descriptor once it accepts clients;
        // the shell points that descriptor at our stdout pipe.
        let p = try TestProcess("sh", ["-c", "exec Xvfb -displayfd 3 -screen 0 1280x800x24 -nolisten tcp 3>&1"])
        let out: String
        do {
            out = try await p.waitForOutput(containing: "\n", timeout: .seconds(30))
        } catch {
            _ = try? await p.kill()
            throw error
        }
        let number = out.split(separator: "\n").first.map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
        guard !number.isEmpty, number.allSatisfy(\.isNumber) else {
            _ = try? await p.kill()
            throw TestProcessError("Xvfb printed no display number: '\(out)' stderr: \(p.stderr)")
        }
        return VirtualDisplay(process: p, name: ":" + number)
    }

    func stop() async {
        process.signal(SIGTERM)
        if (try? await process.waitForExit(timeout: .seconds(10))) == nil { _ = try? await process.kill() }
    }

    /// Saves the whole screen as a PNG (ImageMagick's `import`).
    func screenshot(to path: String) async throws {
        let r = try await TestProcess.run("import", ["-display", name, "-window", "root", path])
        guard r.status == .exited(0) else { throw TestProcessError("import failed: \(r.stderrText)") }
    }
}

/// A notification server (dunst or python-dbusmock's) on a test bus.
final class NotificationServer: Sendable {
    let process: TestProcess
    let bus: PrivateBus

    private init(process: TestProcess, bus: PrivateBus) {
        self.process = process
        self.bus = bus
    }

    static let name = "org.freedesktop.Notifications"
    static let path = "/org/freedesktop/Notifications"

    /// dunst with the committed test config, drawing on `display`.
    static func dunst(bus: PrivateBus, display: VirtualDisplay) async throws -> NotificationServer {
        var env = bus.environment
        env["DISPLAY"] = display.name
        let p = try TestProcess("dunst", ["-config", GatewayFixture.repositoryRoot + "/contrib/test/dunstrc"], environment: env)
        return try await ready(NotificationServer(process: p, bus: bus))
    }

    /// python-dbusmock's notification daemon with the given capabilities (space-separated).
    static func mock(bus: PrivateBus, capabilities: String) async throws -> NotificationServer {
        let parameters = "{\"capabilities\": \"\(capabilities)\"}"
        let p = try TestProcess("/usr/bin/python3", ["-m", "dbusmock", "--session", "-t", "notification_daemon", "-p", parameters],
                                environment: bus.environment)
        return try await ready(NotificationServer(process: p, bus: bus))
    }

    /// Waits (on the bus, not a timer) until the server owns its name.
    private static func ready(_ s: NotificationServer) async throws -> NotificationServer {
        let wait = try TestProcess("gdbus", ["wait", "--address", s.bus.address, "--timeout", "30", name])
        let status = try await wait.waitForExit(timeout: .seconds(40))
        guard status == .exited(0), s.process.status == nil else {
            _ = try? await s.process.kill()
            throw TestProcessError("notification server did not appear (\(status)); stderr: \(s.process.stderr)")
        }
        return s
    }

    func stop() async {
        process.signal(SIGTERM)
        if (try? await process.waitForExit(timeout: .seconds(10))) == nil { _ = try? await process.kill() }
    }

    /// Makes the mock server emit `ActionInvoked(id, action)`, as a button press would.
    func pressMock(id: UInt32, action: String) async throws {
        try await emitMock("ActionInvoked", "us", "[<uint32 \(id)>, <'\(action)'>]")
    }

    /// Makes the mock server emit one of the protocol's signals, with arguments in GVariant text.
    func emitMock(_ member: String, _ signature: String, _ arguments: String) async throws {
        let r = try await TestProcess.run("gdbus", [
            "call", "--address", bus.address, "-d", Self.name, "-o", Self.path,
            "-m", "org.freedesktop.DBus.Mock.EmitSignal", Self.name, member, signature, arguments,
        ])
        guard r.status == .exited(0) else { throw TestProcessError("EmitSignal failed: \(r.stderrText)") }
    }

    /// `dunstctl ARGS` against this server.
    func dunstctl(_ args: String...) async throws -> TestProcess.Output {
        try await TestProcess.run("dunstctl", args, environment: bus.environment)
    }
}

/// Records the notification protocol on a bus as JSON lines: every call to, and signal from,
/// `org.freedesktop.Notifications`, and the return of each call (so the id a `Notify` got is known).
/// A bus monitor sees what the server received, byte-exact, whichever server it is.
final class NotificationMonitor: Sendable {
    let process: TestProcess

    private init(process: TestProcess) { self.process = process }

    static func start(bus: PrivateBus) async throws -> NotificationMonitor {
        let p = try TestProcess("/usr/bin/python3", ["-c", "ADDRESS = '\(bus.address)'\n" + script])
        do {
            try await p.waitForOutput(containing: "\"ready\"", timeout: .seconds(20))
        } catch {
            _ = try? await p.kill()
            throw error
        }
        return NotificationMonitor(process: p)
    }

    struct Message: @unchecked Sendable {
        var kind: String
        var member: String
        var args: [Any]
    }

    var messages: [Message] { Self.parse(process.stdout) }

    static func parse(_ text: String) -> [Message] {
        text.split(separator: "\n").compactMap { line in
            guard let o = (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any],
                  let kind = o["kind"] as? String, let member = o["member"] as? String else { return nil }
            return Message(kind: kind, member: member, args: o["args"] as? [Any] ?? [])
        }
    }

    /// Waits until `count` messages of this kind and member were seen; returns them in order.
    func wait(_ kind: String, _ member: String, count: Int = 1, timeout: Duration = .seconds(30)) async throws -> [Message] {
        let needle = "{\"kind\": \"\(kind)\", \"member\": \"\(member)\""
        let state = try await process.output.wait("\(count) × \(kind) \(member) on the bus", timeout: timeout) {
            $0.stdoutText.components(separatedBy: needle).count - 1 >= count || $0.status != nil
        }
        let found = Self.parse(state.stdoutText).filter { $0.kind == kind && $0.member == member }
        guard found.count >= count else {
            throw TestProcessError("monitor ended after \(found.count) × \(member); stderr: \(process.stderr)")
        }
        return found
    }

    func stop() async { _ = try? await process.kill() }

    private static let script = #"""
import json
import dbus
import dbus.mainloop.glib
from gi.repository import GLib

IFACE = "org.freedesktop.Notifications"

def plain(v):
    if isinstance(v, dbus.Boolean):
        return bool(v)
    if isinstance(v, (dbus.Dictionary, dict)):
        return {str(k): plain(x) for k, x in v.items()}
    if isinstance(v, (dbus.Array, list, tuple, dbus.Struct)):
        return [plain(x) for x in v]
    if isinstance(v, (dbus.String, dbus.ObjectPath, str)):
        return str(v)
    if isinstance(v, (dbus.Double, float)):
        return float(v)
    return int(v)

def emit(kind, member, args):
    print(json.dumps({"kind": kind, "member": member, "args": [plain(a) for a in args]}), flush=True)

calls = {}

def on_message(connection, message):
    t = message.get_type()
    if t == 1 and message.get_interface() == IFACE:
        calls[(message.get_sender(), message.get_serial())] = message.get_member()
        emit("call", message.get_member(), message.get_args_list())
    elif t in (2, 3):
        member = calls.pop((message.get_destination(), message.get_reply_serial()), None)
        if member is not None:
            emit("return" if t == 2 else "error", member, message.get_args_list())
    elif t == 4 and message.get_interface() == IFACE:
        emit("signal", message.get_member(), message.get_args_list())

dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)
bus = dbus.bus.BusConnection(ADDRESS)
bus.add_message_filter(on_message)
bus.call_blocking("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus.Monitoring",
                  "BecomeMonitor", "asu", ([], 0))
print(json.dumps({"kind": "ready", "member": "", "args": []}), flush=True)
GLib.MainLoop().run()
"""#
}

/// The gateway's own signals, via the committed example client.
final class GatewayWatcher: Sendable {
    let process: TestProcess

    private init(process: TestProcess) { self.process = process }

    static func start(bus: PrivateBus) async throws -> GatewayWatcher {
        let p = try TestProcess("/usr/bin/python3", [GatewayFixture.repositoryRoot + "/contrib/clients/watch-fired.py", "--address", bus.address])
        try await p.waitForOutput(containing: "\"ready\"", timeout: .seconds(20))
        return GatewayWatcher(process: p)
    }

    /// Waits for the `count`-th signal `name` whose first argument is `key`; returns its arguments.
    func wait(_ name: String, key: String, count: Int = 1, timeout: Duration = .seconds(30)) async throws -> [Any] {
        let needle = "\"event\": \"\(name)\""
        let state = try await process.output.wait("\(name) for \(key)", timeout: timeout) { o in
            Self.events(o.stdoutText, needle: needle, key: key).count >= count || o.status != nil
        }
        let found = Self.events(state.stdoutText, needle: needle, key: key)
        guard found.count >= count else { throw TestProcessError("watcher ended; stderr: \(process.stderr)") }
        return found[count - 1]
    }

    private static func events(_ text: String, needle: String, key: String) -> [[Any]] {
        text.split(separator: "\n").filter { $0.contains(needle) }.compactMap { line in
            guard let o = (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any],
                  let args = o["args"] as? [Any], args.first as? String == key else { return nil }
            return args
        }
    }

    func stop() async { _ = try? await process.kill() }
}

/// Stops what a test started, in reverse order, whether the test passed or threw.
final class Teardown: Sendable {
    private let steps = Mutex<[@Sendable () async -> Void]>([])

    func add(_ step: @escaping @Sendable () async -> Void) { steps.withLock { $0.append(step) } }

    fileprivate func run() async {
        let all = steps.withLock { s -> [@Sendable () async -> Void] in defer { s = [] }; return s }
        for step in all.reversed() { await step() }
    }
}

func withTeardown<T: Sendable>(_ body: (Teardown) async throws -> T) async throws -> T {
    let t = Teardown()
    do {
        let r = try await body(t)
        await t.run()
        return r
    } catch {
        await t.run()
        throw error
    }
}
