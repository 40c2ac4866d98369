/// A point on the UTC time line in microseconds since the Unix epoch.
///
/// Microseconds because that is systemd's `usec_t` (calendar results must match
/// `systemd-analyze` to the microsecond) and the unit of times on the D-Bus wire.
public struct Instant: Hashable, Comparable, Sendable, CustomStringConvertible {
    public var microseconds: Int64

    public init(microseconds: Int64) { self.microseconds = microseconds }
    public init(seconds: Int64) { self.microseconds = seconds &* 1_000_000 }

    public var seconds: Int64 { microseconds >= 0 ? microseconds / 1_000_000 : -((-microseconds + 999_999) / 1_000_000) }

    public static func < (a: Instant, b: Instant) -> Bool { a.microseconds < b.microseconds }
    public static func + (a: Instant, b: TimeSpan) -> Instant { Instant(microseconds: a.microseconds &+ b.microseconds) }
    public static func - (a: Instant, b: TimeSpan) -> Instant { Instant(microseconds: a.microseconds &- b.microseconds) }
    public static func - (a: Instant, b: Instant) -> TimeSpan { TimeSpan(microseconds: a.microseconds &- b.microseconds) }

    public var description: String { "@\(microseconds)us" }
}

/// A length of time in microseconds; negative values exist only as intermediate results.
public struct TimeSpan: Hashable, Comparable, Sendable {
    public var microseconds: Int64

    public init(microseconds: Int64) { self.microseconds = microseconds }
    public static func seconds(_ s: Int64) -> TimeSpan { TimeSpan(microseconds: s &* 1_000_000) }
    public static func minutes(_ m: Int64) -> TimeSpan { .seconds(m &* 60) }
    public static func hours(_ h: Int64) -> TimeSpan { .seconds(h &* 3600) }
    public static let zero = TimeSpan(microseconds: 0)

    public static func < (a: TimeSpan, b: TimeSpan) -> Bool { a.microseconds < b.microseconds }
    public static func + (a: TimeSpan, b: TimeSpan) -> TimeSpan { TimeSpan(microseconds: a.microseconds &+ b.microseconds) }
}
