import Foundation
import Testing
import TocsinTesting
@testable import TocsinTime

/// A notification's time as people write it (`--at "2026-12-24 18:00"`, `--at 18:00`): systemd's
/// absolute timestamp forms, read as `systemd-analyze timestamp` reads them.
@Suite("Written timestamps: systemd's forms for a notification's time")
struct WrittenTimestampTests {
    struct Row: Sendable, CustomTestStringConvertible {
        let text: String
        let expected: WrittenTimestamp
        var testDescription: String { "'\(text)'" }
    }

    static func local(_ y: Int, _ mo: Int, _ d: Int, _ h: Int = 0, _ mi: Int = 0, _ s: Int = 0, _ us: Int = 0) -> WrittenTimestamp {
        .local(CivilDateTime(year: y, month: mo, day: d, hour: h, minute: mi, second: s, microsecond: us))
    }

    /// 2026-12-24T18:00:00Z.
    static let eve = Instant(seconds: 1_798_135_200)

    static let accepted: [Row] = [
        Row(text: "2026-12-24 18:00", expected: local(2026, 12, 24, 18, 0)),
        Row(text: "2026-12-24 18:00:05", expected: local(2026, 12, 24, 18, 0, 5)),
        Row(text: "2026-12-24 18:00:05.25", expected: local(2026, 12, 24, 18, 0, 5, 250_000)),
        Row(text: "2026-12-24T18:00", expected: local(2026, 12, 24, 18, 0)),
        Row(text: "2026-12-24", expected: local(2026, 12, 24)),
        Row(text: "Thu 2026-12-24 18:00", expected: local(2026, 12, 24, 18, 0)),
        Row(text: "thursday 2026-12-24", expected: local(2026, 12, 24)),
        Row(text: "2026-12-24 18:00 UTC", expected: .instant(eve)),
        Row(text: "2026-12-24 UTC", expected: .instant(eve - .hours(18))),
        Row(text: "2026-12-24T18:00Z", expected: .instant(eve)),
        Row(text: "2026-12-24T19:00:00+01:00", expected: .instant(eve)),
        Row(text: "2026-12-24 19:00+01:00", expected: .instant(eve)),
        Row(text: "@1798135200", expected: .instant(eve)),
        Row(text: "18:00", expected: .day(days: 0, time: TimeOfDay(hour: 18))),
        Row(text: "07:30:15.5", expected: .day(days: 0, time: TimeOfDay(hour: 7, minute: 30, second: 15, microsecond: 500_000))),
        Row(text: "today", expected: .day(days: 0, time: TimeOfDay())),
        Row(text: "tomorrow", expected: .day(days: 1, time: TimeOfDay())),
        Row(text: "yesterday", expected: .day(days: -1, time: TimeOfDay())),
    ]

    @Test("each form reads as written", arguments: accepted)
    func reads(_ row: Row) throws {
        #expect(try Timestamp.parseWritten(row.text) == row.expected, "\(row.text)")
    }

    struct Refusal: Sendable, CustomTestStringConvertible {
        let text: String
        let message: String
        let column: Int
        var testDescription: String { "'\(text)'" }
    }

    static let refused: [Refusal] = [
        Refusal(text: "", message: "empty timestamp", column: 1),
        Refusal(text: "Fri 2026-12-24 18:00", message: "2026-12-24 is a Thursday, not a Friday", column: 1),
        Refusal(text: "2026-02-30 18:00", message: "day out of range", column: 9),
        Refusal(text: "2026-12-24 25:00", message: "hour out of range", column: 12),
        Refusal(text: "2026-12-24 18:00 Europe/Berlin", message: "unexpected character: after the time only 'Z', an offset (+01:00) or ' UTC' may follow; for another zone, give the notification's timezone", column: 17),
        Refusal(text: "18:00 UTC", message: "unexpected character: a time alone is read in the notification's zone, with no zone of its own", column: 6),
        Refusal(text: "noon", message: WrittenTimestampTests.expectation, column: 1),
        Refusal(text: "tomorrow 07:30", message: WrittenTimestampTests.expectation, column: 1),
        Refusal(text: "Thu", message: "expected a date after the weekday", column: 4),
        Refusal(text: "2026-12-24T18:00 UTC", message: "unexpected character: after the time only 'Z', an offset (+01:00) or ' UTC' may follow; for another zone, give the notification's timezone", column: 17),
        Refusal(text: "9:30", message: "expected a four-digit year", column: 2),
    ]

    static let expectation = "expected a date (2026-12-24), a date and time (2026-12-24 18:00), a time (18:00), "
        + "today, tomorrow, yesterday, @<unix seconds> or +<duration>"

    @Test("a form that is not one names what was expected and where", arguments: refused)
    func refuses(_ row: Refusal) {
        do {
            let value = try Timestamp.parseWritten(row.text)
            Issue.record("'\(row.text)' read as \(value)")
        } catch {
            #expect(error.message == row.message, "\(row.text)")
            #expect(error.column == row.column, "\(row.text)")
        }
    }

