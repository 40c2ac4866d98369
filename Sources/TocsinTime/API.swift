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

