import Testing
@testable import TocsinTime

/// systemd's own `src/test/test-calendarspec.c`, row by row.
///
/// Source: the newest version of that file the search index could show in full (systemd/systemd,
/// the revision with `_test_one(int line, ...)` and `main()`, before the move to `TEST()`), plus
/// the rows a later revision changed or added as a port of it shows them (snapm's
/// tests/test_calendar.py): the seconds rows `*:4,30:0/1...` and the `Europe/Berlin` /
/// `Europe/Kyiv` variants of the `CET` / `EET` rows (tzdata 2024b made `CET` and `EET` links).
/// The v257 file itself could not be read. Every row agrees with this machine's `systemd-analyze`.
/// A row names itself (`test_one 'Wed *-1'`) so a failure can be found in systemd's file by grep.
@Suite("systemd test-calendarspec.c")
struct SystemdCalendarSpecTableTests {
    static let directory = ZoneInfoDirectory()

    struct One: CustomTestStringConvertible, Sendable {
        var input: String, output: String
        var testDescription: String { "test_one '\(input)'" }
    }

    static let one: [One] = oneRows.map { One(input: $0.0, output: $0.1) }

    static let oneRows: [(String, String)] = [
        ("Sat,Thu,Mon-Wed,Sat-Sun", "Mon..Thu,Sat,Sun *-*-* 00:00:00"),
        ("Sat,Thu,Mon..Wed,Sat..Sun", "Mon..Thu,Sat,Sun *-*-* 00:00:00"),
        ("Mon,Sun 12-*-* 2,1:23", "Mon,Sun 2012-*-* 01,02:23:00"),
        ("Wed *-1", "Wed *-*-01 00:00:00"),
        ("Wed-Wed,Wed *-1", "Wed *-*-01 00:00:00"),
        ("Wed..Wed,Wed *-1", "Wed *-*-01 00:00:00"),
        ("Wed, 17:48", "Wed *-*-* 17:48:00"),
        ("Wednesday,", "Wed *-*-* 00:00:00"),
        ("Wed-Sat,Tue 12-10-15 1:2:3", "Tue..Sat 2012-10-15 01:02:03"),
        ("Wed..Sat,Tue 12-10-15 1:2:3", "Tue..Sat 2012-10-15 01:02:03"),
        ("*-*-7 0:0:0", "*-*-07 00:00:00"),
        ("10-15", "*-10-15 00:00:00"),
        ("monday *-12-* 17:00", "Mon *-12-* 17:00:00"),
        ("Mon,Fri *-*-3,1,2 *:30:45", "Mon,Fri *-*-01,02,03 *:30:45"),
        ("12,14,13,12:20,10,30", "*-*-* 12,13,14:10,20,30:00"),
        ("mon,fri *-1/2-1,3 *:30:45", "Mon,Fri *-01/2-01,03 *:30:45"),
        ("03-05 08:05:40", "*-03-05 08:05:40"),
        ("08:05:40", "*-*-* 08:05:40"),
        ("05:40", "*-*-* 05:40:00"),
        ("Sat,Sun 12-05 08:05:40", "Sat,Sun *-12-05 08:05:40"),
        ("Sat,Sun 08:05:40", "Sat,Sun *-*-* 08:05:40"),
        ("2003-03-05 05:40", "2003-03-05 05:40:00"),
        ("2003-03-05", "2003-03-05 00:00:00"),
        ("03-05", "*-03-05 00:00:00"),
        ("hourly", "*-*-* *:00:00"),
        ("daily", "*-*-* 00:00:00"),
        ("monthly", "*-*-01 00:00:00"),
        ("weekly", "Mon *-*-* 00:00:00"),
        ("minutely", "*-*-* *:*:00"),
        ("quarterly", "*-01,04,07,10-01 00:00:00"),
        ("semi-annually", "*-01,07-01 00:00:00"),
        ("annually", "*-01-01 00:00:00"),
        ("*:2/3", "*-*-* *:02/3:00"),
        ("2015-10-25 01:00:00 uTc", "2015-10-25 01:00:00 UTC"),
        ("2015-10-25 01:00:00 Asia/Vladivostok", "2015-10-25 01:00:00 Asia/Vladivostok"),
        ("weekly Pacific/Auckland", "Mon *-*-* 00:00:00 Pacific/Auckland"),
        ("2016-03-27 03:17:00.4200005", "2016-03-27 03:17:00.420001"),
        ("2016-03-27 03:17:00/0.42", "2016-03-27 03:17:00/0.420000"),
        ("9..11,13:00,30", "*-*-* 09..11,13:00,30:00"),
        ("1..3-1..3 1..3:1..3", "*-01..03-01..03 01..03:01..03:00"),
        ("00:00:1.125..2.125", "*-*-* 00:00:01.125000..02.125000"),
        ("00:00:1.0..3.8", "*-*-* 00:00:01..03"),
        ("00:00:01..03", "*-*-* 00:00:01..03"),
        ("00:00:01/2,02..03", "*-*-* 00:00:01/2,02..03"),
        // Later revision: a seconds repetition that covers the whole field prints as `*`.
        ("*:4,30:0..3", "*-*-* *:04,30:00..03"),
        ("*:4,30:0/1", "*-*-* *:04,30:*"),
        ("*:4,30:0/1,3,5", "*-*-* *:04,30:*"),
        ("*-*~1 Utc", "*-*~01 00:00:00 UTC"),
        ("*-*~05,3 ", "*-*~03,05 00:00:00"),
        ("*-*~* 00:00:00", "*-*-* 00:00:00"),
        ("Monday", "Mon *-*-* 00:00:00"),
        ("Monday *-*-*", "Mon *-*-* 00:00:00"),
        ("*-*-*", "*-*-* 00:00:00"),
        ("*:*:*", "*-*-* *:*:*"),
        ("*:*", "*-*-* *:*:00"),
        ("12:*", "*-*-* 12:*:00"),
        ("*:30", "*-*-* *:30:00"),
        ("93..00-*-*", "1993..2000-*-* 00:00:00"),
        ("00..07-*-*", "2000..2007-*-* 00:00:00"),
        ("*:20..39/5", "*-*-* *:20..35/5:00"),
        ("00:00:20..40/1", "*-*-* 00:00:20..40"),
        ("*~03/1,03..05", "*-*~03/1,03..05 00:00:00"),
        // UNIX timestamps are always UTC.
        ("@1493187147", "2017-04-26 06:12:27 UTC"),
        ("@1493187147 UTC", "2017-04-26 06:12:27 UTC"),
        ("@0", "1970-01-01 00:00:00 UTC"),
        ("@0 UTC", "1970-01-01 00:00:00 UTC"),
        ("*:05..05", "*-*-* *:05:00"),
        ("*:05..10/6", "*-*-* *:05:00"),
    ]

