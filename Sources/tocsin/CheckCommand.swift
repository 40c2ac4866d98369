import ArgumentParser
import FoundationEssentials
import Logging
import TocsinConfig
import TocsinGateway
import TocsinCore
import TocsinTime
import TocsinSystem
import TocsinModel

struct CheckCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check",
        abstract: "Validate a configuration file.",
        discussion: "Prints every problem as file:line:column with the source line, and exits 1; or prints a summary and exits 0."
    )

    @Argument(help: "The config file (default: $XDG_CONFIG_HOME/tocsin/config.toml).")
    var file: String?

    @Option(name: .customLong("toml-version"), help: "Read the file as TOML 1.0 or 1.1 (default: 1.1); in 1.0 a 1.1 feature is an error naming it.",
            transform: Configs.tomlVersion)
    var tomlVersion: TOMLVersion = .default

    func run() throws {
        let env = ProcessInfo.processInfo.environment
        let path = file ?? ConfigLoader.defaultPath(environment: env)
        let progress = ProgressReporter(phase: "checking \(path): reading and decoding")
        let result = Configs.loadChecked(path: path, environment: env, tomlVersion: tomlVersion) { progress.enter("checking \(path): \($0)") }
        progress.finish()
        switch result {
        case .success(let loaded):
            let c = loaded.configuration
            print("ok: \(c.backends.count) backend\(c.backends.count == 1 ? "" : "s"), \(c.notifications.count) notification\(c.notifications.count == 1 ? "" : "s")")
            // Only worth a line when something asks to wake: said, never refused (it still fires awake).
            let waking = c.notifications.filter(\.wake).count
            if waking > 0 {
                let availability = c.daemon.wakeAlarms ? WakeAvailability.probe() : .off
                print("wake: \(availability) (\(waking) notification\(waking == 1 ? "" : "s") with wake = true; checked as this process, the daemon may hold other capabilities)")
            }
        case .failure(let error):
            throw CommandFailure(diagnostics: error.rendered)
        }
    }
}

/// Config loading shared by `check` and `daemon`: parse, decode, then what only the runtime
/// knows (backend options through the registry, zone names), all reported with positions.
enum Configs {
    static func registry() -> BackendRegistry { Plugins.registry() }

    /// `--toml-version 1.0|1.1` of `check` and `daemon`.
    static func tomlVersion(_ text: String) throws -> TOMLVersion {
        guard let version = TOMLVersion(text) else { throw ValidationError("expected 1.0 or 1.1, found '\(text)'") }
        return version
    }

    /// `phase` hears when the load moves on to the checks only the runtime can make.
    static func loadChecked(path: String, environment: [String: String], tomlVersion: TOMLVersion = .default,
                            phase: (String) -> Void = { _ in }) -> Result<LoadedConfig, ConfigLoadError> {
        switch ConfigLoader.load(file: path, tomlVersion: tomlVersion) {
        case .success(let l):
            phase("checking backends, zones and \(l.configuration.notifications.count) notifications")
            return validate(l, environment: environment)
        case .failure(let e):
            guard let partial = e.partial else { return .failure(e) }
            phase("checking backends, zones and \(partial.configuration.notifications.count) notifications")
            return validate(partial, environment: environment, earlier: e.diagnostics)
        }
    }

    static func validate(_ loaded: LoadedConfig, environment: [String: String],
                         earlier: [Diagnostic] = []) -> Result<LoadedConfig, ConfigLoadError> {
        ConfigValidation.validate(loaded, registry: registry(), environment: environment, earlier: earlier)
    }
}
