import DBus
import Logging
import ServiceLifecycle
import Synchronization
import TocsinConfig
public import TocsinCore
import TocsinTime

/// The whole daemon as a library: the composition root that `tocsin daemon` runs, and that tests
/// run in-process on a private bus.
///
/// Start-up is ordered so that nothing emitted at start is lost: the state is opened, the gateway
/// subscribes to the center's events, the bus connection is made and the API exported, and only
/// then is the persisted state loaded and the first catch-up tick run (its `Missed` and `Fired`
/// reach subscribers that were waiting for the daemon). Calls that arrive before the state is
/// loaded and the config applied wait for that (`GatewayService.startEnded`), reads and `Reload`
/// included. `run` then keeps the long-lived parts going as services of one `ServiceGroup`, and
/// stops them in reverse order.
public final class TocsinDaemon: Sendable {
    public let center: TocsinCenter
    public let gateway: GatewayService
    public let link: BusLink
    /// logind's sleep announcements (`Status`, tests).
    public let sleep: SleepWatch
    private let setup: DaemonSetup
    private let registry: BackendRegistry
    private let firstConnection: DBusConnection?
    private let events: AsyncStream<CenterEvent>
    /// The latest reload asked for; the next one waits for it.
    private let reloads = Mutex<Task<String?, Never>?>(nil)

    private init(setup: DaemonSetup, center: TocsinCenter, gateway: GatewayService, link: BusLink, sleep: SleepWatch,
                 registry: BackendRegistry, firstConnection: DBusConnection?, events: AsyncStream<CenterEvent>) {
        self.setup = setup; self.center = center; self.gateway = gateway; self.link = link; self.sleep = sleep
        self.registry = registry; self.firstConnection = firstConnection; self.events = events
    }

    public static func start(_ setup: DaemonSetup) async throws(DaemonError) -> TocsinDaemon {
        let logger = setup.logger
        let c = setup.config.configuration
        let options: CenterOptions
        do { options = try CenterOptions(settings: c.daemon, environment: setup.environment) } catch {
            throw DaemonError(.invalidConfig, "\(setup.config.file): \(error.message)")
        }
        if c.daemon.timezone == nil, let problem = ZoneInfoDirectory().tzProblem(setup.environment["TZ"]) {
            logger.warning("\(problem)")
        }
        let stateDirectory = setup.resolvedStateDirectory
        let link = BusLink(logger: logger)
        let registry = setup.registry(link)
        let backends = try makeBackends(setup.config, registry: registry, setup: setup, stateDirectory: stateDirectory)
        let timer: any WakeupTimer
        do { timer = try setup.makeTimer() } catch { throw DaemonError(.setup, "\(error)") }
        let wakeAlarm = setup.makeWakeAlarm(options.wakeAlarms)
        if let status = wakeAlarm?.status, case .unavailable(let why) = status.availability {
            // Said once: notifications with wake = true still fire, once the machine is awake.
            logger.notice("wake alarms unavailable: \(why); notifications with wake = true fire when the machine is awake")
        }
        let center: TocsinCenter
        do {
            center = try TocsinCenter(options: options, stateDirectory: stateDirectory, clock: setup.clock, timer: timer,
                                      wakeAlarm: wakeAlarm, logger: logger)
        } catch {
            timer.close()
            throw DaemonError(.storage, error.message)
        }
        do { try await center.setQuiet(c.quiet) } catch {
            timer.close()
            await center.shutdown()
            throw DaemonError(.invalidConfig, "\(setup.config.file): \(error.message)")
        }
        // Set before the gateway answers its first call (`startEnded`), so a Reload finds it.
        let started = Mutex<TocsinDaemon?>(nil)
        let sleep = SleepWatch(center: center, logger: logger)
        var info = DaemonInfo(configFile: setup.config.file, stateDirectory: stateDirectory, started: setup.clock.now())
        info.sleep = sleep
        let gateway = GatewayService(center: center, link: link, maxPendingPerClient: c.daemon.maxPendingPerClient,
                                     limits: options.limits, maxMessageSize: c.daemon.maxMessageSize ?? setup.busMessageLimit,
                                     info: info,
                                     servedBeforeStart: true) {
            guard let daemon = started.withLock({ $0 }) else { return "the daemon is not running" }
            return await daemon.reload()
        }
        // Firings reach subscribers as the `dbus-signal` backend's `Fired`, not through this stream.
        let events = await center.events(firings: false)

        // The first connection decides whether we may run: a name owned by another daemon is fatal.
        var first: DBusConnection?
        do {
            first = try await connectAndServe(gateway, setup: setup)
        } catch let e as DBusError where e.code == .nameTaken {
            gateway.startEnded(ok: false)
            await center.shutdown()
            throw DaemonError(.nameTaken, "another Tocsin daemon is running: \(e.message)")
        } catch {
            logger.warning("cannot use \(setup.busDescription) (\(error)); firing continues and the D-Bus API comes up when the bus does")
        }
        do {
            try await center.start(backends: backends)
            let report = try await center.applyConfig(c.notifications)
            let pending = await center.activeCount
            logger.info("started", metadata: [
                "config": "\(setup.config.file)", "state": "\(stateDirectory)", "backends": "\(backends.map(\.name).joined(separator: ","))",
                "notifications": "\(report.added.count + report.changed.count + report.unchanged.count)",
                "pending": "\(pending)"])
        } catch {
            gateway.startEnded(ok: false)
            first?.close()
            await center.shutdown()
            throw DaemonError(.storage, error.message)
        }
        let daemon = TocsinDaemon(setup: setup, center: center, gateway: gateway, link: link, sleep: sleep, registry: registry,
                                  firstConnection: first, events: events)
        started.withLock { $0 = daemon }
        gateway.startEnded(ok: true)
        return daemon
    }