    /// systemd's `test_one`: the normalized form, and that the normalized form normalizes to itself.
    @Test(arguments: one)
    func normalization(_ row: One) throws {
        let name = row.testDescription
        let spec = try CalendarSpec.parse(row.input, localZone: .utc)
        #expect(spec.normalized == row.output, "\(name)")
        let again = try CalendarSpec.parse(spec.normalized, localZone: .utc)
        #expect(again.normalized == spec.normalized, "\(name): round trip")
    }

    struct Next: CustomTestStringConvertible, Sendable {
        var input: String
        /// `$TZ` as the C test sets it: nil unset (the machine's zone), "" (UTC), else `:NAME`.
        var tz: String?
        var after: Int64
        /// nil: systemd's -1, no elapse (`-ENOENT`).
        var expect: Int64?
        var testDescription: String { "test_next '\(input)' TZ=\(tz.map { "'\($0)'" } ?? "unset") after=\(after)" }
    }

    static let next: [Next] = nextRows.map { Next(input: $0.0, tz: $0.1, after: $0.2, expect: $0.3) }

    static let nextRows: [(String, String?, Int64, Int64?)] = [
        ("2016-03-27 03:17:00", "", 12345, 1459048620000000),
        ("2016-03-27 03:17:00", "CET", 12345, 1459041420000000),
        ("2016-03-27 03:17:00", "EET", 12345, nil),
        ("2016-03-27 03:17:00 UTC", nil, 12345, 1459048620000000),
        ("2016-03-27 03:17:00 UTC", "", 12345, 1459048620000000),
        ("2016-03-27 03:17:00 UTC", "CET", 12345, 1459048620000000),
        ("2016-03-27 03:17:00 UTC", "EET", 12345, 1459048620000000),
        ("2016-03-27 03:17:00.420000001 UTC", "EET", 12345, 1459048620420000),
        ("2016-03-27 03:17:00.4200005 UTC", "EET", 12345, 1459048620420001),
        ("2015-11-13 09:11:23.42", "EET", 12345, 1447398683420000),
        ("2015-11-13 09:11:23.42/1.77", "EET", 1447398683420000, 1447398685190000),
        ("2015-11-13 09:11:23.42/1.77", "EET", 1447398683419999, 1447398683420000),
        ("Sun 16:00:00", "CET", 1456041600123456, 1456066800000000),
        ("*-04-31", "", 12345, nil),
        ("2016-02~01 UTC", "", 12345, 1456704000000000),
        ("Mon 2017-05~01..07 UTC", "", 12345, 1496016000000000),
        ("Mon 2017-05~07/1 UTC", "", 12345, 1496016000000000),
        ("*-*-01/5 04:00:00 UTC", "", 1646010000000000, 1646107200000000),
        ("*-01/7-01 04:00:00 UTC", "", 1664607600000000, 1672545600000000),
        ("2017-08-06 9,11,13,15,17:00 UTC", "", 1502029800000000, 1502031600000000),
        ("2017-08-06 9..17/2:00 UTC", "", 1502029800000000, 1502031600000000),
        ("2016-12-* 3..21/6:00 UTC", "", 1482613200000001, 1482634800000000),
        ("2017-09-24 03:30:00 Pacific/Auckland", "", 12345, 1506177000000000),
        // Due to daylight saving time, 2017-09-24 02:30:00 does not exist.
        ("2017-09-24 02:30:00 Pacific/Auckland", "", 12345, nil),
        ("2017-04-02 02:30:00 Pacific/Auckland", "", 12345, 1491053400000000),
        // Though the clock goes back here, 02:30 happens only once.
        ("2017-04-02 02:30:00 Pacific/Auckland", "", 1491053400000000, nil),
        ("2017-04-02 03:30:00 Pacific/Auckland", "", 12345, 1491060600000000),
        // A zone in the expression works whatever the local zone.
        ("2017-09-09 20:42:00 Pacific/Auckland", "", 12345, 1504946520000000),
        ("2017-09-09 20:42:00 Pacific/Auckland", "EET", 12345, 1504946520000000),
        // No loop when mktime() moves backwards.
        ("Sun *-*-* 01:00:00 Europe/Dublin", "", 1616412478000000, 1617494400000000),
        ("Sun *-*-* 01:00:00 Europe/Dublin", "IST", 1616412478000000, 1617494400000000),
        // Later revision: the CET/EET rows with region zones.
        ("2016-03-27 03:17:00", "Europe/Berlin", 12345, 1459041420000000),
        ("2016-03-27 03:17:00", "Europe/Kyiv", 12345, nil),
        ("2016-03-27 03:17:00 UTC", "Europe/Berlin", 12345, 1459048620000000),
        ("2016-03-27 03:17:00 UTC", "Europe/Kyiv", 12345, 1459048620000000),
        ("2016-03-27 03:17:00.420000001 UTC", "Europe/Kyiv", 12345, 1459048620420000),
        ("2016-03-27 03:17:00.4200005 UTC", "Europe/Kyiv", 12345, 1459048620420001),
        ("2015-11-13 09:11:23.42", "Europe/Kyiv", 12345, 1447398683420000),
        ("2015-11-13 09:11:23.42/1.77", "Europe/Kyiv", 1447398683420000, 1447398685190000),
        ("2015-11-13 09:11:23.42/1.77", "Europe/Kyiv", 1447398683419999, 1447398683420000),
        ("Sun 16:00:00", "Europe/Berlin", 1456041600123456, 1456066800000000),
        ("2017-09-09 20:42:00 Pacific/Auckland", "Europe/Kyiv", 12345, 1504946520000000),
    ]

