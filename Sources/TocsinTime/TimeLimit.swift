/// The one range of time Tocsin schedules in, so that no instant or duration a client writes
/// can overflow the microsecond arithmetic (`Int64` reaches year 294,247, and `now + span` wraps
/// to year -290,251 without a word) or schedule past what every surface can print.
///
/// Instants run from 0001-01-01T00:00:00Z to 9999-12-31T23:59:59Z, the years RFC 3339 writes
/// with four digits; a duration is at most the time from the epoch to that latest instant (about
/// 8030 years), the most any span can add to a time after 1970 without passing it. With both
/// bounds, `instant ± span` stays within ±5.1e17 µs, far from `Int64`'s ends.
public enum TimeLimit: Sendable {
    /// 9999-12-31T23:59:59Z.
    public static let latest = Instant(seconds: 253_402_300_799)
    /// 0001-01-01T00:00:00Z.
    public static let earliest = Instant(seconds: -62_135_596_800)
    /// From 1970-01-01T00:00:00Z to `latest`.
    public static let longestSpan = TimeSpan(microseconds: latest.microseconds)

    public static func fits(_ t: Instant) -> Bool { t >= earliest && t <= latest }
    public static func fits(_ d: TimeSpan) -> Bool { d <= longestSpan }

    /// `base + span` if it falls within the range, without overflowing whatever the operands.
    public static func adding(_ span: TimeSpan, to base: Instant) -> Instant? {
        let (sum, overflow) = base.microseconds.addingReportingOverflow(span.microseconds)
        guard !overflow, fits(Instant(microseconds: sum)) else { return nil }
        return Instant(microseconds: sum)
    }

    /// The refusal of a value past `latest`, worded the same on every surface:
    /// `'after' 292000y reaches past 9999-12-31T23:59:59Z, the latest instant Tocsin schedules`.
    public static func pastLatest(field: String, value: String) -> String {
        "'\(field)' \(value) reaches past 9999-12-31T23:59:59Z, the latest instant Tocsin schedules"
    }

    /// The refusal of an instant before `earliest` (only `@-seconds` can write one).
    public static func beforeEarliest(field: String, value: String) -> String {
        "'\(field)' \(value) is before 0001-01-01T00:00:00Z, the earliest instant Tocsin accepts"
    }

    /// Why `t`, written as `value`, is out of range, or nil when it is within it.
    public static func refusal(of t: Instant, field: String, value: String) -> String? {
        if t > latest { return pastLatest(field: field, value: value) }
        if t < earliest { return beforeEarliest(field: field, value: value) }
        return nil
    }
}
