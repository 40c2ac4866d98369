import Testing
import TocsinConfig
import TocsinTime
import TocsinModel

/// `[daemon] history_max_entries` and `history_max_age`.
@Suite("History config")
struct HistoryConfigTests {
    static func load(_ toml: String) -> (DaemonSettings?, [String]) {
        switch ConfigLoader.load(bytes: Array(toml.utf8), file: "c.toml") {
        case .success(let loaded): return (loaded.configuration.daemon, [])
        case .failure(let e): return (nil, e.diagnostics.map { "\($0.location.line):\($0.location.column): \($0.message)" })
        }
    }

    @Test func defaultsAndValues() {
        #expect(Self.load("").0?.historyMaxEntries == 10_000)
        #expect(Self.load("").0?.historyMaxAge == .hours(30 * 24))
        let set = Self.load("[daemon]\nhistory_max_entries = 0\nhistory_max_age = \"7d\"\n").0
        #expect(set?.historyMaxEntries == 0)
        #expect(set?.historyMaxAge == .hours(7 * 24))
    }

    @Test func badValuesNameTheKeyAndPosition() {
        let negative = Self.load("[daemon]\nhistory_max_entries = -1\n").1
        #expect(negative.count == 1 && negative[0].hasPrefix("2:23: ") && negative[0].contains("history_max_entries"), "\(negative)")
        let zero = Self.load("[daemon]\nhistory_max_age = \"0\"\n").1
        #expect(zero.count == 1 && zero[0].hasPrefix("2:20: ") && zero[0].contains("history_max_age"), "\(zero)")
    }
}