    /// The zone glibc uses for the C test's `$TZ`.
    static func zone(tz: String?) -> TimeZoneRules {
        guard let tz else { return directory.defaultZone(tz: nil) }
        return tz.isEmpty ? .utc : directory.defaultZone(tz: ":" + tz)
    }

    /// systemd's `test_next`: the first elapse strictly after `after`, through the same zone
    /// resolution every Tocsin surface uses.
    @Test(arguments: next)
    func nextElapse(_ row: Next) throws {
        let name = row.testDescription
        let local = Self.zone(tz: row.tz)
        let (spec, zone) = try CalendarSpec.parse(row.input).resolvingZone(local: local, rules: Self.directory.rules(named:))
        let got = spec.nextElapse(after: Instant(microseconds: row.after), in: zone)
        #expect(got?.microseconds == row.expect, "\(name): got \(got.map(Timestamp.rfc3339UTC) ?? "never")")
    }

    struct Invalid: CustomTestStringConvertible, Sendable {
        var input: String
        var testDescription: String { "calendar_spec_from_string '\(input)' < 0" }
    }

    static let invalid: [Invalid] = [
        "test", " utc", "    ", "", "7", "121212:1:2", "2000-03-05.23 00:00:00", "2000-03-05 00:00.1:00",
        "00:00:00/0.00000001", "00:00:00.0..00.9", "2016~11-22", "*-*~5/5", "Monday.. 12:00", "Monday..",
        "-00:+00/-5", "00:+00/-5", "2016- 11- 24 12: 30: 00", "*~29", "*~16..31", "12..1/2-*", "20/4:00",
        "00:00/60", "00:00:2300", "00:00:18446744073709551615", "@88588582097858858",
    ].map(Invalid.init(input:))

