import ArgumentParser
import CTocsinSystem
public import FoundationEssentials
import Glibc
import Logging
import TocsinConfig
import TocsinCore
import TocsinTime
import DBus
import TocsinDBusSignalBackend
import TocsinGateway
import TocsinSystem
import TocsinModel

struct DaemonCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "daemon", _superCommandName: Tocsin.name,
        abstract: "Run the notification gateway in the foreground."
    )

    @Option(help: "Config file (default: $XDG_CONFIG_HOME/tocsin/config.toml if it exists, else the built-in default).")
    var config: String?

    @Option(name: .customLong("state-dir"), help: "Directory of the SQLite state (default: $XDG_STATE_HOME/tocsin).")
    var stateDir: String?

    @Option(name: .customLong("log-level"), help: "trace, debug, info, notice, warning, error or critical.")
    var logLevel: String?

    @Option(name: .customLong("toml-version"), help: "Read the config as TOML 1.0 or 1.1 (default: 1.1); in 1.0 a 1.1 feature is an error naming it.",
            transform: Configs.tomlVersion)
    var tomlVersion: TOMLVersion = .default

    @OptionGroup var bus: BusOptions

    func validate() throws {
        // An unknown level was taken as `info` without a word.
        if let logLevel, Logger.Level(rawValue: logLevel) == nil {
            let levels = Logger.Level.allCases.map(\.rawValue).joined(separator: ", ")
            throw ValidationError("--log-level must be one of \(levels), found '\(JSONText.visible(logLevel))'")
        }
    }

    func run() async throws {
        // A refused 10 MB request must not leave the daemon 10 MB bigger: glibc would otherwise
        // raise its mmap threshold past such a block and keep the memory in its heap once freed.
        // Not lower than 1 MiB: a burst's arrays of a thousand firings (a few hundred kB each)
        // would then each be mapped fresh, faulted in page by page and unmapped (each unmap
        // flushing the TLBs of the CPUs that run the daemon's other threads), all between the
        // burst's instant and its last signal. From the heap they cost at most one trim of its
        // top (the trim threshold stays at its 128 KiB: a fixed mmap threshold pins it).
        _ = tocsin_malloc_fix_mmap_threshold(1024 * 1024)
        // Trap signals first: a SIGTERM that arrives during start-up must stop us cleanly too.
        // A signalfd on Tocsin's executor loop: swift-service-lifecycle's UnixSignals would start
        // libdispatch (DispatchSource) and its once-a-second monitor.
        let signals: AsyncStream<Int32>
        do { signals = try LoopExecutor.signals([SIGTERM, SIGINT, SIGHUP]) } catch {
            throw CommandFailure("cannot start: \(error)")
        }
        let env = ProcessInfo.processInfo.environment
        let source = configSource(env)
        // Checked here, with the same plan the daemon runs, because the log level comes from the
        // config and a bad config's diagnostics belong on the terminal, not in a log line. The
        // daemon builds the backends from it with a registry bound to its bus link.
        let validated: ValidatedConfig
        switch ConfigPlan(source: source, registry: Plugins.registry(), environment: env).validate() {
        case .success(let v): validated = v
        case .failure(let e): throw CommandFailure(diagnostics: e.rendered)
        }
        let level = Logger.Level(rawValue: logLevel ?? validated.configuration.daemon.logLevel.rawValue) ?? .info
        let logger = Logs.make(level: level, environment: env)
        let systemd = SystemdNotifier(environment: env)
        var setup = DaemonSetup(
            source: source, config: validated,
            registry: { Plugins.registry(link: $0) }, stateDirectory: stateDir,
            connect: { [bus] in try await bus.connect(host: ExecutorLoopHost.global) }, busDescription: bus.description,
            clock: SystemClock(), makeTimer: { try TimerFDWakeup() }, logger: logger, environment: env)
        if bus.bus == "session" { setup.busMessageLimit = DaemonSetup.sessionBusLimit }
        setup.connectSystem = { try await DBusConnection.system(host: ExecutorLoopHost.global) }
        setup.notify = { state in
            switch state {
            case .ready(let status): systemd.ready(status: status)
            case .reloading: systemd.reloading()
            case .stopping: systemd.stopping()
            }
        }
        let daemon: TocsinDaemon
        do { daemon = try await TocsinDaemon.start(setup) } catch {
            logger.critical("\(error.message)")
            throw CommandFailure.loggedByDaemon
        }
        let controls = AsyncStream<TocsinDaemon.Control> { c in
            let forward = Task {
                for await signal in signals {
                    c.yield(signal == SIGHUP ? .reload : .stop)
                    if signal != SIGHUP {
                        logger.info("stopping", metadata: ["signal": "\(signal == SIGINT ? "SIGINT" : "SIGTERM")"])
                        break
                    }
                }
                c.finish()
            }
            c.onTermination = { _ in forward.cancel() }
        }
        await daemon.run(controls: controls)
    }

    /// `--config`, else the default path when a file is there (looked for again at each
    /// reload), else the built-in default.
    private func configSource(_ env: [String: String]) -> ConfigSource {
        if let config { return .file(config, tomlVersion: tomlVersion) }
        return .file(ConfigLoader.defaultPath(environment: env), tomlVersion: tomlVersion,
                     orBuiltIn: DefaultConfig.candidates, named: DefaultConfig.name)
    }
}

extension ConfigLoadError: LocalizedError {}

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

    static let name = "<built-in default>"

    /// The alarm needs a player and a sound file; without them the default still starts, without
    /// the alarm: the first of these that passes the checks is used.
    static let candidates = [base + alarm, base]
}
