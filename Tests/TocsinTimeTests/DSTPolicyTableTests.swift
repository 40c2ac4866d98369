import Testing
import TocsinTesting
@testable import TocsinTime

/// `dst_gap` and `dst_fold` around real changes of 2026. Each row lists the first elapses after
/// `base` (unix seconds) in UTC; a row with the default policies must also equal
/// `systemd-analyze calendar`, so the defaults stay systemd's.
@Suite("DSTPolicyTable")
struct DSTPolicyTableTests {
    struct Row: CustomStringConvertible {
        var name: String
        var zone: String
        var expression: String
        var base: Int64
        var gap: DSTGapPolicy = .skip
        var fold: DSTFoldPolicy = .first
        var expected: [String]
        /// systemd circles on a time the gap skips and gives up ("Infinite loop in calendar
        /// calculation"); Tocsin searches on from the gap's far side (`systemdPastItsValve`).
        var systemdGivesUp = false
        var description: String { "\(name): '\(expression)' in \(zone) from @\(base), dst_gap=\(gap.rawValue) dst_fold=\(fold.rawValue)" }
    }

    // Bases: local midnight the day before the change.
    static let berlinSpring: Int64 = 1_774_652_400   // Sat 2026-03-28 00:00 CET
    static let berlinAutumn: Int64 = 1_792_792_800   // Sat 2026-10-24 00:00 CEST
    static let newYorkSpring: Int64 = 1_772_859_600  // Sat 2026-03-07 00:00 EST
    static let newYorkAutumn: Int64 = 1_793_419_200  // Sat 2026-10-31 00:00 EDT
    static let lordHoweSpring: Int64 = 1_790_947_800 // Sat 2026-10-03 00:00 +1030
    static let lordHoweAutumn: Int64 = 1_775_221_200 // Sat 2026-04-04 00:00 +11
    static let dublinSpring: Int64 = 1_774_656_000   // Sat 2026-03-28 00:00 GMT
    static let dublinAutumn: Int64 = 1_792_796_400   // Sat 2026-10-24 00:00 IST
    static let santiagoSpring: Int64 = 1_788_580_800 // Sat 2026-09-05 00:00 -04
    static let santiagoAutumn: Int64 = 1_775_271_600 // Sat 2026-04-04 00:00 -03