    /// systemd's rejected expressions: refused with a calendar error whose column lies inside the text.
    @Test(arguments: invalid)
    func rejected(_ row: Invalid) {
        let name = row.testDescription
        do {
            let spec = try CalendarSpec.parse(row.input, localZone: .utc)
            Issue.record("\(name): accepted as '\(spec.normalized)'")
        } catch {
            #expect(error.code == .invalidCalendar, "\(name): \(error)")
            #expect(error.column >= 1 && error.column <= row.input.unicodeScalars.count + 1, "\(name): \(error)")
        }
    }

    /// systemd's `test_timestamp`: a timestamp as systemd prints it (`format_timestamp_us`) is a
    /// calendar expression for exactly that instant. The C test uses "now"; these are fixed
    /// instants, in UTC and in a zone whose printed abbreviation must be read back as local time.
    @Test(arguments: [(1_774_000_000_123_456, "UTC"), (1_459_041_420_000_001, "Europe/Berlin"),
                      (1_782_864_000_999_999, "Europe/Berlin"), (1_491_053_400_500_000, "Pacific/Auckland")])
    func timestampIsACalendarSpec(_ micros: Int64, _ zoneName: String) throws {
        let zone = try Self.directory.rules(named: zoneName)
        let x = Instant(microseconds: micros)
        let c = zone.civil(x)
        func p(_ v: Int, _ w: Int = 2) -> String { String(repeating: "0", count: max(0, w - String(v).count)) + String(v) }
        let text = "\(p(c.year, 4))-\(p(c.month))-\(p(c.day)) \(p(c.hour)):\(p(c.minute)):\(p(c.second)).\(p(c.microsecond, 6)) "
            + zone.abbreviation(at: x)
        let name = "test_timestamp '\(text)' TZ=\(zoneName)"
        let (spec, evaluation) = try CalendarSpec.parse(text).resolvingZone(local: zone, rules: Self.directory.rules(named:))
        #expect(spec.nextElapse(after: x - TimeSpan(microseconds: 1), in: evaluation) == x, "\(name)")
        #expect(spec.nextElapse(after: x, in: evaluation) == nil, "\(name): a single instant")
    }

    /// systemd's `test_hourly_bug_4031`: `hourly` moves forward by at most an hour, twice in a row.
    /// The C test starts at "now"; these starts include both DST changes of a zone.
    @Test(arguments: [1_774_000_000_123_456, 1_774_746_000_000_000, 1_774_742_399_999_999, 1_792_890_000_000_000])
    func hourlyBug4031(_ start: Int64) throws {
        let zone = try Self.directory.rules(named: "Europe/Berlin")
        let spec = try CalendarSpec.parse("hourly")
        let n = Instant(microseconds: start)
        let u = try #require(spec.nextElapse(after: n, in: zone), "hourly after \(start)")
        let w = try #require(spec.nextElapse(after: u, in: zone), "hourly after \(u.microseconds)")
        #expect(n < u && u <= n + .hours(1), "hourly after \(start): \(Timestamp.rfc3339UTC(u))")
        #expect(u < w && w <= u + .hours(1), "hourly after \(u.microseconds): \(Timestamp.rfc3339UTC(w))")
    }
}
