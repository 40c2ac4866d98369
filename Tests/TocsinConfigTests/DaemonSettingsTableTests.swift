import Testing
import TocsinConfig
import TocsinTime
import TocsinModel

/// `[daemon]` is read through one table (`DaemonKeys`): each key's default, range and doc are
/// declared once, and the reader, the defaults and the docs all come from there.
@Suite("[daemon] settings table")
struct DaemonSettingsTableTests {
    static func load(_ toml: String) -> (DaemonSettings?, [String]) {
        switch ConfigLoader.load(bytes: Array(toml.utf8), file: "c.toml") {
        case .success(let loaded): return (loaded.configuration.daemon, [])
        case .failure(let e): return (nil, e.diagnostics.map { "\($0.location.line):\($0.location.column): \($0.message)" })
        }
    }

    @Test("an empty [daemon] is the table's defaults")
    func defaults() throws {
        let d = try #require(Self.load("[daemon]\n").0)
        #expect(d == DaemonSettings())
        #expect(d.logLevel == DaemonKeys.logLevel.defaultValue && d.logLevel == .info)
        #expect(d.missed == DaemonKeys.missed.defaultValue && d.missed == .fireOnce)
        #expect(d.maxPending == 1_000_000 && d.maxPendingPerClient == 10_000)
        #expect(d.minPeriod == .seconds(1) && d.historyMaxEntries == 10_000 && d.historyMaxAge == .hours(30 * 24))
        #expect(d.stateDirectory == nil && d.timezone == nil && d.maxLate == nil && d.maxMessageSize == nil)
        // The notification floor's default is the [daemon] key's.
        #expect(SpecLimits().minPeriod == DaemonKeys.minPeriod.defaultValue)
    }

    struct Row: Sendable, CustomTestStringConvertible {
        var name: String
        var toml: String
        var expected: [String]
        var testDescription: String { name }
    }

    /// Each key's bounds, at the value, with the key named: the table's range is the reader's.
    static let rows: [Row] = [
        Row(name: "log_level outside its words", toml: "log_level = \"loud\"",
            expected: ["2:13: 'log_level' must be one of 'trace', 'debug', 'info', 'notice', 'warning', 'error', 'critical', found 'loud'"]),
        Row(name: "missed outside its words", toml: "missed = \"never\"",
            expected: ["2:10: 'missed' must be one of 'skip', 'fire-once', 'fire-all', found 'never'"]),
        Row(name: "max_pending 0", toml: "max_pending = 0",
            expected: ["2:15: 'max_pending' must be between 1 and 100000000, found 0"]),
        Row(name: "max_pending_per_client above its range", toml: "max_pending_per_client = 100000001",
            expected: ["2:26: 'max_pending_per_client' must be between 1 and 100000000, found 100000001"]),
        Row(name: "max_message_size below 1 MiB", toml: "max_message_size = 1000",
            expected: ["2:20: 'max_message_size' must be between 1048576 and 134217728, found 1000"]),
        Row(name: "history_max_entries negative", toml: "history_max_entries = -1",
            expected: ["2:23: 'history_max_entries' must be between 0 and 10000000, found -1"]),
        Row(name: "min_period above 1d", toml: "min_period = \"25h\"",
            expected: ["2:14: 'min_period' is 1d 1h; it must be between 1ms and 1d"]),
        Row(name: "wake_alarms not a boolean", toml: "wake_alarms = \"yes\"",
            expected: ["2:15: 'wake_alarms' in [daemon] must be a boolean, found string"]),
        Row(name: "every key at a bound is accepted",
            toml: "max_pending = 1\nmax_pending_per_client = 100000000\nmax_message_size = 134217728\nhistory_max_entries = 0\nmin_period = \"1ms\"",
            expected: []),
    ]

    @Test("each key's range is enforced at its value", arguments: rows)
    func ranges(row: Row) {
        let (_, diags) = Self.load("[daemon]\n" + row.toml + "\n")
        #expect(diags == row.expected, "row '\(row.name)'")
    }

    /// The docs are filled from the defaults and ranges; these are the texts as they were written by hand.
    @Test("the docs carry the table's defaults and ranges")
    func docs() {
        let summary = Dictionary(uniqueKeysWithValues: DaemonSettings.keys.map { ($0.name, $0.summary) })
        #expect(summary["log_level"] == "trace, debug, info (default), notice, warning, error or critical.")
        #expect(summary["missed"] == "Default missed-fire policy: skip, fire-once (default) or fire-all.")
        #expect(summary["max_pending"] == "Limit on pending notifications (default 1000000); beyond it Schedule is refused.")
        #expect(summary["min_period"] == "Least distance between two firings of one notification (default 1s, 1ms to 1d).")
        #expect(summary["history_max_age"] == "History drops events older than this (default 30d).")
        #expect(summary["max_message_size"] == "Largest D-Bus message the daemon sends, in bytes (default: 134217728 on the session bus, else 33554432).")
        #expect(DaemonSettings.keys.map(\.type) == ["string", "string", "string", "duration", "integer", "integer", "string",
                                                   "duration", "integer", "integer", "duration", "boolean"])
        #expect(summary["wake_alarms"] == "Arm a CLOCK_REALTIME_ALARM timer so notifications with wake = true bring the machine out of suspend (default true).")
    }
}
