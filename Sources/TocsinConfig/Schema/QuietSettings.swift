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

    /// Reads `[quiet]`; every problem is appended to `issues` with its position.
    public static func decode(_ t: TOMLTable, issues: inout [FieldIssue]) -> QuietSettings {
        var out = QuietSettings()
        var r = TableReader(t, context: "[quiet]")
        if let b = r.bool("critical") { out.criticalPasses = b }
        if let b = r.bool("alarms") { out.alarmsPass = b }
        if let node = r.node("backends") {
            if case .table(let bt) = node.value {
                for e in bt.entries {
                    guard case .string(let s) = e.node.value, let mode = QuietMode(rawValue: s) else {
                        issues.append(FieldIssue(field: "backends", location: e.node.location,
                                                 message: "'backends.\(e.key)' in [quiet] must be \"hold\", \"drop\" or \"deliver\""))
                        continue
                    }
                    out.backends[e.key] = mode
                    out.backendLocations[e.key] = e.node.location
                }
            } else {
                r.report("backends", "'backends' in [quiet] must be a table such as { desktop = \"hold\" }, found \(node.value.typeName)")
            }
        }
        if let node = r.node("window") {
            if case .array(let items) = node.value {
                for (i, item) in items.enumerated() {
                    guard case .table(let wt) = item.value else {
                        issues.append(FieldIssue(field: "window", location: item.location,
                                                 message: "'window' in [quiet] must be an array of tables ([[quiet.window]]), found an element of type \(item.value.typeName)"))
                        continue
                    }
                    var w = TableReader(wt, context: "[[quiet.window]] #\(i + 1)")
                    let cal = w.string("on_calendar").flatMap { text in
                        w.parse("on_calendar", text) { s throws(TimeSyntaxError) in try CalendarSpec.parse(s) }
                    }
                    let duration = w.duration("duration", positive: true)
                    if !w.has("on_calendar") { w.report(FieldIssue(field: "on_calendar", location: wt.location, message: "[[quiet.window]] #\(i + 1) has no 'on_calendar' (when quiet starts)")) }
                    if !w.has("duration") { w.report(FieldIssue(field: "duration", location: wt.location, message: "[[quiet.window]] #\(i + 1) has no 'duration' (how long quiet lasts)")) }
                    if let d = duration, d > .hours(168) {
                        w.report("duration", "'duration' in [[quiet.window]] #\(i + 1) is \(d); at most 7d")
                    }
                    let tz = w.string("timezone")
                    w.finish(known: windowKeys)
                    issues += w.issues
                    if let cal, let duration, w.issues.isEmpty {
                        out.windows.append(QuietWindowSpec(onCalendar: cal, duration: duration, timezone: tz,
                                                           calendarLocation: w.valueLocation(of: "on_calendar"),
                                                           timezoneLocation: w.valueLocation(of: "timezone")))
                    }
                }
            } else {
                r.report("window", "'window' in [quiet] must be an array of tables ([[quiet.window]]), found \(node.value.typeName)")
            }
        }
        r.finish(known: keys.map(\.name))
        issues += r.issues
        return out
    }
}