    static let rows: [Row] = [
        // Europe/Berlin: 02:00 -> 03:00 on 29 March, 03:00 -> 02:00 on 25 October.
        Row(name: "Berlin gap skipped", zone: "Europe/Berlin", expression: "*-*-* 02:30", base: berlinSpring,
            expected: ["2026-03-28T01:30:00Z", "2026-03-30T00:30:00Z", "2026-03-31T00:30:00Z"]),
        Row(name: "Berlin gap shifted to 03:00 CEST", zone: "Europe/Berlin", expression: "*-*-* 02:30", base: berlinSpring, gap: .shift,
            expected: ["2026-03-28T01:30:00Z", "2026-03-29T01:00:00Z", "2026-03-30T00:30:00Z"]),
        Row(name: "Berlin gap: several skipped times shift to one firing", zone: "Europe/Berlin", expression: "*-*-* 02:00/20", base: berlinSpring + 86_400, gap: .shift,
            expected: ["2026-03-29T01:00:00Z", "2026-03-30T00:00:00Z", "2026-03-30T00:20:00Z"]),
        Row(name: "Berlin gap: a shift onto a matching 03:00 fires once", zone: "Europe/Berlin", expression: "*-*-* 02,03:00", base: berlinSpring + 86_400, gap: .shift,
            expected: ["2026-03-29T01:00:00Z", "2026-03-30T00:00:00Z", "2026-03-30T01:00:00Z"]),
        Row(name: "Berlin fold first", zone: "Europe/Berlin", expression: "*-*-* 02:30", base: berlinAutumn,
            expected: ["2026-10-24T00:30:00Z", "2026-10-25T00:30:00Z", "2026-10-26T01:30:00Z"]),
        Row(name: "Berlin fold both", zone: "Europe/Berlin", expression: "*-*-* 02:30", base: berlinAutumn, fold: .both,
            expected: ["2026-10-24T00:30:00Z", "2026-10-25T00:30:00Z", "2026-10-25T01:30:00Z", "2026-10-26T01:30:00Z"]),
        Row(name: "Berlin fold both, from inside the first pass", zone: "Europe/Berlin", expression: "*-*-* 02:30", base: 1_792_888_200, fold: .both,
            expected: ["2026-10-25T01:30:00Z", "2026-10-26T01:30:00Z"]),
        Row(name: "Berlin: a time outside gap and fold is unchanged by both policies", zone: "Europe/Berlin", expression: "*-*-* 12:00", base: berlinSpring, gap: .shift, fold: .both,
            expected: ["2026-03-28T11:00:00Z", "2026-03-29T10:00:00Z", "2026-03-30T10:00:00Z"]),
        // America/New_York: 02:00 -> 03:00 on 8 March, 02:00 -> 01:00 on 1 November.
        Row(name: "New York gap skipped", zone: "America/New_York", expression: "*-*-* 02:30", base: newYorkSpring,
            expected: ["2026-03-07T07:30:00Z", "2026-03-09T06:30:00Z"]),
        Row(name: "New York gap shifted to 03:00 EDT", zone: "America/New_York", expression: "*-*-* 02:30", base: newYorkSpring, gap: .shift,
            expected: ["2026-03-07T07:30:00Z", "2026-03-08T07:00:00Z", "2026-03-09T06:30:00Z"]),
        Row(name: "New York fold first", zone: "America/New_York", expression: "*-*-* 01:30", base: newYorkAutumn,
            expected: ["2026-10-31T05:30:00Z", "2026-11-01T05:30:00Z", "2026-11-02T06:30:00Z"]),
        Row(name: "New York fold both", zone: "America/New_York", expression: "*-*-* 01:30", base: newYorkAutumn, fold: .both,
            expected: ["2026-10-31T05:30:00Z", "2026-11-01T05:30:00Z", "2026-11-01T06:30:00Z", "2026-11-02T06:30:00Z"]),
        // Australia/Lord_Howe: a 30-minute change, 02:00 -> 02:30 on 4 October, 02:00 -> 01:30 on 5 April.
        Row(name: "Lord Howe gap skipped", zone: "Australia/Lord_Howe", expression: "*-*-* 02:15", base: lordHoweSpring,
            expected: ["2026-10-02T15:45:00Z", "2026-10-04T15:15:00Z"]),
        Row(name: "Lord Howe gap shifted to 02:30 +11", zone: "Australia/Lord_Howe", expression: "*-*-* 02:15", base: lordHoweSpring, gap: .shift,
            expected: ["2026-10-02T15:45:00Z", "2026-10-03T15:30:00Z", "2026-10-04T15:15:00Z"]),
        Row(name: "Lord Howe fold first", zone: "Australia/Lord_Howe", expression: "*-*-* 01:45", base: lordHoweAutumn,
            expected: ["2026-04-03T14:45:00Z", "2026-04-04T14:45:00Z", "2026-04-05T15:15:00Z"]),
        Row(name: "Lord Howe fold both", zone: "Australia/Lord_Howe", expression: "*-*-* 01:45", base: lordHoweAutumn, fold: .both,
            expected: ["2026-04-03T14:45:00Z", "2026-04-04T14:45:00Z", "2026-04-04T15:15:00Z", "2026-04-05T15:15:00Z"]),
        // Pacific/Chatham: 02:45 -> 03:45 on 27 September, a gap that does not start on the hour.
        Row(name: "Chatham gap: an hourly time past systemd's give-up", zone: "Pacific/Chatham", expression: "*:45:59", base: 1_790_427_660,
            expected: ["2026-09-26T14:00:59Z", "2026-09-26T15:00:59Z", "2026-09-26T16:00:59Z"], systemdGivesUp: true),
        Row(name: "Chatham gap: a daily range past systemd's give-up", zone: "Pacific/Chatham", expression: "2..4:59:00", base: 1_790_421_373,
            expected: ["2026-09-26T14:14:00Z", "2026-09-26T15:14:00Z", "2026-09-27T13:14:00Z"], systemdGivesUp: true),
        // Europe/Dublin: negative DST in the zone file (winter GMT is the "DST" time); 01:00 -> 02:00, 02:00 -> 01:00.
        Row(name: "Dublin gap skipped", zone: "Europe/Dublin", expression: "*-*-* 01:30", base: dublinSpring,
            expected: ["2026-03-28T01:30:00Z", "2026-03-30T00:30:00Z"]),
        Row(name: "Dublin gap shifted to 02:00 IST", zone: "Europe/Dublin", expression: "*-*-* 01:30", base: dublinSpring, gap: .shift,
            expected: ["2026-03-28T01:30:00Z", "2026-03-29T01:00:00Z", "2026-03-30T00:30:00Z"]),
        Row(name: "Dublin fold first", zone: "Europe/Dublin", expression: "*-*-* 01:30", base: dublinAutumn,
            expected: ["2026-10-24T00:30:00Z", "2026-10-25T00:30:00Z", "2026-10-26T01:30:00Z"]),
        Row(name: "Dublin fold both", zone: "Europe/Dublin", expression: "*-*-* 01:30", base: dublinAutumn, fold: .both,
            expected: ["2026-10-24T00:30:00Z", "2026-10-25T00:30:00Z", "2026-10-25T01:30:00Z", "2026-10-26T01:30:00Z"]),
        // America/Santiago: changes at midnight; 24:00 -> 01:00 on 6 September, 24:00 -> 23:00 on 4 April.
        Row(name: "Santiago midnight gap skipped", zone: "America/Santiago", expression: "daily", base: santiagoSpring,
            expected: ["2026-09-07T03:00:00Z", "2026-09-08T03:00:00Z"]),
        Row(name: "Santiago midnight gap shifted to 01:00 -03", zone: "America/Santiago", expression: "daily", base: santiagoSpring, gap: .shift,
            expected: ["2026-09-06T04:00:00Z", "2026-09-07T03:00:00Z", "2026-09-08T03:00:00Z"]),
        Row(name: "Santiago fold first", zone: "America/Santiago", expression: "*-*-* 23:30", base: santiagoAutumn,
            expected: ["2026-04-05T02:30:00Z", "2026-04-06T03:30:00Z"]),
        Row(name: "Santiago fold both", zone: "America/Santiago", expression: "*-*-* 23:30", base: santiagoAutumn, fold: .both,
            expected: ["2026-04-05T02:30:00Z", "2026-04-05T03:30:00Z", "2026-04-06T03:30:00Z"]),
    ]

