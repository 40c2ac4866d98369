import Testing
import TocsinConfig
import TocsinTime
import TocsinModel

private func load(_ toml: String) -> (QuietSettings?, [String]) {
    switch ConfigLoader.load(bytes: Array(toml.utf8), file: "c.toml") {
    case .success(let c): return (c.configuration.quiet, [])
    case .failure(let e): return (nil, e.diagnostics.map { "\($0.location.line):\($0.location.column): \($0.message)" })
    }
}

/// `[quiet]` in the config file: what it reads, and each mistake at its `line:column`.
@Suite("Config: [quiet]")
struct QuietConfigTests {
    static let backends = "[backend.desktop]\ntype = \"libnotify\"\n[backend.log]\ntype = \"log\"\n"

    @Test("weekday nights and Sunday, per-backend modes and the passes")
    func reads() throws {
        let (q, diags) = load(Self.backends + """
            [quiet]
            critical = false
            alarms = true
            backends = { desktop = "drop", log = "hold" }
            [[quiet.window]]
            on_calendar = "Mon..Fri 22:00"
            duration = "9h"
            timezone = "Europe/Berlin"
            [[quiet.window]]
            on_calendar = "Sun"
            duration = "1d"
            """)
        #expect(diags == [])
        let quiet = try #require(q)
        #expect(quiet.windows.count == 2)
        #expect(quiet.windows.first?.duration == .hours(9))
        #expect(quiet.windows.first?.timezone == "Europe/Berlin")
        #expect(quiet.windows.last?.duration == .hours(24))
        #expect(quiet.backends == ["desktop": .drop, "log": .hold])
        #expect(!quiet.criticalPasses && quiet.alarmsPass)
    }

    @Test("no [quiet]: never quiet, critical and alarms pass")
    func defaults() {
        let (q, diags) = load(Self.backends)
        #expect(diags == [])
        #expect(q == QuietSettings())
    }

    static let rows: [SchemaRow] = [
        SchemaRow(name: "a mode that is not hold, drop or deliver",
                  toml: backends + "[quiet]\nbackends = { desktop = \"mute\" }\n",
                  expected: ["6:24: 'backends.desktop' in [quiet] must be \"hold\", \"drop\" or \"deliver\""]),
        SchemaRow(name: "an unknown backend, with a suggestion",
                  toml: backends + "[quiet]\nbackends = { desktp = \"hold\" }\n",
                  expected: ["6:23: unknown backend 'desktp' in [quiet] backends; did you mean 'desktop'?"]),
        SchemaRow(name: "a bad calendar expression at its column",
                  toml: "[[quiet.window]]\non_calendar = \"Mon..Fry 22:00\"\nduration = \"9h\"\n",
                  expected: ["2:21: invalid 'on_calendar': expected a weekday"]),
        SchemaRow(name: "a window without duration",
                  toml: "[[quiet.window]]\non_calendar = \"22:00\"\n",
                  expected: ["1:1: [[quiet.window]] #1 has no 'duration' (how long quiet lasts)"]),
        SchemaRow(name: "a duration over a week",
                  toml: "[[quiet.window]]\non_calendar = \"22:00\"\nduration = \"8d\"\n",
                  expected: ["3:12: 'duration' in [[quiet.window]] #1 is 1w 1d; at most 7d"]),
        SchemaRow(name: "an unknown key, with a suggestion",
                  toml: "[quiet]\ncritcal = true\n",
                  expected: ["2:1: unknown key 'critcal' in [quiet]; did you mean 'critical'?"]),
        SchemaRow(name: "quiet not a table",
                  toml: "quiet = true\n",
                  expected: ["1:9: 'quiet' must be a table ([quiet]), found boolean"]),
    ]

    @Test(arguments: rows)
    func row(_ row: SchemaRow) {
        #expect(load(row.toml).1 == row.expected, "row '\(row.name)'")
    }
}
