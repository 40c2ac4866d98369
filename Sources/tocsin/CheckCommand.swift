import ArgumentParser
import Foundation
import Logging
import TocsinConfig
import TocsinCore
import TocsinTime

struct CheckCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check",
        abstract: "Validate a configuration file.",
        discussion: "Prints every problem as file:line:column with the source line, and exits 1; or prints a summary and exits 0."
    )

    @Argument(help: "The config file (default: $XDG_CONFIG_HOME/tocsin/config.toml).")
    var file: String?

    func run() throws {
        let env = ProcessInfo.processInfo.environment
        let path = file ?? ConfigLoader.defaultPath(environment: env)
        switch Configs.loadChecked(path: path, environment: env) {
        case .success(let loaded):
            let c = loaded.configuration
            print("ok: \(c.backends.count) backend\(c.backends.count == 1 ? "" : "s"), \(c.notifications.count) notification\(c.notifications.count == 1 ? "" : "s")")
        case .failure(let error):
            FileHandle.standardError.write(Data((error.rendered + "\n").utf8))
            throw ExitCode(1)
        }
    }
}

/// Config loading shared by `check` and `daemon`: parse, decode, then what only the runtime
/// knows (backend options through the registry, zone names), all reported with positions.
enum Configs {
    static func registry() -> BackendRegistry { Plugins.registry() }

    static func loadChecked(path: String, environment: [String: String]) -> Result<LoadedConfig, ConfigLoadError> {
        switch ConfigLoader.load(file: path) {
        case .success(let l): return validate(l, environment: environment)
        case .failure(let e):
            guard let partial = e.partial else { return .failure(e) }
            return validate(partial, environment: environment, earlier: e.diagnostics)
        }
    }

    static func validate(_ loaded: LoadedConfig, environment: [String: String],
                         earlier: [Diagnostic] = []) -> Result<LoadedConfig, ConfigLoadError> {
        var diags = earlier
        let logger = Logs.make(level: .critical, environment: [:])
        if case .failure(let e) = registry().makeBackends(for: loaded.configuration, file: loaded.file,
                                                          environment: BackendEnvironment(logger: logger, environment: environment)) {
            diags += e.diagnostics
        }
        let zones = ZoneInfoDirectory()
        if let tz = loaded.configuration.daemon.timezone, (try? zones.rules(named: tz)) == nil {
            diags.append(Diagnostic(file: loaded.file, location: SourceLocation(line: 1, column: 1),
                                    message: "unknown time zone '\(tz)' in [daemon]"))
        }
        for n in loaded.configuration.notifications {
            if let tz = n.timezone, (try? zones.rules(named: tz)) == nil {
                diags.append(Diagnostic(file: loaded.file, location: n.location,
                                        message: "unknown time zone '\(tz)' in notification '\(n.key ?? "")'"))
            }
            if case .onCalendar(let c) = n.trigger, let tz = c.timeZoneName, (try? zones.rules(named: tz)) == nil {
                diags.append(Diagnostic(file: loaded.file, location: n.triggerLocation,
                                        message: "unknown time zone '\(tz)' in 'on_calendar'"))
            }
        }
        if diags.isEmpty { return .success(loaded) }
        return .failure(ConfigLoadError(code: .invalid, file: loaded.file, diagnostics: diags.sorted { $0.location < $1.location },
                                        source: loaded.source))
    }
}
