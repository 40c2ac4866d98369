public import FoundationEssentials

/// When a notification fires: one of the daemon's trigger kinds as a value, so an app cannot
/// send two triggers or none, and so the test double can compute the same firings.
public struct NotificationTrigger: Sendable, Hashable {
    /// The cases mirror the daemon's request fields (docs/CONFIG.md, "Triggers and calendar expressions").
    public enum Kind: Sendable, Hashable {
        /// Once at an instant.
        case date(Date)
        /// Once `interval` after it is added, or every `interval` when `repeats` is set.
        case interval(Duration, repeats: Bool, count: Int?, until: Date?)
        /// A systemd calendar expression (`Mon..Fri 07:30`), in `timeZone` (an IANA name) or
        /// the daemon's zone.
        case calendar(expression: String, timeZone: String?)
        /// One firing per offset before `event` (an offset of zero fires at the event).
        case reminders(before: [Duration], event: Date)
    }

    /// The trigger itself; the static constructors are the usual way to make one.
    public var kind: Kind

    /// For code that builds a `Kind` directly (decoding an app's own saved schedule).
    public init(_ kind: Kind) { self.kind = kind }

    /// Once at `date`. A date already past is refused (`invalidTrigger`), never delivered late.
    public static func at(_ date: Date) -> NotificationTrigger { .init(.date(date)) }

    /// Once, `interval` from when it is added.
    public static func after(_ interval: Duration) -> NotificationTrigger {
        .init(.interval(interval, repeats: false, count: nil, until: nil))
    }

    /// `UNTimeIntervalNotificationTrigger(timeInterval:repeats:)`'s shape: once, or every
    /// `interval` with an optional `count` and `until` (which a one-shot refuses, naming the field).
    public static func after(_ interval: Duration, repeats: Bool, count: Int? = nil, until: Date? = nil) -> NotificationTrigger {
        .init(.interval(interval, repeats: repeats, count: count, until: until))
    }

    /// Every `interval`, the first one `interval` from now; `count` caps how many times, `until`
    /// the last instant. Without either it repeats until removed.
    public static func every(_ interval: Duration, count: Int? = nil, until: Date? = nil) -> NotificationTrigger {
        .init(.interval(interval, repeats: true, count: count, until: until))
    }

    /// A systemd calendar expression, checked by the daemon (it answers the column of a mistake).
    public static func calendar(_ expression: String, timeZone: String? = nil) -> NotificationTrigger {
        .init(.calendar(expression: expression, timeZone: timeZone))
    }

    /// The expression `components` build, as `UNCalendarNotificationTrigger(dateMatching:)`;
    /// a field out of its range (`hour: 24`) is refused here, before any call.
    public static func calendar(_ components: CalendarComponents, timeZone: String? = nil) throws(TocsinClientError) -> NotificationTrigger {
        try components.validate()
        return .init(.calendar(expression: components.expression, timeZone: timeZone))
    }

    /// Reminders before an event: `.reminders(before: [.hours(24), .hours(1), .zero], event: end)`.
    public static func reminders(before offsets: [Duration], event: Date) -> NotificationTrigger {
        .init(.reminders(before: offsets, event: event))
    }

    /// The checks that need no daemon: positive intervals, sane counts, a non-empty expression.
    public func validate() throws(TocsinClientError) {
        switch kind {
        case .date(let date): try RequestRules.instant("at", date)
        case let .interval(interval, repeats, count, until):
            try RequestRules.span(repeats ? "every" : "after", interval)
            if !repeats, count != nil || until != nil {
                throw RequestRules.invalid(count != nil ? "count" : "until", "'count' and 'until' apply only to a repeating interval")
            }
            if let count, count < 1 || count > Int(UInt32.max) {
                throw RequestRules.invalid("count", "'count' must be between 1 and \(UInt32.max), got \(count)")
            }
        case let .calendar(expression, timeZone):
            if expression.allSatisfy({ $0 == " " || $0 == "\t" }) {
                throw RequestRules.invalid("on_calendar", "'on_calendar' must not be empty")
            }
            try RequestRules.text("on_calendar", expression, max: 4096)
            if let timeZone {
                if timeZone.isEmpty { throw RequestRules.invalid("timezone", "'timezone' must not be empty") }
                try RequestRules.text("timezone", timeZone, max: 255)
            }
        case let .reminders(offsets, event):
            try RequestRules.instant("at", event)
            if offsets.isEmpty { throw RequestRules.invalid("remind_before", "'remind_before' needs at least one offset") }
            if offsets.count > 64 { throw RequestRules.invalid("remind_before", "'remind_before' has \(offsets.count) offsets; the limit is 64") }
            if offsets.contains(where: { $0 < .zero }) {
                throw RequestRules.invalid("remind_before", "'remind_before' offsets must not be negative")
            }
            for offset in offsets where offset.microseconds > RequestRules.longestMicroseconds {
                throw RequestRules.pastLatest("remind_before", offset.systemdText)
            }
        }
    }
}

/// Builds a systemd calendar expression from fields, as `DateComponents` describes a match:
/// a field left nil matches any value when a smaller field is set, and its smallest value when
/// only larger ones are (`hour: 7, minute: 30` is every day at 07:30:00, not every second of it).
public struct CalendarComponents: Sendable, Hashable {
    /// Days of the week, in systemd's spelling; empty means any day.
    public enum Weekday: Int, Sendable, Hashable, CaseIterable, Comparable {
        /// ISO order, Monday first, as systemd writes ranges (`Mon..Fri`).
        case monday = 1, tuesday, wednesday, thursday, friday, saturday, sunday
        var name: String { ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"][rawValue - 1] }
        /// Monday first, so runs print as ranges.
        public static func < (a: Weekday, b: Weekday) -> Bool { a.rawValue < b.rawValue }
    }

