import Foundation
import Testing
import TocsinTesting
@testable import TocsinTime

@Suite("Time spans")
struct TimeSpanTests {
    static let valid: [String] = [
        "90s", "15min", "1h 30min", "1h30m", "2d", "1w", "2 weeks", "500ms", "1us", "3μs", "1M", "2y 3M", "1y",
        "5", "0", "1.5", "1.5s", "1.5h", ".5s", "5s5", "5m3", "1 h", "3 s", "1 day 2 hours", "3 months",
        "1 year", "7 seconds", "2 minutes", "10 msec", "10 usec", "1.25min", "0.000001s", "1.0000005s",
        "100ms 5us", "1d 1h 1min 1s 1ms 1us", "59.999999s", "61s", "3599s", "86401s", "12345678us", "4h 0min",
        "1hr", "2 hours", "3 sec", "1minute", "1second", "52w", "1hours", "1 y 2 M", "5m3s", "5min3", "1 s5",
    ]
    static let invalid: [String] = ["", "bogus", "5 parsecs", "1.5.5s", "1e3", "5x", "h", "1 2x", "s5",
                                    "5 secs", "3 mins", "1Month", "2 msecs", "5.", "1.h", "1 . 5"]

    /// Runs `systemd-analyze timespan` on valid spans and parses "μs:" and "Human:".
    static func systemd(_ spans: [String]) throws -> [String: (Int64, String)] {
        let run = try runBlocking(SystemdOracle.executable, ["timespan"] + spans, environment: ["LANG": "C", "PATH": "/usr/bin:/bin"])
        let data = Data(run.stdout.utf8)
        var result: [String: (Int64, String)] = [:]
        var original: String?, micro: Int64?
        for line in String(decoding: data, as: UTF8.self).split(separator: "\n") {
            let l = line.drop { $0 == " " }
            if l.hasPrefix("Original: ") { original = String(l.dropFirst("Original: ".count)) }
            // "μs:" in a UTF-8 locale, "us:" in the C locale.
            if l.hasPrefix("μs: ") || l.hasPrefix("us: ") { micro = Int64(l.dropFirst(4)) }
            if l.hasPrefix("Human: "), let o = original, let m = micro { result[o] = (m, String(l.dropFirst("Human: ".count))) }
        }
        return result
    }

    @Test("parse and render like systemd-analyze timespan")
    func parity() throws {
        let reference = try Self.systemd(Self.valid)
        for text in Self.valid {
            // systemd echoes the original with surrounding spaces intact.
            guard let (micro, human) = reference[text] else {
                Issue.record("systemd did not report '\(text)'")
                continue
            }
            let span = try TimeSpan.parse(text)
            #expect(span.microseconds == micro, "'\(text)'")
            #expect(span.description == human, "'\(text)'")
        }
    }

    @Test("invalid spans are refused with a column", arguments: invalid)
    func invalidSpans(_ text: String) throws {
        #expect(try Self.systemd([text]).isEmpty, "systemd accepts '\(text)'")
        #expect(throws: TimeSyntaxError.self, "'\(text)'") { try TimeSpan.parse(text) }
        do {
            _ = try TimeSpan.parse(text)
        } catch {
            #expect(error.code == .invalidDuration)
            #expect(error.column >= 1 && error.column <= text.unicodeScalars.count + 1)
        }
    }

