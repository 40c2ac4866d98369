import ArgumentParser
import Foundation
import TOMLKit
import TocsinConfig

/// `tocsin-bench parse FILE`: throughput of `TOML.parse` against TOMLKit (toml++) on the same
/// bytes in the same process. Inputs are prepared before timing (bytes for ours, a `String` for
/// TOMLKit), so only parsing is measured.
struct ParseBenchmark: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "parse",
        abstract: "Parse a TOML file with Tocsin's parser and with TOMLKit; print MB/s and the ratio."
    )

    @Argument(help: "The TOML file to parse (see `tocsin-bench generate`).")
    var file: String

    @Option(help: "Timed runs per parser; the best is reported.")
    var runs = 10

    @Option(help: "Untimed warm-up runs per parser.")
    var warmup = 2

    @Flag(help: "Time only Tocsin's parser (for profiling it alone).")
    var onlyTocsin = false

    func run() throws {
        guard let data = FileManager.default.contents(atPath: file) else {
            throw ValidationError("cannot read \(file)")
        }
        let bytes = [UInt8](data)
        let text = String(decoding: bytes, as: UTF8.self)
        let megabytes = Double(bytes.count) / 1_000_000

        // Both must accept the file, or the comparison is meaningless.
        let ourTable = try TocsinConfig.TOML.parse(bytes, file: file)
        let theirTable = try TOMLKit.TOMLTable(string: text)
        print("file: \(file) (\(formatted(megabytes, decimals: 2)) MB, \(ourTable.keys.count) top-level keys, TOMLKit sees \(theirTable.keys.count))")

        var sink = 0
        let ours: () throws -> Void = { sink &+= try TocsinConfig.TOML.parse(bytes, file: file).entries.count }
        let theirs: () throws -> Void = { sink &+= try TOMLKit.TOMLTable(string: text).count }
        if onlyTocsin {
            let parse = try measure(warmup: warmup, runs: runs, ours)
            print("parse: \(formatted(megabytes / parse.bestSeconds)) MB/s")
            return
        }
        // Interleaved, so load from other processes on a shared machine affects both alike.
        let results = try measureInterleaved(warmup: warmup, runs: runs, [ours, theirs])
        let ourRate = megabytes / results[0].bestSeconds
        let theirRate = megabytes / results[1].bestSeconds
        print("parse: \(formatted(ourRate)) MB/s")
        print("tomlkit: \(formatted(theirRate)) MB/s")
        print("ratio: \(formatted(ourRate / theirRate, decimals: 2))x (best of \(runs) runs after \(warmup) warm-up, checksum \(sink))")
    }
}