    /// What the daemon is asked to do while it runs (from signals: SIGHUP, SIGTERM/SIGINT).
    public enum Control: Sendable { case reload, stop }

    /// Runs until `.stop` arrives (or `controls` ends), then stops gracefully: the bus first, then
    /// firing (deliveries in flight get their grace period), then the event forwarding.
    public func run(controls: some AsyncSequence<Control, Never> & Sendable) async {
        let logger = setup.logger
        let group = ServiceGroup(configuration: ServiceGroupConfiguration(services: [
            .init(service: EventForwardingService(gateway: gateway, events: events)),
            .init(service: FiringService(center: center)),
            .init(service: BusService(gateway: gateway, setup: setup, first: firstConnection)),
            // Returns at once when sleep is not watched; that must not stop the others.
            .init(service: SleepService(watch: sleep, connect: setup.connectSystem), successTerminationBehavior: .ignore),
        ], logger: logger))
        setup.notify(.ready(status: firstConnection == nil ? "running without a bus connection" : "serving \(Gateway.busName)"))
        await withTaskGroup(of: Void.self) { tasks in
            tasks.addTask {
                do { try await group.run() } catch { logger.error("a service failed: \(error)") }
            }
            for await control in controls {
                if case .reload = control {
                    _ = await reload()  // a failure is logged by the reload
                    continue
                }
                break
            }
            logger.info("stopping")
            setup.notify(.stopping)
            await group.triggerGracefulShutdown()
            await tasks.waitForAll()
        }
    }

    /// Reload: a bad config is reported (returned, for the D-Bus error) and the running one kept.
    /// Reloads run one after another in the order asked, so an older read of the file is never
    /// applied over a newer one.
    public func reload() async -> String? {
        let mine = reloads.withLock { last -> Task<String?, Never> in
            let previous = last
            let next = Task { _ = await previous?.value; return await self.reloadNow() }
            last = next
            return next
        }
        return await mine.value
    }

    /// A config the reload thread could not load, already rendered there.
    private struct RenderedLoadFailure: Error { var rendered: String }

    private func reloadNow() async -> String? {
        setup.notify(.reloading)
        defer { setup.notify(.ready(status: "serving \(Gateway.busName)")) }
        let logger = setup.logger
        // Reading, parsing and checking the file costs what the file decides (a FIFO, 400,000
        // keys): done on a thread of its own, diagnostics rendered there too, so firing and
        // calls go on meanwhile. Only applying the result comes back to the loop.
        let reloadConfig = setup.reloadConfig
        let read = await WorkerThread.run(background: true) { () -> Result<LoadedConfig, RenderedLoadFailure> in
            reloadConfig().mapError { RenderedLoadFailure(rendered: $0.rendered) }
        }
        do {
            let loaded = try read.get()
            let backends = try Self.makeBackends(loaded, registry: registry, setup: setup, stateDirectory: setup.resolvedStateDirectory)
            let report = try await center.reload(backends: backends, specs: loaded.configuration.notifications,
                                                 quiet: loaded.configuration.quiet)
            logger.info("reloaded", metadata: ["added": "\(report.added.count)", "changed": "\(report.changed.count)",
                                               "removed": "\(report.removed.count)", "unchanged": "\(report.unchanged.count)"])
            return nil
        } catch let e as RenderedLoadFailure {
            logger.error("reload failed; keeping the running configuration:\n\(e.rendered)")
            return e.rendered
        } catch let e as DaemonError {
            logger.error("reload failed; keeping the running configuration:\n\(e.message)")
            return e.message
        } catch let e as CenterError {
            logger.error("reload failed; keeping the running configuration: \(e.message)")
            return e.message
        } catch {
            logger.error("reload failed; keeping the running configuration: \(error)")
            return "\(error)"
        }
    }

    private static func makeBackends(_ loaded: LoadedConfig, registry: BackendRegistry,
                                     setup: DaemonSetup, stateDirectory: String) throws(DaemonError) -> [any DeliveryBackend] {
        switch registry.makeBackends(for: loaded.configuration, file: loaded.file,
                                     environment: BackendEnvironment(logger: setup.logger, environment: setup.environment,
                                                                     stateDirectory: stateDirectory)) {
        case .success(let b): return b
        case .failure(let e):
            throw DaemonError(.invalidConfig, ConfigLoadError(code: .invalid, file: loaded.file, diagnostics: e.diagnostics,
                                                              source: loaded.source).rendered)
        }
    }

    /// Connects, takes the bus name and serves the gateway object.
    static func connectAndServe(_ gateway: GatewayService, setup: DaemonSetup) async throws -> DBusConnection {
        let c = try await setup.connect()
        do {
            try await gateway.serve(on: c)
        } catch {
            c.close()
            throw error
        }
        setup.logger.info("serving the D-Bus API", metadata: ["bus": "\(setup.busDescription)", "name": "\(Gateway.busName)"])
        return c
    }
}

extension DaemonSetup {
    /// The state directory the daemon opened at start: a reload that changes `state_dir` does not
    /// move the state, so backends with state of their own keep theirs beside it.
    var resolvedStateDirectory: String {
        stateDirectory ?? config.configuration.daemon.stateDirectory ?? DaemonSetup.defaultStateDirectory(environment)
    }
}
