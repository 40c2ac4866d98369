import DBus
import Logging
import ServiceLifecycle
import Synchronization
import TocsinConfig
public import TocsinCore
import TocsinTime
import TocsinSystem
import TocsinModel

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
    /// The config's path to the engine, with the registry bound to this daemon's bus link:
    /// every reload runs it again.
    private let plan: ConfigPlan
    /// The state directory opened at start: a reload that changes `state_dir` does not move the
    /// state, so backends with state of their own keep theirs beside it.
    private let stateDirectory: String
    private let firstConnection: DBusConnection?
    private let events: AsyncStream<CenterEvent>
    /// The latest reload asked for; the next one waits for it.
    private let reloads = Mutex<Task<CenterError?, Never>?>(nil)
    /// Set when the stop begins: a reload then neither starts nor tells systemd it is ready.
    private let stopping = Mutex(false)
    /// The backends the engine runs, for the next reload to keep those whose table it leaves
    /// unchanged. Written only by the start and by reloads, which run one after another.
    private let running: Mutex<RunningBackends>

    private init(setup: DaemonSetup, plan: ConfigPlan, stateDirectory: String, center: TocsinCenter, gateway: GatewayService,
                 link: BusLink, sleep: SleepWatch, firstConnection: DBusConnection?, events: AsyncStream<CenterEvent>,
                 running: RunningBackends) {
        self.setup = setup; self.plan = plan; self.stateDirectory = stateDirectory; self.center = center; self.gateway = gateway
        self.link = link; self.sleep = sleep; self.firstConnection = firstConnection; self.events = events
        self.running = Mutex(running)
    }

    public static func start(_ setup: DaemonSetup) async throws(DaemonError) -> TocsinDaemon {
        let logger = setup.logger
        let link = BusLink(logger: logger)
        let plan = ConfigPlan(source: setup.source, registry: setup.registry(link), environment: setup.environment)
        let validated: ValidatedConfig
        if let given = setup.config { validated = given } else {
            validated = try plan.validate().mapError { DaemonError(.invalidConfig, $0.rendered) }.get()
        }
        let c = validated.configuration
        let options: CenterOptions
        do { options = try CenterOptions(settings: c.daemon, environment: setup.environment) } catch {
            throw DaemonError(.invalidConfig, "\(validated.loaded.file): \(error.message)")
        }
        if c.daemon.timezone == nil, let problem = ZoneInfoDirectory().tzProblem(setup.environment["TZ"]) {
            logger.warning("\(problem)")
        }
        let stateDirectory = setup.stateDirectory ?? c.daemon.stateDirectory ?? DaemonSetup.defaultStateDirectory(setup.environment)
        let built = try plan.build(validated, logger: logger, stateDirectory: stateDirectory)
            .mapError { DaemonError(.invalidConfig, $0.rendered) }.get()
        let (timer, wakeAlarm) = try timers(setup, wakeAlarms: options.wakeAlarms)
        let center: TocsinCenter
        do {
            center = try TocsinCenter(options: options, stateDirectory: stateDirectory, clock: setup.clock, timer: timer,
                                      wakeAlarm: wakeAlarm, logger: logger)
        } catch {
            timer.close()
            throw DaemonError(.storage, error.message)
        }
        do { try await built.prepare(center) } catch {
            await center.shutdown()
            throw DaemonError(.invalidConfig, "\(validated.loaded.file): \(error.message)")
        }
        // Set before the gateway answers its first call (`startEnded`), so a Reload finds it.
        let started = Mutex<TocsinDaemon?>(nil)
        let sleep = SleepWatch(center: center, logger: logger)
        var info = DaemonInfo(configFile: validated.loaded.file, stateDirectory: stateDirectory, started: setup.clock.now())
        info.sleep = sleep
        let gateway = GatewayService(center: center, link: link, maxPendingPerClient: c.daemon.maxPendingPerClient,
                                     limits: options.limits, maxMessageSize: c.daemon.maxMessageSize ?? setup.busMessageLimit,
                                     info: info,
                                     servedBeforeStart: true) {
            guard let daemon = started.withLock({ $0 }) else { return CenterError(.stopping, "the daemon is not running") }
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
            let report = try await built.start(on: center)
            let pending = await center.activeCount
            logger.info("started", metadata: [
                "config": "\(validated.loaded.file)", "state": "\(stateDirectory)",
                "backends": "\(built.backends.map(\.name).joined(separator: ","))",
                "notifications": "\(report.added.count + report.changed.count + report.unchanged.count)",
                "pending": "\(pending)"])
        } catch {
            gateway.startEnded(ok: false)
            first?.close()
            await center.shutdown()
            if error.code == .invalidConfig { throw DaemonError(.invalidConfig, "\(validated.loaded.file): \(error.message)") }
            throw DaemonError(.storage, error.message)
        }
        let daemon = TocsinDaemon(setup: setup, plan: plan, stateDirectory: stateDirectory, center: center, gateway: gateway,
                                  link: link, sleep: sleep, firstConnection: first, events: events, running: built.running)
        started.withLock { $0 = daemon }
        gateway.startEnded(ok: true)
        return daemon
    }

    private static func timers(_ setup: DaemonSetup, wakeAlarms: Bool) throws(DaemonError) -> (any WakeupTimer, (any WakeAlarm)?) {
        let timer: any WakeupTimer
        do { timer = try setup.makeTimer() } catch { throw DaemonError(.setup, "\(error)") }
        let wakeAlarm = setup.makeWakeAlarm(wakeAlarms)
        if let status = wakeAlarm?.status, case .unavailable(let why) = status.availability {
            // Said once: notifications with wake = true still fire, once the machine is awake.
            setup.logger.notice("wake alarms unavailable: \(why); notifications with wake = true fire when the machine is awake")
        }
        return (timer, wakeAlarm)
    }

    /// What the daemon is asked to do while it runs (from signals: SIGHUP, SIGTERM/SIGINT).
    public enum Control: Sendable { case reload, stop }

    /// Runs until `.stop` arrives (or `controls` ends), then stops gracefully, in the reverse of
    /// the list: firing first (deliveries in flight get their grace period, then the store
    /// closes and calls still arriving are refused), then the event forwarding, which sends
    /// what the stop emitted, then the bus, once it has taken what is queued (`BusService`).
    public func run(controls: some AsyncSequence<Control, Never> & Sendable) async {
        let logger = setup.logger
        let group = ServiceGroup(configuration: ServiceGroupConfiguration(services: [
            .init(service: BusService(gateway: gateway, setup: setup, first: firstConnection)),
            .init(service: EventForwardingService(gateway: gateway, events: events)),
            .init(service: FiringService(center: center)),
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
            stopping.withLock { $0 = true }
            setup.notify(.stopping)
            await group.triggerGracefulShutdown()
            await tasks.waitForAll()
        }
    }

    /// Reload: a bad config is reported (returned, for the D-Bus error) and the running one kept.
    /// Reloads run one after another in the order asked, so an older read of the file is never
    /// applied over a newer one.
    public func reload() async -> CenterError? {
        let mine = reloads.withLock { last -> Task<CenterError?, Never> in
            let previous = last
            let next = Task { _ = await previous?.value; return await self.reloadNow() }
            last = next
            return next
        }
        return await mine.value
    }

    /// A config the reload thread could not load, already rendered there.
    private struct RenderedLoadFailure: Error { var rendered: String }

    private func reloadNow() async -> CenterError? {
        if stopping.withLock({ $0 }) { return TocsinCenter.stoppingError }
        setup.notify(.reloading)
        defer {
            // READY after STOPPING would tell systemd the stop was called off.
            if !stopping.withLock({ $0 }) { setup.notify(.ready(status: "serving \(Gateway.busName)")) }
        }
        let logger = setup.logger
        // Reading, parsing and checking the file costs what the file decides (a FIFO, 400,000
        // keys): done on a thread of its own, diagnostics rendered there too, so firing and
        // calls go on meanwhile. Only building the backends and applying come back to the loop.
        let plan = self.plan
        let read = await WorkerThread.run(background: true) { () -> Result<ValidatedConfig, RenderedLoadFailure> in
            plan.validate().mapError { RenderedLoadFailure(rendered: $0.rendered) }
        }
        do {
            let built = try plan.build(try read.get(), logger: logger, stateDirectory: stateDirectory, reusing: running.withLock { $0 })
                .mapError { RenderedLoadFailure(rendered: $0.rendered) }.get()
            let report = try await built.apply(to: center)
            running.withLock { $0 = built.running }
            logger.info("reloaded", metadata: ["added": "\(report.added.count)", "changed": "\(report.changed.count)",
                                               "removed": "\(report.removed.count)", "unchanged": "\(report.unchanged.count)",
                                               "unchanged_backends": "\(built.running.kept.sorted().joined(separator: ","))"])
            return nil
        } catch let e as RenderedLoadFailure {
            logger.error("reload failed; keeping the running configuration:\n\(e.rendered)")
            return CenterError(.invalidConfig, e.rendered)
        } catch let e as CenterError {
            logger.error("reload failed; keeping the running configuration: \(e.message)")
            // Refused for a stop, or any other engine error, as a config problem (as before).
            return e.code == .stopping ? e : CenterError(.invalidConfig, e.message)
        } catch {
            logger.error("reload failed; keeping the running configuration: \(error)")
            return CenterError(.invalidConfig, "\(error)")
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
