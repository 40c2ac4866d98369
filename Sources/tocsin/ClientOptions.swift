import ArgumentParser
import DBus
import FoundationEssentials
import TocsinModel
import TocsinTime

/// `--bus` and `--timeout`, shared by every client command (the daemon takes `--bus` alone).
struct ClientOptions: ParsableArguments {
    @OptionGroup var busOptions: BusOptions
    @Option(help: "How long to wait for the daemon's answer, e.g. 30s (default: $TOCSIN_TIMEOUT, else 10s).")
    var timeout: String?

    /// A daemon answers every method from its one loop in milliseconds; the longest legitimate
    /// wait is a call held while it loads its state at start-up (about 3 s for 1,000,000 pending,
    /// docs/BENCHMARKS.md). 10 s leaves a wide margin over that and still tells someone at a
    /// terminal well before libdbus's own 25 s that a stopped or wedged daemon is not answering.
    static let defaultTimeout = TimeSpan.seconds(10)
    static let environmentVariable = "TOCSIN_TIMEOUT"

    var bus: String { busOptions.bus }
    var description: String { busOptions.description }

    func connect(timeout: TimeSpan) async throws -> DBusConnection {
        try await busOptions.connect(timeout: .microseconds(timeout.microseconds))
    }

    /// Refuses a malformed `--timeout` or `$TOCSIN_TIMEOUT` before anything is sent: a usage
    /// mistake (exit 64), as for every value the CLI refuses itself. ArgumentParser prints a
    /// `validate()` message as it is, so the quoted value is escaped here.
    func validate() throws {
        _ = try replyTimeout()
    }

    /// `--timeout`, else `$TOCSIN_TIMEOUT`, else `defaultTimeout`; a malformed one names its source.
    func replyTimeout() throws(ValidationError) -> TimeSpan {
        let sources: [(String, String?)] = [
            ("--timeout", timeout), ("$\(Self.environmentVariable)", ProcessInfo.processInfo.environment[Self.environmentVariable]),
        ]
        guard let (name, text) = sources.first(where: { $0.1 != nil }), let text else { return Self.defaultTimeout }
        do {
            return try TimeSpan.parsePositive(text)
        } catch {
            throw ValidationError("invalid \(name) '\(JSONText.visible(text))': \(error)")
        }
    }
}
