import DBus
import Logging
import Testing
import TocsinConfig
import TocsinCore
import TocsinDBusSignalBackend
import TocsinGateway
import TocsinTesting
import TocsinTime

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

    final class Running: Sendable {
        let daemon: TocsinDaemon
        let stop: AsyncStream<TocsinDaemon.Control>.Continuation
        let task: Task<Void, Never>
        let clock: VirtualClock
        init(_ d: TocsinDaemon, _ s: AsyncStream<TocsinDaemon.Control>.Continuation, _ t: Task<Void, Never>, clock: VirtualClock) {
            daemon = d; stop = s; task = t; self.clock = clock
        }

        /// Stops the daemon. Its grace for deliveries still running (a hung service) elapses on
        /// the daemon's clock, which is this virtual one: once something new waits on it, the
        /// clock is moved past the grace, so the stop never waits for a clock nobody moves.
        func shutdown() async {
            let before = clock.sleeperCount
            stop.yield(.stop)
            await withTaskGroup(of: Void.self) { group in
                group.addTask { [task] in await task.value }
                group.addTask { [clock] in
                    while !Task.isCancelled {
                        await clock.waitForSleepers(atLeast: before + 1)
                        if Task.isCancelled { return }
                        clock.advance(by: TocsinCenter.shutdownGrace)
                        await Task.yield()
                    }
                }
                await group.next()
                group.cancelAll()
            }
        }
    }

    static func start(bus: PrivateBus, state: String, clock: VirtualClock, config: String = Self.config,
                      extra: [any BackendFactory] = [], reloaded: @escaping @Sendable () -> Void = {},
                      log: WaitableState<[String]>? = nil,
                      configure: (inout DaemonSetup) -> Void = { _ in }) async throws -> Running {
        let loaded = try ConfigLoader.load(bytes: Array(config.utf8), file: "test.toml").get()
        let address = bus.address
        let logger = Logger(label: "test") { _ -> any LogHandler in
            if let log { return RecordingLogHandler(log) }
            return SwiftLogNoOpLogHandler()
        }
        let factories: [any BackendFactory] = extra
        var setup = DaemonSetup(
            config: loaded, reloadConfig: { reloaded(); return .success(loaded) },
            registry: { link in BackendRegistry([DBusSignalBackendFactory(emit: link.firedEmitter())] + factories) },
            stateDirectory: state, connect: { try await DBusConnection.connect(address: address) },
            busDescription: "the test bus", clock: clock, makeTimer: { clock },
            logger: logger, environment: [:])
        configure(&setup)
        let daemon = try await TocsinDaemon.start(setup)
        let (controls, continuation) = AsyncStream.makeStream(of: TocsinDaemon.Control.self)
        let task = Task { await daemon.run(controls: controls) }
        return Running(daemon, continuation, task, clock: clock)
    }

    func gdbus(_ bus: PrivateBus, _ method: String, _ args: String...) async throws -> TestProcess.Output {
        try await TestProcess.run("gdbus", Array(Self.gdbusCall(bus.address, method).dropFirst()) + args)
    }

    @Test("restarted after downtime: the catch-up's Missed reaches a subscriber that waited for the daemon")
    func missedAtStartIsSignalled() async throws {
        try await PrivateBus.with { bus in
            let dir = TemporaryDirectory(prefix: "tocsin-inprocess")
            let clock = VirtualClock(now: Self.t0)
            let first = try await Self.start(bus: bus, state: dir.path + "/state", clock: clock)
            let due = Self.t0 + .seconds(60)
            let scheduled = try await gdbus(bus, "Schedule", "{'key': <'late'>, 'title': <'t'>, 'at': <'@\(due.seconds)'>}")
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

    @Test("the gateway in-process: Schedule, List and Cancel through gdbus; Fired with the due time, never for a cancelled key")
    func gatewayInProcess() async throws {
        try await PrivateBus.with { bus in
            let dir = TemporaryDirectory(prefix: "tocsin-inprocess")
            let clock = VirtualClock(now: Self.t0)
            let running = try await Self.start(bus: bus, state: dir.path + "/state", clock: clock)
            let monitor = try TestProcess("dbus-monitor", ["--address", bus.address,
                                                           "type='signal',interface='io.github.tocsin.Gateway1',member='Fired'"])
            _ = try await monitor.waitForOutput(containing: "NameAcquired", timeout: .seconds(20))
            let due = Self.t0 + .seconds(30)
            for key in ["a", "b"] {
                let out = try await gdbus(bus, "Schedule", "{'key': <'\(key)'>, 'title': <'T \(key)'>, 'at': <'@\(due.seconds)'>}")
                #expect(out.status == .exited(0), "\(out.stderrText)")
            }
            let anonymous = try await gdbus(bus, "Schedule", "{'title': <'anon'>, 'after': <'1h'>}")
            #expect(anonymous.stdoutText.count > 36, "a generated key is a UUID: \(anonymous.stdoutText)")
            let list = try await gdbus(bus, "List").stdoutText
            #expect(list.contains("'T a'") && list.contains("'T b'") && list.contains("'anon'"), "\(list)")
            #expect(try await gdbus(bus, "Cancel", "b").stdoutText.contains("true"))
            #expect(try await gdbus(bus, "Cancel", "b").stdoutText.contains("false"))
            clock.advance(by: .seconds(30))
            await running.daemon.center.tick()
            // The info dictionary (with `due`) is printed after the key, so this waits for the whole signal.
            let fired = try await monitor.waitForOutput(containing: "int64 \(due.microseconds)", timeout: .seconds(20))
            #expect(fired.contains("string \"a\""), "\(fired)")
            #expect(!monitor.stdout.contains("string \"b\""), "a cancelled notification never fires")
            await running.shutdown()
            _ = try? await monitor.kill()
        }
    }

    /// A call sent while start-up is held, and what its answer must show once start-up ends.
    struct EarlyCall: Sendable, CustomTestStringConvertible {
        var name: String
        var command: @Sendable (_ address: String) -> [String]
        var answer: String
        /// How many times the config is read again by the time the call is answered.
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
            let held = HeldStart()
            let reloads = WaitableState(0)
            let log = WaitableState<[String]>([])
            let config = Self.config + "\n[backend.held]\ntype = \"held\"\n\n[[notification]]\nkey = \"cfg\"\ntitle = \"From config\"\nafter = \"1h\"\n"
            let starting = Task {
                try await Self.start(bus: bus, state: dir.path + "/state", clock: clock, config: config, extra: [held],
                                     reloaded: { reloads.update { $0 += 1 } }, log: log)
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
            #expect(reloads.value == row.reloads, "\(row.name)")
            let running = try await starting.value
            await running.shutdown()
        }
    }
}

/// A backend whose start waits until the test opens it, holding the daemon between taking its bus
/// name and loading its state.
private final class HeldStart: BackendFactory, DeliveryBackend, Sendable {
    struct Phase: Sendable { var reached = false, open = false }
    let phase = WaitableState(Phase())
    var typeName: String { "held" }
    var optionKeys: [String] { [] }
    var name: String { "held" }
    struct Options: Sendable {}
    func options(from reader: inout some FieldReader, environment: BackendEnvironment) -> Options? { Options() }
    func make(name: String, options: Options, environment: BackendEnvironment) -> any DeliveryBackend { self }
    func deliver(_ firing: Firing) async throws(DeliveryError) {}

    func start(events: any BackendEventSink) async {
        phase.update { $0.reached = true }
        _ = try? await phase.wait("the test to open the backend", timeout: .seconds(60)) { $0.open }
    }
}
