import DBus
import Testing
import TocsinConfig
import TocsinCore
import TocsinGateway
import TocsinTesting
import TocsinTime
import TocsinModel

/// The whole daemon (`TocsinDaemon`, what `tocsin daemon` runs) in the test's own process, on a
/// private bus and a virtual clock, driven by clients we did not write (gdbus, dbus-python).
@Suite("Daemon in-process")
struct DaemonInProcessTests {
    static let t0 = Instant(seconds: 1_772_442_000)
    static let config = """
        [daemon]
        missed = "skip"
        timezone = "UTC"

        [backend.events]
        type = "dbus-signal"
        """

    static func start(bus: PrivateBus, state: String, clock: VirtualClock, config: String = Self.config,
                      extra: [any BackendFactory] = [],
                      log: WaitableState<[String]>? = nil,
                      configure: @escaping @Sendable (inout DaemonSetup) -> Void = { _ in }) async throws -> InProcessDaemon {
        try await InProcessDaemon.start(.init(config: config, state: state, clock: clock, connect: InProcessDaemon.bus(bus.address),
                                              backends: { InProcessDaemon.signalBackend($0) + extra },
                                              log: log, configure: configure))
    }

    func gdbus(_ address: String, _ method: String, _ args: String...) async throws -> TestProcess.Output {
        try await TestProcess.run("gdbus", Array(Self.gdbusCall(address, method).dropFirst()) + args)
    }

    @Test("restarted after downtime: the catch-up's Missed reaches a subscriber that waited for the daemon")
    func missedAtStartIsSignalled() async throws {
        try await PrivateBus.with { bus in
            let dir = TemporaryDirectory(prefix: "tocsin-inprocess")
            let clock = VirtualClock(now: Self.t0)
            let first = try await Self.start(bus: bus, state: dir.path + "/state", clock: clock)
            let due = Self.t0 + .seconds(60)
            let scheduled = try await gdbus(bus.address, "Schedule", "{'key': <'late'>, 'title': <'t'>, 'at': <'@\(due.seconds)'>}")
            #expect(scheduled.stdoutText.contains("'late'"), "\(scheduled.stderrText)")
            await first.shutdown()

            // A subscriber that is listening before the daemon comes back.
            let watcher = try TestProcess("/usr/bin/python3", ["-u", "-c", """
                import dbus, dbus.mainloop.glib
                from gi.repository import GLib
                dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)
                bus = dbus.bus.BusConnection('\(bus.address)')
                loop = GLib.MainLoop()
                def on_missed(key, due):
                    print('Missed', key, int(due), flush=True)
                    loop.quit()
                bus.add_signal_receiver(on_missed, 'Missed', 'io.github.tocsin.Gateway1')
                bus.get_object('org.freedesktop.DBus', '/org/freedesktop/DBus').GetId(dbus_interface='org.freedesktop.DBus')
                print('ready', flush=True)
                GLib.timeout_add_seconds(30, loop.quit)
                loop.run()
                """])
            _ = try await watcher.waitForOutput(containing: "ready", timeout: .seconds(20))

            clock.advance(by: .hours(1))
            let second = try await Self.start(bus: bus, state: dir.path + "/state", clock: clock)
            _ = try await watcher.waitForOutput(containing: "Missed late \(due.microseconds)\n", timeout: .seconds(20))
            #expect(await second.daemon.center.activeCount == 0, "an 'at' that was missed under 'skip' is done")
            await second.shutdown()
            _ = try? await watcher.kill()
        }
    }

    @Test("Schedule, List and Cancel through gdbus; Fired (seen by dbus-monitor) with the due time, never for a cancelled key",
          arguments: DaemonMode.onABus)
    func gatewayThroughGdbus(mode: DaemonMode) async throws {
        try await DaemonHarness.run(mode, config: Self.config) { client in
            let address = try #require(client.bus).address
            let monitor = try TestProcess("dbus-monitor", ["--address", address,
                                                           "type='signal',interface='io.github.tocsin.Gateway1',member='Fired'"])
            _ = try await monitor.waitForOutput(containing: "NameAcquired", timeout: .seconds(20))
            let due = Instant(seconds: (client.now + client.shortDelay).seconds)
            for key in ["a", "b"] {
                let out = try await gdbus(address, "Schedule", "{'key': <'\(key)'>, 'title': <'T \(key)'>, 'at': <'@\(due.seconds)'>}")
                #expect(out.status == .exited(0), "\(out.stderrText)")
            }
            let anonymous = try await gdbus(address, "Schedule", "{'title': <'anon'>, 'after': <'1h'>}")
            #expect(anonymous.stdoutText.count > 36, "a generated key is a UUID: \(anonymous.stdoutText)")
            let list = try await gdbus(address, "List").stdoutText
            #expect(list.contains("'T a'") && list.contains("'T b'") && list.contains("'anon'"), "\(list)")
            #expect(try await gdbus(address, "Cancel", "b").stdoutText.contains("true"))
            #expect(try await gdbus(address, "Cancel", "b").stdoutText.contains("false"))
            try #require(client.beforeDue(due), "\(mode): the calls took longer than the delay to the due time")
            await client.elapse(client.shortDelay)
            // The info dictionary (with `due`) is printed after the key, so this waits for the whole signal.
            let fired = try await monitor.waitForOutput(containing: "int64 \(due.microseconds)", timeout: .seconds(20))
            #expect(fired.contains("string \"a\""), "\(fired)")
            #expect(!monitor.stdout.contains("string \"b\""), "a cancelled notification never fires")
            _ = try? await monitor.kill()
        }
    }

