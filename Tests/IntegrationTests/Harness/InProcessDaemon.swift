import DBus
import Logging
import TocsinConfig
import TocsinCore
import TocsinDBusSignalBackend
import TocsinGateway
import TocsinTesting
import TocsinTime

/// The whole daemon (`TocsinDaemon`, what `tocsin daemon` runs) in the test's own process, on a
/// virtual clock, served on whatever connection `connect` gives: a private bus or a peer.
///
/// The one in-process launcher: `DaemonHarness` runs it on a bus or a peer, and suites that need
/// what only the library offers (a held backend, a second registry, the center itself) start it
/// directly.
final class InProcessDaemon: Sendable {
    let daemon: TocsinDaemon
    private let stop: AsyncStream<TocsinDaemon.Control>.Continuation
    private let task: Task<Void, Never>
    let clock: VirtualClock

    private init(_ d: TocsinDaemon, _ s: AsyncStream<TocsinDaemon.Control>.Continuation, _ t: Task<Void, Never>, clock: VirtualClock) {
        daemon = d; stop = s; task = t; self.clock = clock
    }

    var center: TocsinCenter { daemon.center }

    /// What the test decides; the rest is what `tocsin daemon` would do.
    struct Options: Sendable {
        var config: String
        var state: String
        var clock: VirtualClock
        var connect: @Sendable () async throws -> DBusConnection
        /// The backend types linked, given the link the `dbus-signal` backend emits on.
        var backends: @Sendable (BusLink) -> [any BackendFactory] = InProcessDaemon.signalBackend
        /// Collects the daemon's log lines; nil: the log is dropped.
        var log: WaitableState<[String]>? = nil
        var configure: @Sendable (inout DaemonSetup) -> Void = { _ in }
    }

    /// Only `dbus-signal`, on the daemon's connection: what most gateway tests route to.
    static let signalBackend: @Sendable (BusLink) -> [any BackendFactory] = { link in
        [DBusSignalBackendFactory(emit: link.firedEmitter(), prepare: link.firedPreparer())]
    }

    /// Connects to `address` as a bus client.
    static func bus(_ address: String) -> @Sendable () async throws -> DBusConnection {
        { try await DBusConnection.connect(address: address) }
    }

    /// Starts the daemon and its services; returns once it has started (its state is loaded).
    static func start(_ o: Options) async throws -> InProcessDaemon {
        let log = o.log
        let logger = Logger(label: "test") { _ -> any LogHandler in
            if let log { return RecordingLogHandler(log) }
            return SwiftLogNoOpLogHandler()
        }
        let backends = o.backends
        let clock = o.clock
        var setup = DaemonSetup(
            source: .text(o.config, name: "test.toml"),
            registry: { link in BackendRegistry(backends(link)) },
            stateDirectory: o.state, connect: o.connect,
            busDescription: "the test bus", clock: clock, makeTimer: { clock },
            logger: logger, environment: [:])
        o.configure(&setup)
        let daemon = try await TocsinDaemon.start(setup)
        let (controls, continuation) = AsyncStream.makeStream(of: TocsinDaemon.Control.self)
        let task = Task { await daemon.run(controls: controls) }
        return InProcessDaemon(daemon, continuation, task, clock: clock)
    }

    /// Stops as SIGTERM would, and returns once every service has ended. The grace for
    /// deliveries still running (a hung service) elapses on the daemon's clock, which is this
    /// virtual one: once the center waits out its grace, the clock is moved to the grace's end,
    /// once and only there, so the stop never waits for a clock nobody moves and nothing else
    /// (a retry, the next firing) is woken by it.
    func shutdown() async {
        requestStop()
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.stopped() }
            group.addTask {
                guard let deadline = await self.graceBegun() else { return }
                self.clock.advance(to: deadline)
            }
            await group.next()
            group.cancelAll()
        }
    }

    /// Asks for the stop as SIGTERM would and returns at once, for a test that acts during the
    /// stop; `stopped()` waits for its end.
    func requestStop() { stop.yield(.stop) }

    /// Returns once every service has ended.
    func stopped() async { await task.value }

    /// Waits until the stopping center waits out its grace for deliveries in flight, and returns
    /// the grace's end on the virtual clock (nil: cancelled first).
    func graceBegun() async -> Instant? {
        while !Task.isCancelled {
            // The deadline is set before its sleeper waits: read the count first, so a sleeper
            // that comes after the check wakes the wait below.
            let seen = clock.sleeperCount
            if let deadline = await center.graceDeadline { return deadline }
            await clock.waitForSleepers(atLeast: seen + 1)
        }
        return nil
    }
}
