import Testing
@testable import TocsinTime

/// Behaviour systemd-analyze cannot show directly (it prints whole seconds) or that is API-only.
@Suite("Calendar spec API")
struct CalendarSpecTests {
    static let base = Instant(seconds: 1_774_000_000) // 2026-03-20 09:46:40 UTC

    func elapses(_ expr: String, _ zone: TimeZoneRules = .utc, count: Int = 4, from: Instant = base) throws -> [String] {
        let spec = try CalendarSpec.parse(expr)
        var out: [String] = []
        var cursor = from
        while out.count < count, let t = spec.nextElapse(after: cursor, in: zone) {
            #expect(t > cursor, "'\(expr)' must move strictly forward")
            out.append(Timestamp.rfc3339UTC(t))
            cursor = t
        }
        return out
    }

    @Test func fractionalSecondsAreExactToTheMicrosecond() throws {
        #expect(try elapses("*:*:0/7.5") == ["2026-03-20T09:46:45Z", "2026-03-20T09:46:52.5Z", "2026-03-20T09:47:00Z", "2026-03-20T09:47:07.5Z"])
        #expect(try elapses("*:*:10.123456") == ["2026-03-20T09:47:10.123456Z", "2026-03-20T09:48:10.123456Z",
                                                 "2026-03-20T09:49:10.123456Z", "2026-03-20T09:50:10.123456Z"])
        // Strictly after: a base exactly on an elapse skips it, one microsecond before does not.
        let onIt = Instant(microseconds: 1_774_000_005_000_000) // 09:46:45
        #expect(try elapses("*:*:45", count: 1, from: onIt) == ["2026-03-20T09:47:45Z"])
        #expect(try elapses("*:*:45", count: 1, from: onIt - TimeSpan(microseconds: 1)) == ["2026-03-20T09:46:45Z"])
    }

    @Test func neverElapsingExpressionsReturnNilQuickly() throws {
        #expect(try elapses("2020-01-01").isEmpty)
        #expect(try elapses("*-02-30").isEmpty)           // impossible date: bounded by year 2199
        #expect(try elapses("Mon 2026-03-31").isEmpty)    // a Tuesday
        #expect(try elapses("2199-12-31 23:59:59", count: 2).count == 1)
        let spec = try CalendarSpec.parse("daily")
        #expect(spec.nextElapse(after: Instant(seconds: 253_402_214_400), in: .utc) == nil)
    }

    @Test func zoneNamesAndNormalization() throws {
        let berlin = try CalendarSpec.parse("Mon..Fri 7:30 Europe/Berlin")
        #expect(berlin.timeZoneName == "Europe/Berlin")
        #expect(berlin.normalized == "Mon..Fri *-*-* 07:30:00 Europe/Berlin")
        #expect(berlin.description == berlin.normalized)
        #expect(try CalendarSpec.parse("daily utc").timeZoneName == "UTC")
        #expect(try CalendarSpec.parse("daily").timeZoneName == nil)
        // Without a zone database, a trailing word is only a zone if the caller says so.
        #expect(throws: TimeSyntaxError.self) { try CalendarSpec.parse("daily Europe/Berlin", zoneExists: { _ in false }) }
        #expect(try CalendarSpec.parse("daily Europe/Berlin", zoneExists: { $0 == "Europe/Berlin" }).timeZoneName == "Europe/Berlin")
        // An abbreviation of the local zone forces DST off (CET) and keeps the expression in that zone.
        let local = try Zones.directory.rules(named: "Europe/Berlin")
        let cet = try CalendarSpec.parse("daily cet", localZone: local)
        #expect(cet.normalized == "*-*-* 00:00:00 CET")
        #expect(cet.timeZoneName == nil)
        #expect(try Timestamp.rfc3339UTC(#require(cet.nextElapse(after: Instant(seconds: 1_768_000_000), in: local))) == "2026-01-10T23:00:00Z")
        // In summer systemd 252 finds no elapse at all for it (verified with systemd-analyze); neither do we.
        #expect(cet.nextElapse(after: Instant(seconds: 1_782_864_000), in: local) == nil)
        #expect(try CalendarSpec.parse("daily") == CalendarSpec.parse("*-*-* 00:00:00"))
    }

    @Test("errors carry the column of the problem", arguments: [
        ("", 1), ("bogus", 1), ("Mon *-*-* 25:00", 11), ("*-*-31/2", 5), ("Mon,,Tue", 5), ("Wed..Mon", 6),
        ("12:00:60", 7), ("*-*-* 12:60", 10), ("Mon 2026-13-01", 10), ("12:", 4), ("1:2:3:4", 6), ("2026-01-01x", 11),
        ("Mön", 1), ("*:0/0", 5), ("*-*~29", 5),
    ])
    func errorColumns(_ expr: String, _ column: Int) {
        do {
            let spec = try CalendarSpec.parse(expr)
            Issue.record("'\(expr)' accepted as '\(spec.normalized)'")
        } catch {
            #expect(error.code == .invalidCalendar)
            #expect(error.column == column, "'\(expr)': \(error)")
        }
    }

    struct ZoneWordRow: Sendable, CustomTestStringConvertible {
        var expression: String
        /// nil: the grammar's own error stands (the rest does not parse either).
        var zoneColumn: Int?
        var testDescription: String { "'\(expression)'" }
    }

    static let zoneWordRows: [ZoneWordRow] = [
        ZoneWordRow(expression: "Mon 07:30 Europe/Berlinn", zoneColumn: 11),
        ZoneWordRow(expression: "daily Bad/Zone", zoneColumn: 7),
        ZoneWordRow(expression: "Mon 07:30:00 Bad/Zone", zoneColumn: 14),
        ZoneWordRow(expression: "*-*-* 12:00 America/Argentina/Nowhere", zoneColumn: 13),
        ZoneWordRow(expression: "Mön 07:30 Europe/Berlinn", zoneColumn: nil),
        ZoneWordRow(expression: "Mon 07:3x Europe/Berlinn", zoneColumn: nil),
        ZoneWordRow(expression: "Mon 07:30 1/2", zoneColumn: nil),
    ]

    @Test("a trailing zone path that names a zone is still the expression's zone")
    func knownZonePath() throws {
        let spec = try CalendarSpec.parse("Mon 07:30 Europe/Berlin", zoneExists: { $0 == "Europe/Berlin" })
        #expect(spec.timeZoneName == "Europe/Berlin")
        #expect(spec.normalized == "Mon *-*-* 07:30:00 Europe/Berlin")
    }

    @Test("a trailing zone path that names no zone is refused as an unknown zone at its column, when the rest parses",
          arguments: zoneWordRows)
    func unknownZonePath(_ row: ZoneWordRow) {
        do {
            let spec = try CalendarSpec.parse(row.expression, zoneExists: { $0 == "Europe/Berlin" })
            Issue.record("\(row.testDescription) accepted as '\(spec.normalized)'")
        } catch {
            if let column = row.zoneColumn {
                #expect(error.code == .unknownTimeZone, "\(row.testDescription): \(error)")
                #expect(error.column == column, "\(row.testDescription): \(error)")
                #expect(error.message.hasPrefix("unknown time zone '"), "\(row.testDescription): \(error)")
            } else {
                #expect(error.code == .invalidCalendar, "\(row.testDescription): \(error)")
            }
        }
    }
}
