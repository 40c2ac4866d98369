// CONTRACT FILE written by the lead before the time helper starts.
// The public names and signatures below are what TocsinCore, TocsinConfig and the CLI
// are written against. The implementation may change freely; signatures may only grow.

/// An error in user-written time syntax (duration, timestamp, calendar expression, zone name).
public struct TimeSyntaxError: Error, Hashable, Sendable, CustomStringConvertible {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        /// The closed set of codes: clients match on the static members below but cannot make
        /// new ones. Raw values are the stable spellings that messages and tests show.
        private enum _Code: String, Hashable, Sendable {
            case invalidDuration = "invalid-duration"
            case invalidTimestamp = "invalid-timestamp"
            case invalidCalendar = "invalid-calendar"
            case unknownTimeZone = "unknown-time-zone"
            case nonPositiveInterval = "non-positive-interval"
        }

        private let code: _Code

        private init(_ code: _Code) { self.code = code }

        /// The stable spelling, e.g. `invalid-duration`.
        public var description: String { code.rawValue }

        public static let invalidDuration = Code(.invalidDuration)
        public static let invalidTimestamp = Code(.invalidTimestamp)
        public static let invalidCalendar = Code(.invalidCalendar)
        public static let unknownTimeZone = Code(.unknownTimeZone)
        public static let nonPositiveInterval = Code(.nonPositiveInterval)
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

