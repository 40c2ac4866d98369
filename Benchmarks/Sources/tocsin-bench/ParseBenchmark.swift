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
        let ours = try TocsinConfig.TOML.parse(bytes, file: file)
        let theirs = try TOMLKit.TOMLTable(string: text)
        print("file: \(file) (\(formatted(megabytes, decimals: 2)) MB, \(ours.keys.count) top-level keys, TOMLKit sees \(theirs.keys.count))")

        var sink = 0
        let parse = try measure(warmup: warmup, runs: runs) {
            sink &+= try TocsinConfig.TOML.parse(bytes, file: file).entries.count
        }
        let ourRate = megabytes / parse.bestSeconds
        if onlyTocsin {
            print("parse: \(formatted(ourRate)) MB/s")
            return
        }
        let tomlkit = try measure(warmup: warmup, runs: runs) {
            sink &+= try TOMLKit.TOMLTable(string: text).count
        }
        let theirRate = megabytes / tomlkit.bestSeconds
        print("parse: \(formatted(ourRate)) MB/s")
        print("tomlkit: \(formatted(theirRate)) MB/s")
        print("ratio: \(formatted(ourRate / theirRate, decimals: 2))x (best of \(runs) runs after \(warmup) warm-up, checksum \(sink))")
    }
}
