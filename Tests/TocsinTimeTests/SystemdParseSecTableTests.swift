import Testing
@testable import TocsinTime

/// The `parse_sec` rows of systemd's `src/test/test-time-util.c`, row by row: the accepted rows
/// of the newest version the search index showed (`TEST(parse_sec)`, with the Greek-mu row), the
/// rejected rows of the newest version it showed in full (`test_parse_sec`, commit 0183337).
/// Each row names itself (`parse_sec(' 5. ')`) so a failure can be found in systemd's file by grep.
@Suite("systemd test-time-util.c parse_sec")
struct SystemdParseSecTableTests {
    static let second: Int64 = 1_000_000
    static let millisecond: Int64 = 1_000
    static let year: Int64 = 31_557_600 * second

    struct Valid: CustomTestStringConvertible, Sendable {
        var text: String, microseconds: Int64
        var testDescription: String { "parse_sec('\(text)') == \(microseconds)" }
    }

    static let valid: [Valid] = validRows.map { Valid(text: $0.0, microseconds: $0.1) }

    static let validRows: [(String, Int64)] = [
        ("5s", 5 * second),
        ("5s500ms", 5 * second + 500 * millisecond),
        (" 5s 500ms  ", 5 * second + 500 * millisecond),
        (" 5.5s  ", 5 * second + 500 * millisecond),
        (" 5.5s 0.5ms ", 5 * second + 500 * millisecond + 500),
        (" .22s ", 220 * millisecond),
        (" .50y ", year / 2),
        ("2.5", 2500 * millisecond),
        (".7", 700 * millisecond),
        ("23us", 23),
        ("23μs", 23),  // Greek small letter mu
        ("23µs", 23),  // micro sign
        ("+3.1s", 3100 * millisecond),
        ("3.1s.2", 3300 * millisecond),
        ("3.1 .2", 3300 * millisecond),
        ("3.1 sec .2 sec", 3300 * millisecond),
        ("3.1 sec 1.2 sec", 4300 * millisecond),
    ]

    @Test(arguments: valid)
    func accepted(_ row: Valid) throws {
        let name = row.testDescription
        let span = try TimeSpan.parse(row.text)
        #expect(span.microseconds == row.microseconds, "\(name): got \(span.microseconds)")
    }

    /// The table itself against the oracle, so a mistyped expectation cannot pass unnoticed.
    @Test func validRowsAgreeWithSystemdAnalyze() throws {
        // systemd-analyze echoes the original without its trailing spaces (for some spans).
        func key(_ s: String) -> String { String(s.reversed().drop { $0 == " " }.reversed()) }
        var reference: [String: Int64] = [:]
        for (text, value) in try TimeSpanTests.systemd(Self.valid.map(\.text)) { reference[key(text)] = value.0 }
        for row in Self.valid {
            let got = reference[key(row.text)]
            #expect(got == row.microseconds, "\(row.testDescription): systemd-analyze says \(got.map { "\($0)" } ?? "nothing")")
        }
    }

    struct Invalid: CustomTestStringConvertible, Sendable {
        var text: String
        var testDescription: String { "parse_sec('\(text)') < 0" }
    }

    static let invalid: [Invalid] = [
        " xyz ", "", " . ", " 5. ", ".s ", "-5s ", "-0.3s ", "-0.0s ", "-0.-0s ", "0.-0s ", "3.-0s ",
        " infinity .7", ".3 infinity", "3.+1s", "3. 1s", "3.s", "12.34.56", "12..34", "..1234", "1234..",
    ].map(Invalid.init(text:))

    @Test(arguments: invalid)
    func rejected(_ row: Invalid) {
        let name = row.testDescription
        do {
            let span = try TimeSpan.parse(row.text)
            Issue.record("\(name): accepted as \(span.microseconds)us")
        } catch {
            #expect(error.code == .invalidDuration, "\(name): \(error)")
            #expect(error.column >= 1 && error.column <= row.text.unicodeScalars.count + 1, "\(name): \(error)")
        }
    }

    /// Rows Tocsin deliberately does not follow, each with the reason; the test asserts the
    /// documented behaviour instead, so the list cannot silently grow stale.
    ///
    /// `infinity`: systemd's USEC_INFINITY means "never" for a timeout. Every Tocsin span is a
    /// distance to a firing (`after`, `every`, `remind_before`, `max_late`, snooze), where "never"
    /// is written by leaving the key out; an infinite `after` or `every` would schedule nothing.
    static let excluded: [(text: String, column: Int)] = [("infinity", 1), (" infinity ", 2)]

    @Test(arguments: excluded.indices)
    func excludedRowsAreRefusedWithAReason(_ index: Int) {
        let row = Self.excluded[index]
        let name = "parse_sec('\(row.text)') == USEC_INFINITY (excluded)"
        #expect(throws: TimeSyntaxError(.invalidDuration, "'infinity' is not a time span here: give a finite span such as '1y'",
                                        column: row.column), "\(name)") {
            try TimeSpan.parse(row.text)
        }
    }

    /// The error for a bad unit names it and the valid ones, at the unit's column.
    @Test(arguments: [("5 parsecs", "parsecs", 3), ("5parsecs", "parsecs", 2), ("1h 30mins", "mins", 6), ("2 Days", "Days", 3)])
    func unknownUnitIsNamed(_ text: String, _ unit: String, _ column: Int) {
        #expect(throws: TimeSyntaxError(.invalidDuration, "unknown time unit '\(unit)' (expected us, ms, s, min, h, d, w, M, y)",
                                        column: column), "'\(text)'") {
            try TimeSpan.parse(text)
        }
    }
}
