import ArgumentParser
import Foundation
import TocsinCore
import TocsinSystem

/// Entry point. Each benchmark is a subcommand in its own file; add new ones (schedule, dbus, ...)
/// to `subcommands` below.
@main
struct TocsinBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tocsin-bench",
        abstract: "Tocsin micro-benchmarks (build with -c release).",
        subcommands: [ParseBenchmark.self, GenerateConfig.self, CoreBenchmark.self, DBusBenchmark.self, VersusBenchmark.self,
                      FootprintBenchmark.self, PrecisionBenchmark.self,
                      NullGateway.self]
    )

    /// What `AsyncParsableCommand.main()` does. Only `null-gateway` runs on Tocsin's own executor
    /// loop, as the daemon does, since it stands in for the daemon; the in-process benchmarks keep
    /// the default executor their recorded figures were measured on.
    static func main() {
        if CommandLine.arguments.dropFirst().first == NullGateway.configuration.commandName {
            do { try LoopExecutor.installAsGlobalExecutor() } catch { exit(withError: error) }
        }
        do {
            var command = try parseAsRoot()
            if let asyncCommand = command as? any AsyncParsableCommand {
                try LoopExecutor.runMain {
                    var c = asyncCommand
                    try await c.run()
                }
            } else {
                try command.run()
            }
        } catch {
            exit(withError: error)
        }
    }
}
