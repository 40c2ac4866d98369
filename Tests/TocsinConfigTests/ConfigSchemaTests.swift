import Testing
import TocsinConfig
import TocsinTime
import TocsinModel

/// One bad config and the diagnostics it must produce, exactly.
struct SchemaRow: Sendable, CustomTestStringConvertible {
    var name: String
    var toml: String
    /// `line:column: message` of every expected error, in order.
    var expected: [String]
    var testDescription: String { name }
}

private func diagnostics(_ toml: String) -> [String] {
    switch ConfigLoader.load(bytes: Array(toml.utf8), file: "c.toml") {
    case .success: return []
    case .failure(let e): return e.diagnostics.map { "\($0.location.line):\($0.location.column): \($0.message)" }
    }
}

@Suite("Config schema")
struct ConfigSchemaTests {
    static let rows: [SchemaRow] = [
        SchemaRow(name: "misspelt key gets a suggestion",
                  toml: "[[notification]]\ntitel = \"x\"\nafter = \"1h\"\n",
                  expected: ["1:1: missing required key 'title' in [[notification]] #1",
                             "2:1: unknown key 'titel' in [[notification]] #1; did you mean 'title'?"]),
        SchemaRow(name: "wrong type names expected and found",
                  toml: "[[notification]]\ntitle = 5\nafter = \"1h\"\n",
                  expected: ["2:9: 'title' in [[notification]] #1 must be a string, found integer"]),
        SchemaRow(name: "no trigger",
                  toml: "[[notification]]\ntitle = \"x\"\n",
                  expected: ["1:1: [[notification]] #1 has no trigger; give one of 'at', 'after', 'every', 'on_calendar', 'remind_before'"]),
        SchemaRow(name: "two triggers name both keys",
                  toml: "[[notification]]\ntitle = \"x\"\nafter = \"1h\"\non_calendar = \"daily\"\n",
                  expected: ["4:1: [[notification]] #1 has two triggers, 'after' and 'on_calendar'; give exactly one"]),
        SchemaRow(name: "zero interval refused with the caret on the value",
                  toml: "[[notification]]\ntitle = \"x\"\nevery = \"0\"\n",
                  expected: ["3:10: invalid 'every': the interval must be longer than zero"]),
        SchemaRow(name: "count without every",
                  toml: "[[notification]]\ntitle = \"x\"\nafter = \"1h\"\ncount = 3\n",
                  expected: ["4:1: 'count' only goes with 'every'"]),
        SchemaRow(name: "bad urgency lists the choices",
                  toml: "[[notification]]\ntitle = \"x\"\nafter = \"1h\"\nurgency = \"loud\"\n",
                  expected: ["4:11: 'urgency' must be one of 'low', 'normal', 'critical', found 'loud'"]),
        SchemaRow(name: "remind_before needs at",
                  toml: "[[notification]]\ntitle = \"x\"\nremind_before = [\"1h\"]\n",
                  expected: ["3:1: 'remind_before' needs 'at', the time of the event"]),
        SchemaRow(name: "duplicate notification keys",
                  toml: "[[notification]]\nkey = \"a\"\ntitle = \"x\"\nafter = \"1h\"\n[[notification]]\nkey = \"a\"\ntitle = \"y\"\nafter = \"1h\"\n",
                  expected: ["6:7: duplicate notification key 'a' (first defined at 2:7)"]),
        SchemaRow(name: "unknown backend in a notification",
                  toml: "[backend.log]\ntype = \"log\"\n[[notification]]\ntitle = \"x\"\nafter = \"1h\"\nbackends = [\"lgo\"]\n",
                  expected: ["6:13: unknown backend 'lgo' in [[notification]] #1; did you mean 'log'?"]),
        SchemaRow(name: "[notification.NAME] is answered with the [[notification]] and key to write",
                  toml: "[notification.standup]\ntitle = \"x\"\non_calendar = \"09:25\"\n",
                  expected: ["1:1: 'notification' must be an array of tables ([[notification]]), found table; write [[notification]] with key = \"standup\" instead of [notification.standup]"]),
        SchemaRow(name: "[notification.\"a b\"]: no suggestion it could not quote as written",
                  toml: "[notification.\"a b\"]\ntitle = \"x\"\n",
                  expected: ["1:1: 'notification' must be an array of tables ([[notification]]), found table"]),
        SchemaRow(name: "backend without type",
                  toml: "[backend.log]\nformat = \"json\"\n",
                  expected: ["1:1: missing required key 'type' in [backend.log]"]),
        SchemaRow(name: "unknown top-level key",
                  toml: "[deamon]\n",
                  expected: ["1:2: unknown key 'deamon' in the top level; did you mean 'daemon'?"]),
        SchemaRow(name: "NUL in a string",
                  toml: "[[notification]]\ntitle = \"a\\u0000b\"\nafter = \"1h\"\n",
                  expected: ["2:9: 'title' must not contain a NUL character"]),
        SchemaRow(name: "regression: NUL in a user_info value, at the value",
                  toml: "[[notification]]\ntitle = \"x\"\nafter = \"1h\"\nuser_info = { k = \"v\\u0000w\" }\n",
                  expected: ["4:19: 'user_info.k' must not contain a NUL character"]),
        SchemaRow(name: "regression: NUL in a user_info key, at the key",
                  toml: "[[notification]]\ntitle = \"x\"\nafter = \"1h\"\nuser_info = { \"k\\u0000j\" = \"v\" }\n",
                  expected: ["4:15: a key in 'user_info' must not contain a NUL character"]),
        SchemaRow(name: "regression: NUL in an action id, at the id",
                  toml: "[[notification]]\ntitle = \"x\"\nafter = \"1h\"\nactions = { \"a\\u0000b\" = \"label\" }\n",
                  expected: ["4:13: a key in 'actions' must not contain a NUL character"]),
        SchemaRow(name: "regression: NUL in an action label, at the label",
                  toml: "[[notification]]\ntitle = \"x\"\nafter = \"1h\"\nactions = { a = \"la\\u0000bel\" }\n",
                  expected: ["4:17: 'actions.a' must not contain a NUL character"]),
        SchemaRow(name: "regression: NUL in a remind_before offset, at the element",
                  toml: "[[notification]]\ntitle = \"x\"\nat = 2030-01-01T10:00:00Z\nremind_before = [\"1h\", \"2h\\u0000\"]\n",
                  expected: ["4:24: 'remind_before' must not contain a NUL character"]),
        SchemaRow(name: "an empty title, at the value",
                  toml: "[[notification]]\ntitle = \"\"\nafter = \"1h\"\n",
                  expected: ["2:9: 'title' must not be empty"]),
        SchemaRow(name: "an empty action id, at the table",
                  toml: "[[notification]]\ntitle = \"x\"\nafter = \"1h\"\nactions = { \"\" = \"label\" }\n",
                  expected: ["4:11: an action id in 'actions' must not be empty"]),
        SchemaRow(name: "an empty user_info key, at the table",
                  toml: "[[notification]]\ntitle = \"x\"\nafter = \"1h\"\nuser_info = { \"\" = \"v\" }\n",
                  expected: ["4:13: a key in 'user_info' must not be empty"]),
        SchemaRow(name: "local date where a date-time is needed",
                  toml: "[[notification]]\ntitle = \"x\"\nat = 2026-12-01\n",
                  expected: ["3:6: 'at' needs a date and a time, found a local date"]),
        SchemaRow(name: "every error of a file is reported",
                  toml: "[daemon]\nmissed = \"never\"\nmax_pending = 0\n[[notification]]\ntitle = \"x\"\nafter = \"soon\"\n",
                  expected: ["2:10: 'missed' must be one of 'skip', 'fire-once', 'fire-all', found 'never'",
                             "3:15: 'max_pending' must be between 1 and 100000000, found 0",
                             "6:10: invalid 'after': expected a number before 'soon'"]),
        SchemaRow(name: "unknown span unit is named with the valid ones, caret on the unit",
                  toml: "[[notification]]\ntitle = \"x\"\nafter = \"5 parsecs\"\n",
                  expected: ["3:12: invalid 'after': unknown time unit 'parsecs' (expected us, ms, s, min, h, d, w, M, y)"]),
        SchemaRow(name: "a dangling decimal point in a span, caret after the point",
                  toml: "[[notification]]\ntitle = \"x\"\nevery = \"1.h\"\n",
                  expected: ["3:12: invalid 'every': expected a digit after the decimal point"]),
        SchemaRow(name: "unknown unit inside remind_before",
                  toml: "[[notification]]\ntitle = \"x\"\nat = 2030-01-01T10:00:00Z\nremind_before = [\"1h\", \"10 mins\"]\n",
                  expected: ["4:24: invalid offset '10 mins' in 'remind_before': unknown time unit 'mins' (expected us, ms, s, min, h, d, w, M, y)"]),
        SchemaRow(name: "a bad remind_before offset on its own line, caret on that element",
                  toml: "[[notification]]\ntitle = \"x\"\nat = 2030-01-01T10:00:00Z\nremind_before = [\n  \"1h\",\n  \"-5min\",\n]\n",
                  expected: ["6:3: invalid offset '-5min' in 'remind_before': durations cannot be negative"]),
        SchemaRow(name: "escapes before a bad span unit: caret on the unit as written",
                  toml: "[[notification]]\ntitle = \"x\"\nevery = \"\\u0031\\u0030 parsecs\"\n",
                  expected: ["3:23: invalid 'every': unknown time unit 'parsecs' (expected us, ms, s, min, h, d, w, M, y)"]),
        SchemaRow(name: "an escape in a calendar expression: caret on the weekday as written",
                  toml: "[[notification]]\ntitle = \"x\"\non_calendar = \"Mon\\u002E.Fry\"\n",
                  expected: ["3:26: invalid 'on_calendar': expected a weekday"]),
        SchemaRow(name: "a multi-line basic string: caret on the line and column of the weekday",
                  toml: "[[notification]]\ntitle = \"x\"\non_calendar = \"\"\"\nMon..Fry 10:00\"\"\"\n",
                  expected: ["4:6: invalid 'on_calendar': expected a weekday"]),
        SchemaRow(name: "a multi-line literal string over three lines: caret on the unit",
                  toml: "[[notification]]\ntitle = \"x\"\nevery = '''\n1h\n 30 parsecs'''\n",
                  expected: ["5:5: invalid 'every': unknown time unit 'parsecs' (expected us, ms, s, min, h, d, w, M, y)"]),
        SchemaRow(name: "a line-ending backslash and CRLF line ends: caret on the unit on the next line",
                  toml: "[[notification]]\r\ntitle = \"x\"\r\nevery = \"\"\"1h \\  \r\n\r\n    30 parsecs\"\"\"\r\n",
                  expected: ["5:8: invalid 'every': unknown time unit 'parsecs' (expected us, ms, s, min, h, d, w, M, y)"]),
        SchemaRow(name: "a duplicate key is reported though the first entry with it has another mistake",
                  toml: "[[notification]]\nkey = \"a\"\ntitle = \"x\"\nevery = \"1 parsec\"\n[[notification]]\nkey = \"a\"\ntitle = \"y\"\nafter = \"1min\"\n",
                  expected: ["4:12: invalid 'every': unknown time unit 'parsec' (expected us, ms, s, min, h, d, w, M, y)",
                             "6:7: duplicate notification key 'a' (first defined at 2:7)"]),
        SchemaRow(name: "a duplicate key is reported though the second entry with it has another mistake",
                  toml: "[[notification]]\nkey = \"a\"\ntitle = \"x\"\nafter = \"1min\"\n[[notification]]\nkey = \"a\"\ntitle = \"y\"\nevery = \"1 parsec\"\n",
                  expected: ["6:7: duplicate notification key 'a' (first defined at 2:7)",
                             "8:12: invalid 'every': unknown time unit 'parsec' (expected us, ms, s, min, h, d, w, M, y)"]),
        SchemaRow(name: "a duplicate key in the inline form, the first entry with another mistake",
                  toml: "notification = [ {key = \"a\", title = \"x\", every = \"1 parsec\"}, {key = \"a\", title = \"y\", after = \"1min\"} ]\n",
                  expected: ["1:54: invalid 'every': unknown time unit 'parsec' (expected us, ms, s, min, h, d, w, M, y)",
                             "1:71: duplicate notification key 'a' (first defined at 1:25)"]),
    ]