    /// systemd-analyze timestamp's reading of `text` under `TZ=zone`, in unix seconds.
    static func systemd(_ text: String, zone: String) throws -> Int64? {
        let run = try runBlocking(SystemdOracle.executable, ["timestamp", text],
                                  environment: ["LANG": "C", "PATH": "/usr/bin:/bin", "TZ": zone])
        for line in run.stdout.split(separator: "\n") {
            let l = line.drop { $0 == " " }
            if l.hasPrefix("UNIX seconds: @") { return Int64(l.dropFirst("UNIX seconds: @".count)) }
        }
        return nil
    }

    struct OracleRow: Sendable, CustomTestStringConvertible {
        let text: String
        let zone: String
        var testDescription: String { "'\(text)' in \(zone)" }
    }

    /// Dates and times without a zone, in zones with and without DST, and in the gaps a change
    /// to summer time leaves (02:30 on 2026-03-29 does not exist in Berlin). Not a time a change
    /// back repeats: systemd leaves that to glibc's `mktime`, which here took the second 02:30 in
    /// Berlin and the first 01:30 in New York; Tocsin takes the first, as for the config's local
    /// date-times and `on_calendar`'s default (`dayRelative` below, `ZoneAndTimestampTests`).
    static let oracle: [OracleRow] = [
        OracleRow(text: "2026-12-24 18:00", zone: "Europe/Berlin"),
        OracleRow(text: "Thu 2026-12-24 18:00:59", zone: "America/New_York"),
        OracleRow(text: "2026-12-24", zone: "Asia/Kolkata"),
        OracleRow(text: "2026-03-29 02:30", zone: "Europe/Berlin"),
        OracleRow(text: "2026-03-08 02:30", zone: "America/New_York"),
        OracleRow(text: "2026-10-04 02:15", zone: "Australia/Lord_Howe"),
        OracleRow(text: "2026-12-24 18:00 UTC", zone: "Europe/Berlin"),
        OracleRow(text: "2026-06-30 23:59:59", zone: "UTC"),
    ]

    @Test("the instant is systemd-analyze timestamp's, in the same zone", arguments: oracle)
    func matchesSystemd(_ row: OracleRow) throws {
        let expected = try #require(try Self.systemd(row.text, zone: row.zone), "systemd refused '\(row.text)'")
        let zone = try Zones.directory.rules(named: row.zone)
        let instant: Instant
        switch try Timestamp.parseWritten(row.text) {
        case .instant(let i): instant = i
        case .local(let c): instant = Timestamp.instant(of: c, in: zone)
        case .day: Issue.record("'\(row.text)' read relative to today"); return
        }
        #expect(instant.seconds == expected, "\(row.text) in \(row.zone): \(Timestamp.rfc3339UTC(instant))")
    }

    struct DayRow: Sendable, CustomTestStringConvertible {
        let name: String
        let now: String
        let zone: String
        let days: Int
        let time: TimeOfDay
        let expected: String
        var testDescription: String { name }
    }

    static let dayRows: [DayRow] = [
        DayRow(name: "18:00 later today", now: "2026-12-24T10:00:00Z", zone: "Europe/Berlin", days: 0, time: TimeOfDay(hour: 18),
               expected: "2026-12-24T17:00:00Z"),
        DayRow(name: "today is the zone's day, not UTC's", now: "2026-12-24T23:30:00Z", zone: "Europe/Berlin", days: 0,
               time: TimeOfDay(hour: 7), expected: "2026-12-25T06:00:00Z"),
        DayRow(name: "today is the zone's day west of UTC", now: "2026-12-25T02:00:00Z", zone: "America/New_York", days: 0,
               time: TimeOfDay(hour: 22), expected: "2026-12-25T03:00:00Z"),
        DayRow(name: "tomorrow across a month and year end", now: "2026-12-31T12:00:00Z", zone: "UTC", days: 1,
               time: TimeOfDay(), expected: "2027-01-01T00:00:00Z"),
        DayRow(name: "yesterday", now: "2026-03-01T12:00:00Z", zone: "UTC", days: -1, time: TimeOfDay(), expected: "2026-02-28T00:00:00Z"),
        DayRow(name: "a time the spring-forward gap skips moves forward", now: "2026-03-29T00:30:00Z", zone: "Europe/Berlin", days: 0,
               time: TimeOfDay(hour: 2, minute: 30), expected: "2026-03-29T01:30:00Z"),
        DayRow(name: "a repeated time is its first occurrence", now: "2026-10-24T22:30:00Z", zone: "Europe/Berlin", days: 0,
               time: TimeOfDay(hour: 2, minute: 30), expected: "2026-10-25T00:30:00Z"),
    ]

    @Test("a time of day is on the day of scheduling in the notification's zone", arguments: dayRows)
    func dayRelative(_ row: DayRow) throws {
        let zone = try Zones.directory.rules(named: row.zone)
        let now = try Timestamp.parse(row.now, now: Instant(microseconds: 0))
        let t = Timestamp.instant(days: row.days, at: row.time, from: now, in: zone)
        #expect(Timestamp.rfc3339UTC(t) == row.expected, "\(row.name)")
    }
}
