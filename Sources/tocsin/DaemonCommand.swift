import ArgumentParser
import CTocsinSystem
public import Foundation
import Logging
import TocsinConfig
import TocsinCore
import TocsinTime
import DBus
import TocsinDBusSignalBackend
import TocsinGateway

struct DaemonCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "daemon",
        abstract: "Run the notification gateway in the foreground."
    )

    @Option(help: "Config file (default: $XDG_CONFIG_HOME/tocsin/config.toml if it exists, else the built-in default).")
    var config: String?

    @Option(name: .customLong("state-dir"), help: "Directory of the SQLite state (default: $XDG_STATE_HOME/tocsin).")
    var stateDir: String?

    @Option(name: .customLong("log-level"), help: "trace, debug, info, notice, warning, error or critical.")
    var logLevel: String?

    @OptionGroup var bus: BusOptions

    func run() async throws {
        // A refused 10 MB request must not leave the daemon 10 MB bigger: glibc would otherwise
        // raise its mmap threshold past such a block and keep the memory in its heap once freed.
        _ = tocsin_malloc_fix_mmap_threshold(128 * 1024)
        // Trap signals first: a SIGTERM that arrives during start-up must stop us cleanly too.
        // A signalfd on Tocsin's executor loop: swift-service-lifecycle's UnixSignals would start
        // libdispatch (DispatchSource) and its once-a-second monitor.
        let signals = LoopExecutor.signals([SIGTERM, SIGINT, SIGHUP])
        let env = ProcessInfo.processInfo.environment
        let loaded = try loadConfig(env)
        let c = loaded.configuration
        let level = Logger.Level(rawValue: logLevel ?? c.daemon.logLevel.rawValue) ?? .info
        let logger = Logs.make(level: level, environment: env)

        let zones = ZoneInfoDirectory()
        var zone = zones.defaultZone(tz: env["TZ"])
        if let tz = c.daemon.timezone { zone = try zones.rules(named: tz) }
        var options = CenterOptions(defaultZone: zone, zones: zones)
        options.maxPending = c.daemon.maxPending
        options.defaultMissed = c.daemon.missed
        options.defaultMaxLate = c.daemon.maxLate

        let stateDirectory = stateDir ?? c.daemon.stateDirectory ?? Self.defaultStateDirectory(env)
        let link = BusLink(logger: logger)
        let registry = Plugins.registry(link: link)
        let backends = try makeBackends(loaded, registry: registry, logger: logger, env: env)
        let timer = try TimerFDWakeup()
        let center: TocsinCenter
        do {
            center = try TocsinCenter(options: options, stateDirectory: stateDirectory, clock: SystemClock(),
                                            timer: timer, logger: logger)
            try await center.start(backends: backends)
            let report = try await center.applyConfig(c.notifications)
            let pending = await center.activeCount
            logger.info("started", metadata: [
                "config": "\(loaded.file)", "state": "\(stateDirectory)", "backends": "\(backends.map(\.name).joined(separator: ","))",
                "notifications": "\(report.added.count + report.changed.count + report.unchanged.count)",
                "pending": "\(pending)"])
        } catch {
            logger.critical("\(error.message)")
            throw ExitCode(1)
        }

        let loop = Task { await center.run() }
        let gateway = GatewayService(center: center, link: link, maxPendingPerClient: c.daemon.maxPendingPerClient) {
            let systemd = SystemdNotifier(environment: env)
            systemd.reloading()
            defer { systemd.ready() }
            return await reloadOrDiagnostics(center: center, registry: registry, logger: logger, env: env)
        }
        let events = Task { await gateway.forwardEvents() }

        // The first connection decides whether we may run: a name owned by another daemon is fatal.
        var firstConnection: DBusConnection?
        do {
            firstConnection = try await connectAndServe(gateway, logger: logger)
        } catch let e as DBusError where e.code == .nameTaken {
            logger.critical("another Tocsin daemon is running: \(e.message)")
            await center.shutdown()
            throw ExitCode(1)
        } catch {
            logger.warning("cannot use \(bus.description) (\(error)); firing continues and the D-Bus API comes up when the bus does")
        }
        let busTask = Task { await keepConnected(gateway, first: firstConnection, logger: logger) }
        let systemd = SystemdNotifier(environment: env)
        systemd.ready(status: firstConnection == nil ? "running without a bus connection" : "serving \(Gateway.busName)")
        for await signal in signals {
            if signal == SIGHUP {
                systemd.reloading()
                defer { systemd.ready() }
                if let problem = await reloadOrDiagnostics(center: center, registry: registry, logger: logger, env: env) {
                    logger.error("reload failed; keeping the running configuration:\n\(problem)")
                }
                continue
            }
            logger.info("stopping", metadata: ["signal": "\(signal == SIGINT ? "SIGINT" : "SIGTERM")"])
            systemd.stopping()
            break
        }
        busTask.cancel()
        link.current?.close()
        await center.shutdown()
        _ = await loop.value
        events.cancel()
    }

    /// Connects, takes the bus name and serves the gateway object.
    private func connectAndServe(_ gateway: GatewayService, logger: Logger) async throws -> DBusConnection {
        let c = try await bus.connect()
        do {
            try await c.requestName(Gateway.busName)
            try await gateway.attach(c)
        } catch {
            c.close()
            throw error
        }
        logger.info("serving the D-Bus API", metadata: ["bus": "\(bus.description)", "name": "\(Gateway.busName)"])
        return c
    }

    /// Keeps the D-Bus API up: after the bus goes away, reconnects with bounded backoff and takes
    /// the name back, while the schedule keeps firing.
    private func keepConnected(_ gateway: GatewayService, first: DBusConnection?, logger: Logger) async {
        if let first {
            await withTaskCancellationHandler { await first.waitUntilDisconnected() } onCancel: { first.close() }
            if Task.isCancelled { return }
            logger.warning("lost the bus connection; reconnecting")
        }
        // The DBus layer's reconnector: bounded exponential backoff, setup (name, export) on every
        // new connection; each element is a live connection until it drops.
        let reconnector = DBusReconnector(backoff: Backoff(initial: .milliseconds(200), maximum: .seconds(30)),
                                          connect: { [bus] in try await bus.connect() },
                                          setup: { c in
                                              try await c.requestName(Gateway.busName)
                                              try await gateway.attach(c)
                                          })
        for await connection in reconnector.connections() {
            logger.info("serving the D-Bus API", metadata: ["bus": "\(bus.description)", "name": "\(Gateway.busName)"])
            await withTaskCancellationHandler { await connection.waitUntilDisconnected() } onCancel: { connection.close() }
            if Task.isCancelled { return }
            logger.warning("lost the bus connection; reconnecting")
        }
    }

    /// Reload: a bad config is reported (returned for the D-Bus error) and the running one kept.
    private func reloadOrDiagnostics(center: TocsinCenter, registry: BackendRegistry, logger: Logger,
                                     env: [String: String]) async -> String? {
        do {
            let loaded = try loadConfig(env, quiet: true)
            let backends = try makeBackends(loaded, registry: registry, logger: logger, env: env)
            let report = try await center.reload(backends: backends, specs: loaded.configuration.notifications)
            logger.info("reloaded", metadata: ["added": "\(report.added.count)", "changed": "\(report.changed.count)",
                                               "removed": "\(report.removed.count)", "unchanged": "\(report.unchanged.count)"])
            return nil
        } catch let e as ConfigLoadError {
            logger.error("reload failed; keeping the running configuration:\n\(e.rendered)")
            return e.rendered
        } catch let e as CenterError {
            logger.error("reload failed; keeping the running configuration: \(e.message)")
            return e.message
        } catch {
            logger.error("reload failed; keeping the running configuration: \(error)")
            return "\(error)"
        }
    }

    private func loadConfig(_ env: [String: String], quiet: Bool = false) throws -> LoadedConfig {
        let result: Result<LoadedConfig, ConfigLoadError>
        if let config {
            result = Configs.loadChecked(path: config, environment: env)
        } else {
            let path = ConfigLoader.defaultPath(environment: env)
            if FileManager.default.fileExists(atPath: path) {
                result = Configs.loadChecked(path: path, environment: env)
            } else {
                result = DefaultConfig.load(environment: env)
            }
        }
        switch result {
        case .success(let l): return l
        case .failure(let e):
            if !quiet { FileHandle.standardError.write(Data((e.rendered + "\n").utf8)) }
            throw e
        }
    }

    private func makeBackends(_ loaded: LoadedConfig, registry: BackendRegistry, logger: Logger,
                              env: [String: String]) throws -> [any DeliveryBackend] {
        switch registry.makeBackends(for: loaded.configuration, file: loaded.file,
                                               environment: BackendEnvironment(logger: logger, environment: env)) {
        case .success(let b): return b
        case .failure(let e):
            throw ConfigLoadError(code: .invalid, file: loaded.file, diagnostics: e.diagnostics, source: loaded.source)
        }
    }

    static func defaultStateDirectory(_ env: [String: String]) -> String {
        if let x = env["XDG_STATE_HOME"], x.hasPrefix("/") { return x + "/tocsin" }
        return (env["HOME"] ?? ".") + "/.local/state/tocsin"
    }
}

extension ConfigLoadError: LocalizedError {}

/// Used when no config file exists, so `tocsin daemon` works on any machine.
/// Used when no config file exists, so `tocsin daemon` works on any machine: popups, D-Bus
/// signals, the log, and an alarm (`--backend alarm`) where a sound player is installed.
enum DefaultConfig {
    static let base = """
    # Tocsin's built-in configuration.
    [daemon]
    missed = "fire-once"

    [backend.desktop]
    type = "libnotify"

    [backend.events]
    type = "dbus-signal"

    [backend.log]
    type = "log"
    """

    static let alarm = """

    [backend.alarm]
    type = "sound"
    """

    /// The alarm needs a player and a sound file; without them the default still starts, without the alarm.
    static func load(environment: [String: String]) -> Result<LoadedConfig, ConfigLoadError> {
        let full = ConfigLoader.load(bytes: Array((base + alarm).utf8), file: "<built-in default>")
            .flatMap { Configs.validate($0, environment: environment) }
        if case .success = full { return full }
        return ConfigLoader.load(bytes: Array(base.utf8), file: "<built-in default>")
            .flatMap { Configs.validate($0, environment: environment) }
    }
}
