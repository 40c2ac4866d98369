public import TocsinModel
import TocsinTime

// The TOML side of the model's readers: each builds a `TableReader` over the file's table and
// hands it to the surface-independent reader in TocsinModel, where every rule and message lives.

extension NotificationFields {
    /// Reads one notification. `allowReplace` enables the D-Bus-only `replace` field.
    /// `allowFleet`: false for the config file, where `fleet = true` is refused.
    /// `source`: the document, for positions inside string values (`TableReader.source`).
    public static func decode(_ table: TOMLTable, context: String, limits: SpecLimits = SpecLimits(),
                              allowReplace: Bool = false, allowFleet: Bool = false, requireTrigger: Bool = true,
                              source: [UInt8]? = nil) -> Result<NotificationSpec, DecodeFailure> {
        var r = TableReader(table, context: context, source: source)
        return decode(&r, limits: limits, allowReplace: allowReplace, allowFleet: allowFleet, requireTrigger: requireTrigger)
    }
}

extension DaemonSettings {
    /// Reads `[daemon]`; every problem is appended to `issues` with its position.
    static func decode(_ t: TOMLTable, issues: inout [FieldIssue], source: [UInt8]?) -> DaemonSettings {
        var r: any FieldReader = TableReader(t, context: "[daemon]", source: source)
        var settings = read(from: &r)
        if settings.timezone != nil { settings.timezoneLocation = r.valueLocation(of: "timezone") }
        issues += r.issues
        return settings
    }
}

extension QuietSettings {
    /// Reads `[quiet]`; every problem is appended to `issues` with its position.
    public static func decode(_ t: TOMLTable, issues: inout [FieldIssue], source: [UInt8]? = nil) -> QuietSettings {
        var out = QuietSettings()
        var r = TableReader(t, context: "[quiet]", source: source)
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
                    var w = TableReader(wt, context: "[[quiet.window]] #\(i + 1)", source: source)
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
