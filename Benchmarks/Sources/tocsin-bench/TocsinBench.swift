import ArgumentParser

/// Entry point. Each benchmark is a subcommand in its own file; add new ones (schedule, dbus, ...)
/// to `subcommands` below.
@main
struct TocsinBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tocsin-bench",
        abstract: "Tocsin micro-benchmarks (build with -c release).",
        subcommands: [ParseBenchmark.self, GenerateConfig.self, CoreBenchmark.self, DBusBenchmark.self, VersusBenchmark.self]
    )
}