    /// Days the expression matches; empty matches every day.
    public var weekdays: Set<Weekday>
    /// nil: any year.
    public var year: Int?
    /// 1...12; nil: any month when a smaller field is set, else January.
    public var month: Int?
    /// 1...31; nil: any day when a smaller field or a weekday is set, else the 1st.
    public var day: Int?
    /// 0...23; nil: any hour when a smaller field is set, else 0.
    public var hour: Int?
    /// 0...59; nil: any minute when `second` is set, else 0.
    public var minute: Int?
    /// 0...59; nil: 0.
    public var second: Int?

    /// Fields as DateComponents names them; see the type's rule for the ones left nil.
    public init(weekdays: Set<Weekday> = [], year: Int? = nil, month: Int? = nil, day: Int? = nil,
                hour: Int? = nil, minute: Int? = nil, second: Int? = nil) {
        self.weekdays = weekdays
        self.year = year
        self.month = month
        self.day = day
        self.hour = hour
        self.minute = minute
        self.second = second
    }

    /// From Foundation's fields; `weekday` counts from Sunday = 1 as Foundation's Gregorian
    /// calendar does. Nanoseconds, eras and week numbers have no systemd spelling and are ignored.
    public init(_ c: DateComponents) {
        var days: Set<Weekday> = []
        if let w = c.weekday, (1...7).contains(w) { days.insert(w == 1 ? .sunday : Weekday(rawValue: w - 1)!) }
        self.init(weekdays: days, year: c.year, month: c.month, day: c.day, hour: c.hour, minute: c.minute, second: c.second)
    }

    /// The expression, e.g. `Mon..Fri *-*-* 07:30:00`. Out-of-range fields are left for the
    /// daemon (or `validate()`) to refuse rather than silently clamped.
    public var expression: String {
        let fields: [Int?] = [year, month, day, hour, minute, second]
        // A weekday is a day-level match: year, month and day left out are then any.
        let smallest = max(fields.lastIndex { $0 != nil } ?? -1, weekdays.isEmpty ? -1 : 2)
        func part(_ i: Int) -> String {
            if let v = fields[i] { return i == 0 ? String(v) : pad(v) }
            if i == 0 || i <= smallest { return "*" }
            return i == 1 || i == 2 ? "01" : "00"  // below every set field: its minimum
        }
        let days = Self.weekdayList(weekdays)
        return (days.isEmpty ? "" : days + " ") + "\(part(0))-\(part(1))-\(part(2)) \(part(3)):\(part(4)):\(part(5))"
    }

    private func pad(_ v: Int) -> String { v >= 0 && v < 10 ? "0\(v)" : String(v) }

    /// `Mon..Fri`, `Mon,Wed`, `Sat..Sun`: consecutive runs as ranges.
    static func weekdayList(_ days: Set<Weekday>) -> String {
        let sorted = days.sorted()
        var parts: [String] = []
        var i = 0
        while i < sorted.count {
            var j = i
            while j + 1 < sorted.count, sorted[j + 1].rawValue == sorted[j].rawValue + 1 { j += 1 }
            parts.append(j == i ? sorted[i].name : j == i + 1 ? "\(sorted[i].name),\(sorted[j].name)" : "\(sorted[i].name)..\(sorted[j].name)")
            i = j + 1
        }
        return parts.joined(separator: ",")
    }

    /// Refuses fields outside a calendar's range, and a builder with no field at all (it would
    /// match every instant), naming the field.
    public func validate() throws(TocsinClientError) {
        if weekdays.isEmpty, [year, month, day, hour, minute, second].allSatisfy({ $0 == nil }) {
            throw RequestRules.invalid("on_calendar", "calendar components need at least one field or weekday")
        }
        let ranges: [(String, Int?, ClosedRange<Int>)] = [
            ("year", year, 1970...2199), ("month", month, 1...12), ("day", day, 1...31),
            ("hour", hour, 0...23), ("minute", minute, 0...59), ("second", second, 0...59),
        ]
        for (name, value, range) in ranges {
            if let value, !range.contains(value) {
                throw RequestRules.invalid("on_calendar", "calendar component '\(name)' must be in \(range.lowerBound)...\(range.upperBound), got \(value)")
            }
        }
    }
}

extension Duration {
    /// Microseconds, which is the daemon's resolution; a duration always fits for any sane value.
    var microseconds: Int64 {
        let (s, atto) = components
        let (us, overflow) = s.multipliedReportingOverflow(by: 1_000_000)
        return overflow ? (s < 0 ? .min : .max) : us &+ atto / 1_000_000_000_000
    }

    /// systemd's spelling with the daemon's resolution: `90000000us`.
    var systemdText: String { "\(microseconds)us" }
}

extension Date {
    /// Unix microseconds, as the daemon's times travel.
    /// Saturating: a date past Int64's microseconds (year 294,247) still compares as later than
    /// the horizon instead of trapping.
    var unixMicroseconds: Int64 {
        let us = (timeIntervalSince1970 * 1_000_000).rounded()
        if us.isNaN { return 0 }
        return us >= 9.2e18 ? .max : us <= -9.2e18 ? .min : Int64(us)
    }
    init(unixMicroseconds us: Int64) { self.init(timeIntervalSince1970: Double(us) / 1_000_000) }
}