    @Test("bad configs produce exactly these diagnostics", arguments: rows)
    func badConfigs(_ row: SchemaRow) {
        let got = diagnostics(row.toml)
        #expect(got == row.expected, "row '\(row.name)'")
    }

    @Test("a complete config decodes every field")
    func goodConfig() throws {
        let toml = """
        [daemon]
        state_dir = "/tmp/x"
        missed = "skip"
        max_late = "1h"
        timezone = "Europe/Berlin"

        [backend.log]
        type = "log"

        [[notification]]
        key = "standup"
        title = "Stand-up"
        body = "Room 4"
        on_calendar = "Mon..Fri 09:30"
        urgency = "critical"
        actions = { open = "Open notes", later = "Later" }
        user_info = { room = "4" }
        backends = ["log"]

        [[notification]]
        title = "Auction ends"
        at = 2026-12-01T18:00:00+01:00
        remind_before = ["24h", "3h", "1h", "0s"]

        [[notification]]
        key = "pomodoro"
        title = "Break"
        every = "25min"
        count = 4
        missed = "fire-all"
        """
        let loaded = try ConfigLoader.load(bytes: Array(toml.utf8), file: "c.toml").get()
        let c = loaded.configuration
        #expect(c.daemon.missed == .skip)
        #expect(c.daemon.maxLate == .hours(1))
        #expect(c.daemon.timezone == "Europe/Berlin")
        #expect(c.backends.map(\.name) == ["log"])
        #expect(c.notifications.map { $0.key ?? "" } == ["standup", "config-2", "pomodoro"])
        let standup = c.notifications[0]
        #expect(standup.urgency == .critical)
        #expect(standup.actions == [NotificationAction(id: "open", label: "Open notes"), NotificationAction(id: "later", label: "Later")])
        #expect(standup.userInfo == ["room": "4"])
        if case .onCalendar(let spec) = standup.trigger {
            #expect(spec.normalized == "Mon..Fri *-*-* 09:30:00")
        } else { Issue.record("standup trigger is \(standup.trigger)") }
        if case .remindBefore(let event, let offsets) = c.notifications[1].trigger {
            #expect(event == .instant(Instant(seconds: 1_796_144_400)))
            #expect(offsets == [.hours(24), .hours(3), .hours(1), .zero])
        } else { Issue.record("auction trigger is \(c.notifications[1].trigger)") }
        if case .every(let p, let count, _, _) = c.notifications[2].trigger {
            #expect(p == .minutes(25))
            #expect(count == 4)
        } else { Issue.record("pomodoro trigger is \(c.notifications[2].trigger)") }
        #expect(c.notifications[2].missed == .fireAll)
    }

