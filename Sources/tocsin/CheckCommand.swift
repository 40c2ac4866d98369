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
        commandName: "check", _superCommandName: Tocsin.name,
        abstract: "Validate a configuration file.",
        discussion: "Prints every problem as file:line:column with the source line, and exits 1; or prints a summary and exits 0. A warning (a notification that never fires, which the daemon skips) is printed the same way and does not fail the check."
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
        // The daemon's own plan, stopped after validation: no backend is constructed.
        let plan = ConfigPlan(source: .file(path, tomlVersion: tomlVersion), registry: Plugins.registry(), environment: env)
        let result = plan.validate(skippedAt: SystemClock().now()) { progress.enter("checking \(path): \($0)") }
        progress.finish()
        switch result {
        case .success(let validated):
            // Warnings do not fail the check: the daemon starts with this file and only skips
            // the entry, and a check stricter than the daemon would refuse a file that works.
            if !validated.warnings.isEmpty {
                StandardStream.error.write(DiagnosticError(validated.warnings).rendered(source: validated.loaded.source) + "\n")
            }
            let c = validated.configuration
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

/// What `check` and `daemon` share besides the `ConfigPlan` (`Sources/TocsinGateway/Daemon/ConfigPlan.swift`).
enum Configs {
    /// `--toml-version 1.0|1.1` of `check` and `daemon`.
    static func tomlVersion(_ text: String) throws -> TOMLVersion {
        guard let version = TOMLVersion(text) else { throw ValidationError("expected 1.0 or 1.1, found '\(text)'") }
        return version
    }
}