    static func elapses(_ row: Row) throws -> [String] {
        let zone = try #require(Zones.load(row.zone), "\(row): zone missing")
        var spec = try CalendarSpec.parse(row.expression, localZone: zone)
        spec.dstGap = row.gap
        spec.dstFold = row.fold
        var out: [String] = []
        var cursor = Instant(seconds: row.base)
        while out.count < row.expected.count, let t = spec.nextElapse(after: cursor, in: zone) {
            out.append(Timestamp.rfc3339UTC(t))
            cursor = t
        }
        return out
    }

    @Test(arguments: rows)
    func policyElapses(_ row: Row) throws {
        #expect(try Self.elapses(row) == row.expected, "\(row)")
    }

    /// The default rows are systemd's answer: the defaults must keep matching the oracle.
    @Test(arguments: rows.filter { $0.gap == .skip && $0.fold == .first && !$0.systemdGivesUp })
    func defaultsMatchSystemd(_ row: Row) throws {
        let results = try SystemdOracle.run(zone: row.zone, base: row.base, iterations: row.expected.count,
                                            expressions: [row.expression])
        let result = try #require(results[row.expression], "\(row): systemd rejected it")
        let oracle = result.elapses.map { Timestamp.rfc3339UTC(Instant(seconds: $0.utcSeconds)) }
        #expect(oracle == row.expected, "\(row): systemd says \(oracle)")
    }

    /// Where Tocsin goes on past systemd: systemd really gives up there, so the rows are not a
    /// silent disagreement with the oracle.
    @Test(arguments: rows.filter(\.systemdGivesUp))
    func systemdGivesUpThere(_ row: Row) throws {
        let results = try SystemdOracle.run(zone: row.zone, base: row.base, iterations: 1, expressions: [row.expression])
        let result = try #require(results[row.expression], "\(row): systemd rejected it")
        #expect(result.gaveUp, "\(row): systemd says \(result.elapses)")
    }

        /// An expression in UTC or forced to standard/summer time sees no gap or fold: the policies change nothing.
    @Test func policiesIgnoreExpressionsWithoutLocalDST() throws {
        let berlin = try #require(Zones.load("Europe/Berlin"))
        for text in ["*-*-* 01:30 UTC", "*-*-* 02:30 CET", "*-*-* 02:30 CEST"] {
            let plain = try CalendarSpec.parse(text, localZone: berlin)
            var policy = plain
            policy.dstGap = .shift
            policy.dstFold = .both
            var a = Instant(seconds: Self.berlinSpring), b = a
            for step in 0..<4 {
                let x = plain.nextElapse(after: a, in: berlin), y = policy.nextElapse(after: b, in: berlin)
                #expect(x == y, "'\(text)' step \(step)")
                guard let x, let y else { break }
                a = x; b = y
            }
        }
    }
}