    @Test("diagnostics render like a compiler: header, source line, caret")
    func rendering() {
        let toml = "[[notification]]\n\ttitle = 5\nafter = \"1h\"\n"
        guard case .failure(let e) = ConfigLoader.load(bytes: Array(toml.utf8), file: "c.toml") else {
            Issue.record("accepted"); return
        }
        #expect(e.rendered == "c.toml:2:10: error: 'title' in [[notification]] #1 must be a string, found integer\n\ttitle = 5\n\t        ^")
    }

    @Test("suggestions catch typos and ignore unrelated words")
    func suggestions() {
        let known = NotificationFields.all.map(\.name)
        #expect(Suggestion.closest(to: "titel", among: known) == "title")
        #expect(Suggestion.closest(to: "on_calender", among: known) == "on_calendar")
        #expect(Suggestion.closest(to: "userinfo", among: known) == "user_info")
        #expect(Suggestion.closest(to: "zzzzzz", among: known) == nil)
    }

    struct SuggestionRow: Sendable, CustomTestStringConvertible {
        var name: String
        /// Unknown keys before the typo.
        var fillers: Int
        /// A line after the typo whose error the reader finds before any unknown key.
        var after: String
        var suggested: Bool
        var testDescription: String { name }
    }

    static let suggestionRows = [
        SuggestionRow(name: "the typo is the table's first unknown key", fillers: 0, after: "", suggested: true),
        SuggestionRow(name: "the typo comes after as many unknown keys as a report shows", fillers: Diagnostic.reportLimit,
                      after: "", suggested: false),
        // Found first, located last: sorted by location, the typo is the 100th diagnostic, shown.
        SuggestionRow(name: "one short of the limit, with a later key's error found first", fillers: Diagnostic.reportLimit - 1,
                      after: "max_pending_per_client = 0\n", suggested: true),
    ]

    @Test("a typo gets its suggestion wherever a report can show it; past the report's limit it gets none",
          arguments: suggestionRows)
    func suggestionsStopWhereTheReportDoes(_ row: SuggestionRow) {
        let toml = "[daemon]\n" + (0..<row.fillers).map { "unknown_\($0) = 1\n" }.joined() + "max_pendin = 5\n" + row.after
        let found = diagnostics(toml)
        let typo = found.first { $0.contains("'max_pendin'") } ?? ""
        #expect(found.count == row.fillers + 1 + (row.after.isEmpty ? 0 : 1), "\(row.name): \(found.suffix(2))")
        #expect(typo.hasPrefix("\(row.fillers + 2):1: unknown key 'max_pendin' in [daemon]"), "\(row.name): \(typo)")
        #expect(typo.hasSuffix("; did you mean 'max_pending'?") == row.suggested, "\(row.name): \(typo)")
    }
}
