// CONTRACT FILE written by the lead before the time helper starts.
// The public names and signatures below are what TocsinCore, TocsinConfig and the CLI
// are written against. The implementation may change freely; signatures may only grow.

/// An error in user-written time syntax (duration, timestamp, calendar expression, zone name).
public struct TimeSyntaxError: Error, Hashable, Sendable, CustomStringConvertible {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(_ rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }
        public static let invalidDuration = Code("invalid-duration")
        public static let invalidTimestamp = Code("invalid-timestamp")
        public static let invalidCalendar = Code("invalid-calendar")
        public static let unknownTimeZone = Code("unknown-time-zone")
        public static let nonPositiveInterval = Code("non-positive-interval")
    }
    public var code: Code
    public var message: String
    /// 1-based column (in Unicode scalars) of the problem inside the text that was parsed.
    public var column: Int

    public init(_ code: Code, _ message: String, column: Int) {
        self.code = code; self.message = message; self.column = column
    }
    public var description: String { "column \(column): \(message)" }
}

extension TimeSpan: CustomStringConvertible {
    /// Parses systemd.time(7) time spans: `90s`, `15min`, `1h 30min`, `2d`, `1w`, `500ms`, `5` (seconds).
    public static func parse(_ text: String) throws(TimeSyntaxError) -> TimeSpan { fatalError("contract stub") }
    /// Parses a span that must be strictly positive (periods, snoozes): zero and negative are refused.
    public static func parsePositive(_ text: String) throws(TimeSyntaxError) -> TimeSpan { fatalError("contract stub") }
    /// systemd's rendering, e.g. `1h 30min`, `500ms`, `0`.
    public var description: String { fatalError("contract stub") }
}

/// A civil (wall-clock) date and time with no zone attached.
public struct CivilDateTime: Hashable, Sendable {
    public var year: Int, month: Int, day: Int
    public var hour: Int, minute: Int, second: Int
    public var microsecond: Int
    public init(year: Int, month: Int, day: Int, hour: Int = 0, minute: Int = 0, second: Int = 0, microsecond: Int = 0) {
        self.year = year; self.month = month; self.day = day
        self.hour = hour; self.minute = minute; self.second = second; self.microsecond = microsecond
    }
}

/// The rules of one IANA time zone, read from TZif data; a value, so callers pass the zone explicitly.
public struct TimeZoneRules: Hashable, Sendable {
    /// IANA name (`Europe/Berlin`) or `UTC`.
    public let identifier: String
    public static var utc: TimeZoneRules { fatalError("contract stub") }
    /// Builds rules from the bytes of a TZif file (v1–v3, including the POSIX TZ footer for the far future).
    public init(identifier: String, tzif: [UInt8]) throws(TimeSyntaxError) { fatalError("contract stub") }
    /// UTC offset in seconds in force at `instant`.
    public func utcOffset(at instant: Instant) -> Int { fatalError("contract stub") }
    /// Abbreviation in force at `instant` (`CET`, `CEST`), as systemd-analyze prints it.
    public func abbreviation(at instant: Instant) -> String { fatalError("contract stub") }
    public func civil(_ instant: Instant) -> CivilDateTime { fatalError("contract stub") }
}

/// Where zone rules come from: the system's zoneinfo directory. The only I/O in TocsinTime, kept apart.
public struct ZoneInfoDirectory: Sendable {
    public var path: String
    public init(path: String = "/usr/share/zoneinfo") { self.path = path }
    /// Rules for an IANA name or `UTC`; unknown or malformed names are `unknownTimeZone` errors.
    public func rules(named name: String) throws(TimeSyntaxError) -> TimeZoneRules { fatalError("contract stub") }
    /// The zone a user means by default: `tz` (the value of `$TZ` as the caller read it) if set, else `/etc/localtime`, else UTC.
    public func defaultZone(tz: String?) -> TimeZoneRules { fatalError("contract stub") }
}

/// A systemd.time(7) calendar event expression.
public struct CalendarSpec: Hashable, Sendable, CustomStringConvertible {
    /// Parses with systemd's grammar; errors carry the column of the problem.
    public static func parse(_ text: String) throws(TimeSyntaxError) -> CalendarSpec { fatalError("contract stub") }
    /// systemd's "Normalized form".
    public var normalized: String { fatalError("contract stub") }
    public var description: String { normalized }
    /// The zone named inside the expression (`... Europe/Berlin`, `... UTC`), if any; it overrides the caller's zone.
    public var timeZoneName: String? { fatalError("contract stub") }
    /// The first elapse strictly after `instant`, exactly as systemd computes it, or nil when it never elapses again.
    public func nextElapse(after instant: Instant, in zone: TimeZoneRules) -> Instant? { fatalError("contract stub") }
}

/// Parsing and printing of instants on the CLI and the D-Bus API.
public enum Timestamp {
    /// RFC 3339 (`2026-12-01T18:00:00+01:00`, `Z`, fractional seconds), `@<unix seconds>` (fraction allowed),
    /// or `+<duration>` relative to `now`.
    public static func parse(_ text: String, now: Instant) throws(TimeSyntaxError) -> Instant { fatalError("contract stub") }
    /// RFC 3339 in UTC with `Z`, fractional seconds only when non-zero.
    public static func rfc3339UTC(_ instant: Instant) -> String { fatalError("contract stub") }
    /// RFC 3339 with the zone's offset at that instant.
    public static func rfc3339(_ instant: Instant, in zone: TimeZoneRules) -> String { fatalError("contract stub") }
    /// Resolves a local civil time in `zone` the way systemd/mktime does (a skipped time moves forward, a repeated time takes the first).
    public static func instant(of civil: CivilDateTime, in zone: TimeZoneRules) -> Instant { fatalError("contract stub") }
}

/// One firing of a trigger.
public struct Occurrence: Hashable, Sendable {
    public var instant: Instant
    /// 1-based count of this firing within the trigger (for `remind_before`, the offset's index).
    public var number: UInt32
    /// For `remind_before`: which offset before the event this firing is.
    public var offset: TimeSpan?
    public init(instant: Instant, number: UInt32, offset: TimeSpan? = nil) {
        self.instant = instant; self.number = number; self.offset = offset
    }
}

/// A resolved trigger. `after` is resolved to `.at` when scheduled, so stored triggers never drift.
public enum Trigger: Hashable, Sendable {
    case at(Instant)
    /// Fires at `starting`, `starting + period`, ...; `count` caps the number, `until` the last instant (inclusive).
    case every(period: TimeSpan, starting: Instant, count: UInt32?, until: Instant?)
    /// `zone` is the expression's own zone if it names one, else the notification's.
    case calendar(CalendarSpec, zone: TimeZoneRules)
    /// Fires at `event - offset` for each offset, earliest first.
    case remindBefore(event: Instant, offsets: [TimeSpan])

    /// The first occurrence strictly after `instant`, given the last one that fired (nil if none yet).
    /// Lazy: `every` and `calendar` are computed one step at a time and never expanded.
    public func next(after instant: Instant, previous: Occurrence?) -> Occurrence? { fatalError("contract stub") }

    /// Human description for `list` (`every 15min, 6 times`, `Mon..Fri *-*-* 07:30:00 Europe/Berlin`, ...).
    public var summary: String { fatalError("contract stub") }
}