    @Test("peer-to-peer: when the peer leaves, the daemon waits for the next one and serves it the same state")
    func nextPeerIsServed() async throws {
        let server = try await DBusServer.listen()
        defer { server.close() }
        let dir = TemporaryDirectory(prefix: "tocsin-inprocess")
        let log = WaitableState<[String]>([])
        let starting = Task {
            try await InProcessDaemon.start(.init(config: Self.config, state: dir.path + "/state", clock: VirtualClock(now: Self.t0),
                                                  connect: { try await server.accept() }, log: log))
        }
        let first = try await DBusConnection.connect(address: server.address, registerWithBus: false)
        let daemon = try await starting.value
        let spec = DBusValue.vardict([("key", "kept"), ("title", "Kept"), ("after", "1h")])
        _ = try await first.call(destination: nil, path: Gateway.objectPath, interface: Gateway.interface, member: "Schedule",
                                 arguments: [spec], timeout: .seconds(20))
        first.close()
        try await log.wait("the daemon to see its peer gone", timeout: .seconds(20)) {
            $0.contains { $0.contains("lost the bus connection") }
        }
        let second = try await DBusConnection.connect(address: server.address, registerWithBus: false)
        defer { second.close() }
        try await log.wait("the daemon to serve the next peer", timeout: .seconds(20)) {
            $0.filter { $0.contains("serving the D-Bus API") }.count >= 2
        }
        let pending = try await second.call(destination: nil, path: "/io/github/tocsin/Gateway", interface: "org.freedesktop.DBus.Properties",
                                            member: "Get", arguments: ["io.github.tocsin.Gateway1", "Pending"], timeout: .seconds(20))
        #expect(pending.first?.unwrappedVariant == .uint32(1))
        await daemon.shutdown()
    }

    /// A call sent while start-up is held, and what its answer must show once start-up ends.
    struct EarlyCall: Sendable, CustomTestStringConvertible {
        var name: String
        var command: @Sendable (_ address: String) -> [String]
        var answer: String
        /// How many times the config is reloaded by the time the call is answered.
        var reloads = 0
        var testDescription: String { name }
    }

    static let earlyCalls: [EarlyCall] = [
        EarlyCall(name: "List shows the config's notification", command: { gdbusCall($0, "List") }, answer: "'From config'"),
        EarlyCall(name: "the Pending property counts it",
                  command: { ["busctl", "--address=\($0)", "get-property", "io.github.tocsin.Gateway", "/io/github/tocsin/Gateway",
                              "io.github.tocsin.Gateway1", "Pending"] },
                  answer: "u 1\n"),
        EarlyCall(name: "Status counts it", command: { gdbusCall($0, "Status") }, answer: "'pending': <uint32 1>"),
        EarlyCall(name: "Reload reloads", command: { gdbusCall($0, "Reload") }, answer: "()", reloads: 1),
    ]

    static func gdbusCall(_ address: String, _ method: String) -> [String] {
        ["gdbus", "call", "--address", address, "-d", "io.github.tocsin.Gateway", "-o", "/io/github/tocsin/Gateway",
         "-m", "io.github.tocsin.Gateway1.\(method)"]
    }

    @Test("a call sent while the daemon is still loading its state waits for start-up, and answers as after it",
          arguments: earlyCalls)
    func callDuringStartUp(row: EarlyCall) async throws {
        try await PrivateBus.with { bus in
            let dir = TemporaryDirectory(prefix: "tocsin-inprocess")
            let clock = VirtualClock(now: Self.t0)
            let held = HeldBackend(holding: .start)
            let log = WaitableState<[String]>([])
            let config = Self.config + "\n[backend.held]\ntype = \"held\"\n\n[[notification]]\nkey = \"cfg\"\ntitle = \"From config\"\nafter = \"1h\"\n"
            let starting = Task {
                try await Self.start(bus: bus, state: dir.path + "/state", clock: clock, config: config, extra: [held],
                                     log: log)
            }
            // The backend is started after the bus name is taken: the API is served, the state not loaded.
            try await held.phase.wait("start-up to reach the backends", timeout: .seconds(20)) { $0.reached }
            let argv = row.command(bus.address)
            let call = try TestProcess(argv[0], Array(argv.dropFirst()))
            try await log.wait("the daemon to take the call and hold it", timeout: .seconds(20)) {
                $0.contains("calls wait until the state is loaded")
            }
            held.phase.update { $0.open = true }
            #expect(try await call.waitForExit(timeout: .seconds(20)) == .exited(0), "\(row.name): \(call.stderr)")
            #expect(call.stdout.contains(row.answer), "\(row.name): \(call.stdout)")
            #expect(log.value.filter { $0 == "reloaded" }.count == row.reloads, "\(row.name)")
            let running = try await starting.value
            await running.shutdown()
        }
    }
}
