public import TocsinTime

/// What a backend does with a firing while quiet hours are on.
public enum QuietMode: String, Hashable, Sendable, CaseIterable {
    /// Keep it (durably) and deliver it when quiet ends.
    case hold
    /// Never deliver it.
    case drop
    /// Deliver it as usual.
    case deliver
}

/// One scheduled quiet period: it begins at each elapse of a calendar expression and lasts
/// `duration`. A start plus a length, rather than a start and an end expression, because "is it
/// quiet at t" is then one forward search (the first elapse after t - duration) and needs no
/// search backwards in time, which the calendar engine does not have.
public struct QuietWindowSpec: Hashable, Sendable {
    public var onCalendar: CalendarSpec
    public var duration: TimeSpan
    /// IANA zone; nil: `[daemon] timezone`, else `$TZ`, else the system zone.
    public var timezone: String?
    /// Where `on_calendar` and `timezone` are written, for the zone checks made after loading.
    public var calendarLocation: SourceLocation
    public var timezoneLocation: SourceLocation
    public init(onCalendar: CalendarSpec, duration: TimeSpan, timezone: String? = nil,
                calendarLocation: SourceLocation = SourceLocation(line: 1, column: 1),
                timezoneLocation: SourceLocation = SourceLocation(line: 1, column: 1)) {
        self.onCalendar = onCalendar; self.duration = duration; self.timezone = timezone
        self.calendarLocation = calendarLocation; self.timezoneLocation = timezoneLocation
    }
}

/// `[quiet]`: do-not-disturb hours.
public struct QuietSettings: Hashable, Sendable {
    public var windows: [QuietWindowSpec] = []
    /// Per backend instance; a backend not named keeps its type's default
    /// (`hold` for popups and sound, `deliver` for the rest).
    public var backends: [String: QuietMode] = [:]
    /// Where each named backend was written, to report an unknown name at its position.
    public var backendLocations: [String: SourceLocation] = [:]
    /// `urgency = "critical"` notifications go through quiet hours.
    public var criticalPasses = true
    /// Alarms (firings that go to a ringing backend) go through quiet hours: an alarm clock set
    /// inside the quiet hours must still ring.
    public var alarmsPass = true
    public init() {}

    public static let keys: [NotificationFields.Field] = [
        .init(name: "window", type: "array of tables", summary: "[[quiet.window]]: on_calendar (when quiet starts), duration (how long), timezone."),
        .init(name: "backends", type: "table", summary: "Per backend instance: hold, drop or deliver (default: hold for libnotify and sound, deliver otherwise)."),
        .init(name: "critical", type: "boolean", summary: "urgency = \"critical\" goes through quiet hours (default true)."),
        .init(name: "alarms", type: "boolean", summary: "Alarms go through quiet hours (default true)."),
    ]
    public static let windowKeys = ["on_calendar", "duration", "timezone"]
}