    /// Regression (found by fuzz-time): a whole just in range plus its fraction overflowed Int64
    /// and trapped, so one `after` over D-Bus or in a config could crash the daemon.
    @Test("regression: a fraction carrying an in-range whole past Int64 is out of range, not a trap")
    func fractionOverflow() {
        #expect(throws: TimeSyntaxError(.invalidDuration, "duration out of range", column: 1)) {
            try TimeSpan.parse("009223372036854.85709720236")
        }
        #expect(throws: TimeSyntaxError.self) { try TimeSpan.parse("9223372036854.775808s") }
        #expect((try? TimeSpan.parse("9223372036854.775807s"))?.microseconds == Int64.max)
    }

    @Test func columnsPointAtTheProblem() {
        #expect(throws: TimeSyntaxError(.invalidDuration, "unknown time unit 'x' (expected us, ms, s, min, h, d, w, M, y)", column: 2)) { try TimeSpan.parse("5x") }
        #expect(throws: TimeSyntaxError(.invalidDuration, "durations cannot be negative", column: 1)) { try TimeSpan.parse("-5s") }
        #expect(throws: TimeSyntaxError(.invalidDuration, "unknown time unit 'parsecs' (expected us, ms, s, min, h, d, w, M, y)", column: 3)) {
            try TimeSpan.parse("5 parsecs")
        }
        #expect(throws: TimeSyntaxError(.invalidDuration, "expected a digit after the decimal point", column: 3)) { try TimeSpan.parse("3.s") }
    }

    @Test func positiveSpans() throws {
        #expect(throws: TimeSyntaxError(.nonPositiveInterval, "the interval must be longer than zero", column: 1)) { try TimeSpan.parsePositive("0") }
        #expect(throws: TimeSyntaxError.self) { try TimeSpan.parsePositive("0s") }
        #expect(throws: TimeSyntaxError.self) { try TimeSpan.parsePositive("0 min 0s") }
        #expect(throws: TimeSyntaxError.self) { try TimeSpan.parsePositive("-1s") }
        #expect(try TimeSpan.parsePositive("1us").microseconds == 1)
        #expect(try TimeSpan.parsePositive("15min") == .minutes(15))
    }

    @Test func rendering() {
        #expect(TimeSpan.zero.description == "0")
        #expect(TimeSpan.hours(1).description == "1h")
        #expect((TimeSpan.hours(1) + .minutes(30)).description == "1h 30min")
        #expect(TimeSpan(microseconds: 500_000).description == "500ms")
        #expect(TimeSpan(microseconds: -1_000_000).description == "-1s")
    }
}

@Suite("TimeLimit")
struct TimeLimitTests {
    @Test("adding never wraps: past the latest instant or past Int64 is nil", arguments: [
        (Instant(seconds: 1_772_442_000), TimeSpan.seconds(9_223_372_036_854), false),
        (Instant(microseconds: .max - 1), TimeSpan(microseconds: .max), false),
        (TimeLimit.latest, TimeSpan(microseconds: 1), false),
        (TimeLimit.latest - .seconds(1), TimeSpan.seconds(1), true),
        (Instant(seconds: 0), TimeLimit.longestSpan, true),
    ])
    func adding(base: Instant, span: TimeSpan, fits: Bool) {
        let sum = TimeLimit.adding(span, to: base)
        #expect((sum != nil) == fits, "\(base) + \(span)")
        if let sum { #expect(sum.microseconds == base.microseconds + span.microseconds) }
    }

    @Test("regression: '+9223372036854s' is out of range, not a wrapped instant in year -290251")
    func relativeTimestampOverflow() {
        #expect(throws: TimeSyntaxError.self) { try Timestamp.parse("+9223372036854s", now: Instant(seconds: 1_772_442_000)) }
    }

    @Test("an 'every' series ends at the latest instant: no occurrence past it")
    func everyEndsAtTheLimit() {
        let period = TimeSpan.seconds(8000 * 31_557_600)
        let first = Instant(seconds: 1_772_442_000)
        let trigger = Trigger.every(period: period, starting: first, count: nil, until: nil)
        let one = trigger.next(after: first - .seconds(1), previous: nil)
        #expect(one?.instant == first)
        #expect(trigger.next(after: first, previous: one) == nil)
    }

    @Test("the limit is 9999-12-31T23:59:59Z")
    func latest() {
        #expect(Timestamp.rfc3339UTC(TimeLimit.latest) == "9999-12-31T23:59:59Z")
        #expect(Timestamp.rfc3339UTC(TimeLimit.earliest) == "0001-01-01T00:00:00Z")
    }
}
