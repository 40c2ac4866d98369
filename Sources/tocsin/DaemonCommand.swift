import ArgumentParser
import Foundation
import Logging
import TocsinConfig
import TocsinCore
import TocsinTime
import UnixSignals

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

    func run() async throws {
        // Trap signals first: a SIGTERM that arrives during start-up must stop us cleanly too.
        let signals = await UnixSignalsSequence(trapping: .sigterm, .sigint, .sighup)
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
        let backends = try makeBackends(loaded, logger: logger, env: env)
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
        for await signal in signals {
            if signal == .sighup {
                await reload(center: center, logger: logger, env: env)
                continue
            }
            logger.info("stopping", metadata: ["signal": "\(signal)"])
            break
        }
        await center.shutdown()
        _ = await loop.value
    }

    /// Reload: a bad config is reported and the running one kept.
    private func reload(center: TocsinCenter, logger: Logger, env: [String: String]) async {
        do {
            let loaded = try loadConfig(env)
            let backends = try makeBackends(loaded, logger: logger, env: env)
            let report = try await center.applyConfig(loaded.configuration.notifications)
            await center.setBackends(backends)
            logger.info("reloaded", metadata: ["added": "\(report.added.count)", "changed": "\(report.changed.count)",
                                               "removed": "\(report.removed.count)", "unchanged": "\(report.unchanged.count)"])
        } catch let e as ConfigLoadError {
            logger.error("reload failed; keeping the running configuration:\n\(e.rendered)")
        } catch {
            logger.error("reload failed; keeping the running configuration: \(error)")
        }
    }

    private func loadConfig(_ env: [String: String]) throws -> LoadedConfig {
        let result: Result<LoadedConfig, ConfigLoadError>
        if let config {
            result = Configs.loadChecked(path: config, environment: env)
        } else {
            let path = ConfigLoader.defaultPath(environment: env)
            if FileManager.default.fileExists(atPath: path) {
                result = Configs.loadChecked(path: path, environment: env)
            } else {
                result = ConfigLoader.load(bytes: Array(DefaultConfig.text.utf8), file: "<built-in default>")
                    .flatMap { Configs.validate($0, environment: env) }
            }
        }
        switch result {
        case .success(let l): return l
        case .failure(let e):
            FileHandle.standardError.write(Data((e.rendered + "\n").utf8))
            throw e
        }
    }

    private func makeBackends(_ loaded: LoadedConfig, logger: Logger, env: [String: String]) throws -> [any DeliveryBackend] {
        switch Configs.registry().makeBackends(for: loaded.configuration, file: loaded.file,
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
enum DefaultConfig {
    static let text = """
    # Tocsin's built-in configuration.
    [daemon]
    missed = "fire-once"

    [backend.log]
    type = "log"
    """
}
