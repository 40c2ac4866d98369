public import TocsinTime

public enum Urgency: String, Hashable, Sendable, CaseIterable {
    case low, normal, critical
}

/// What to do with firings that fell due while the daemon could not deliver them
/// (downtime, suspend, a clock jump forward).
public enum MissedPolicy: String, Hashable, Sendable, CaseIterable {
    /// Report the firing as missed; deliver nothing.
    case skip
    /// Deliver the most recent missed firing once, marked late.
    case fireOnce = "fire-once"
    /// Deliver every missed firing, each marked late.
    case fireAll = "fire-all"
}

/// An instant as a user wrote it. Local and relative forms are resolved when the notification is
/// scheduled, because they depend on the notification's zone and on "now".
public enum TimeValue: Hashable, Sendable {
    case instant(Instant)
    /// A TOML local date-time, read in the notification's zone.
    case local(CivilDateTime)
    /// `+15min`: relative to the moment of scheduling.
    case relative(TimeSpan)
    /// `18:00`, `tomorrow`: a time on a day counted from the day of scheduling, in the
    /// notification's zone.
    case day(days: Int, time: TimeOfDay)
}

/// The trigger exactly as written, before it is resolved against a clock and a zone.
public enum TriggerSpec: Hashable, Sendable {
    case at(TimeValue)
    case after(TimeSpan)
    case every(TimeSpan, count: UInt32?, starting: TimeValue?, until: TimeValue?)
    case onCalendar(CalendarSpec)
    case remindBefore(event: TimeValue, offsets: [TimeSpan])

    /// The user's name for the trigger kind, as in the config.
    public var keyword: String {
        switch self {
        case .at: return "at"
        case .after: return "after"
        case .every: return "every"
        case .onCalendar: return "on_calendar"
        case .remindBefore: return "remind_before"
        }
    }
}

public struct NotificationAction: Hashable, Sendable {
    public var id: String
    public var label: String
    public init(id: String, label: String) { self.id = id; self.label = label }
}

/// One notification as requested, from a `[[notification]]` table or a D-Bus `Schedule` call.
public struct NotificationSpec: Hashable, Sendable {
    public var key: String?
    public var title: String = ""
    public var body: String = ""
    public var trigger: TriggerSpec = .after(.zero)
    /// Names of configured backend instances; nil means all of them.
    public var backends: [String]?
    public var urgency: Urgency = .normal
    public var icon: String?
    public var category: String?
    public var sound: String?
    public var actions: [NotificationAction] = []
    public var userInfo: [String: String] = [:]
    /// nil: the daemon's default.
    public var missed: MissedPolicy?
    /// A missed firing later than this is skipped whatever the policy.
    public var maxLate: TimeSpan?
    /// IANA zone for `on_calendar` and local date-times; nil: the daemon's zone.
    public var timezone: String?
    /// D-Bus only: false keeps an existing notification with the same key unchanged.
    public var replace: Bool = true
    /// Scheduled (replaced, cancelled) on every machine of the `[fleet]` too. Run time only
    /// (D-Bus, CLI): a config file is each machine's own, so a shared entry is written in each.
    public var fleet: Bool = false
    /// Bring the machine out of suspend for its firings (a `CLOCK_REALTIME_ALARM` timer), where
    /// `[daemon] wake_alarms` and the system allow it; it fires as usual either way.
    public var wake: Bool = false
    /// Where the table starts, where the trigger key and its value were written, and where the
    /// `timezone` value is, for what is found after decoding: a zone is looked up only then, and
    /// whether a trigger ever fires depends on the clock.
    public var location = SourceLocation(line: 1, column: 1)
    public var triggerLocation = SourceLocation(line: 1, column: 1)
    public var triggerValueLocation = SourceLocation(line: 1, column: 1)
    public var timezoneLocation = SourceLocation(line: 1, column: 1)

    public init() {}
}

/// Limits that keep one request from exhausting the daemon; refused with an error, never truncated.
public struct SpecLimits: Hashable, Sendable {
    public var maxKeyLength = 255
    public var maxTitleBytes = 4096
    public var maxBodyBytes = 65536
    public var maxActions = 16
    public var maxUserInfoEntries = 64
    public var maxUserInfoBytes = 65536
    public var maxRemindOffsets = 64
    /// `[daemon] min_period`: no trigger may fire twice within less than this (zero: no floor).
    public var minPeriod = DaemonKeys.minPeriod.defaultValue
    /// icon, category, sound, and each action's id and label.
    public var maxShortStringBytes = 4096
    public var maxBackends = 64
    public init() {}
}

/// The `[[notification]]` / `Schedule` fields. Each field is defined once here: its name, what it
/// accepts, and how it is read; the config file, the D-Bus API and the docs all follow this table.
public enum NotificationFields: Sendable {
    public struct Field: Sendable {
        public var name: String
        public var type: String
        public var summary: String
        public init(name: String, type: String, summary: String) { self.name = name; self.type = type; self.summary = summary }
    }

    public static let triggerKeys = ["at", "after", "every", "on_calendar", "remind_before"]

    /// The reference table, in the order docs/CONFIG.md documents it.
    public static let all: [Field] = [
        Field(name: "key", type: "string", summary: "Unique id; a later notification with the same key replaces this one. Generated when absent."),
        Field(name: "title", type: "string", summary: "Summary line (required)."),
        Field(name: "body", type: "string", summary: "Body text."),
        Field(name: "at", type: "date-time or string", summary: "Trigger: once at this instant (RFC 3339, @unix, +duration, or a TOML date-time)."),
        Field(name: "after", type: "duration", summary: "Trigger: once, this long after it is scheduled."),
        Field(name: "every", type: "duration", summary: "Trigger: repeatedly with this period (> 0)."),
        Field(name: "count", type: "integer", summary: "With every: how many times."),
        Field(name: "starting", type: "date-time or string", summary: "With every: the first firing (default: one period from now)."),
        Field(name: "until", type: "date-time or string", summary: "With every: no firing after this instant."),
        Field(name: "on_calendar", type: "string", summary: "Trigger: a systemd calendar expression, e.g. 'Mon..Fri 07:30'."),
        Field(name: "remind_before", type: "array of durations", summary: "Trigger: fire these offsets before the event given by at."),
        Field(name: "timezone", type: "string", summary: "IANA zone for on_calendar and local date-times (default: the daemon's)."),
        Field(name: "dst_gap", type: "string", summary: "With on_calendar: skip (default, as systemd) or shift (fire at the first valid instant after a DST gap)."),
        Field(name: "dst_fold", type: "string", summary: "With on_calendar: first (default, as systemd) or both (fire a time repeated by a DST change at each occurrence)."),
        Field(name: "backends", type: "array of strings", summary: "Backend instances to deliver to (default: all except alarms, which ring only when named)."),
        Field(name: "urgency", type: "string", summary: "low, normal (default) or critical."),
        Field(name: "icon", type: "string", summary: "Icon name or path for popups."),
        Field(name: "category", type: "string", summary: "freedesktop notification category."),
        Field(name: "sound", type: "string", summary: "Sound name or file for this notification."),
        Field(name: "actions", type: "table of strings", summary: "Action id = button label."),
        Field(name: "user_info", type: "table of strings", summary: "Handed back with every firing and action."),
        Field(name: "missed", type: "string", summary: "skip, fire-once or fire-all (default: [daemon] missed)."),
        Field(name: "max_late", type: "duration", summary: "A missed firing later than this is skipped."),
        Field(name: "wake", type: "boolean", summary: "Wake the machine from suspend for its firings (default false; needs CAP_WAKE_ALARM, see [daemon] wake_alarms)."),
        Field(name: "fleet", type: "boolean", summary: "Schedule (replace, cancel) it on every machine of the [fleet] too (default false; D-Bus and CLI only)."),
    ]

    /// The D-Bus-only field.
    public static let dbusOnly: [Field] = [
        Field(name: "replace", type: "boolean", summary: "false keeps an existing notification with the same key (default true)."),
    ]

    /// Reads one notification from any surface; every rule and message of the fields is here.
    public static func decode<R: FieldReader>(_ r: inout R, limits: SpecLimits = SpecLimits(),
                                              allowReplace: Bool = false, allowFleet: Bool = false, requireTrigger: Bool = true,
                                              triggerRefusal: String? = nil) -> Result<NotificationSpec, DecodeFailure> {
        var spec = NotificationSpec()
        spec.location = r.tableLocation

        if let key = r.string("key") {
            if let problem = validateKey(key, limits: limits) { r.report("key", problem) } else { spec.key = key }
        }
        if let title = r.requiredString("title") {
            // A popup's summary line: an empty one shows nothing to say what it is about.
            if title.isEmpty {
                r.report("title", "'title' must not be empty")
            } else if title.utf8.count > limits.maxTitleBytes {
                r.report("title", "'title' is \(title.utf8.count) bytes; the limit is \(limits.maxTitleBytes)")
            } else { spec.title = title }
        }
        if let body = r.string("body") {
            if body.utf8.count > limits.maxBodyBytes {
                r.report("body", "'body' is \(body.utf8.count) bytes; the limit is \(limits.maxBodyBytes)")
            } else { spec.body = body }
        }
        spec.backends = r.stringArray("backends")
        spec.urgency = r.choice("urgency", Words.urgency) ?? .normal
        spec.icon = r.string("icon")
        spec.category = r.string("category")
        spec.sound = r.string("sound")
        if let actions = r.stringTable("actions") {
            if actions.count > limits.maxActions {
                r.report("actions", "'actions' has \(actions.count) entries; the limit is \(limits.maxActions)")
            } else if actions.contains(where: { $0.key.isEmpty }) {
                // The id is what `ActionInvoked` hands back: an empty one cannot be told apart.
                r.report("actions", "an action id in 'actions' must not be empty")
            } else {
                spec.actions = actions.map { NotificationAction(id: $0.key, label: $0.value) }
            }
        }
        if let info = r.stringTable("user_info") {
            let bytes = info.reduce(0) { $0 + $1.key.utf8.count + $1.value.utf8.count }
            if info.count > limits.maxUserInfoEntries || bytes > limits.maxUserInfoBytes {
                r.report("user_info", "'user_info' has \(info.count) entries and \(bytes) bytes; the limits are \(limits.maxUserInfoEntries) entries and \(limits.maxUserInfoBytes) bytes")
            } else if info.contains(where: { $0.key.isEmpty }) {
                r.report("user_info", "a key in 'user_info' must not be empty")
            } else {
                for (k, v) in info { spec.userInfo[k] = v }
            }
        }
        spec.missed = r.choice("missed", Words.missed)
        spec.maxLate = r.duration("max_late", positive: true)
        if let tz = r.string("timezone") {
            if tz.isEmpty || tz.hasPrefix("/") || tz.contains("..") || tz.contains("\0") {
                r.report("timezone", "'timezone' must be an IANA zone name such as 'Europe/Berlin', found '\(tz)'")
            } else {
                spec.timezone = tz
                spec.timezoneLocation = r.valueLocation(of: "timezone")
            }
        }
        if allowReplace, let replace = r.bool("replace") { spec.replace = replace }
        if let wake = r.bool("wake") { spec.wake = wake }
        if let fleet = r.bool("fleet") {
            // Refused in a config file: every machine reads its own, so publishing it would make
            // each machine's copy replace the others' (and a reload fight the fleet).
            if fleet && !allowFleet {
                r.report("fleet", "'fleet = true' is for notifications scheduled at run time (tocsin schedule --fleet, D-Bus Schedule); to share a config notification, give every machine the same [[notification]]")
            } else { spec.fleet = fleet }
        }

        let gap = r.choice("dst_gap", Words.dstGap)
        let fold = r.choice("dst_fold", Words.dstFold)
        if let refusal = triggerRefusal {
            // A request that takes no trigger (PostNow): one given, or a field only a trigger
            // uses, means the client wanted another request, so it is refused rather than
            // dropped. `dst_gap` and `dst_fold` are refused below, as without `on_calendar`.
            for k in triggerKeys + Words.repeatKeys + Words.triggerOnlyKeys where r.has(k) {
                r.report(k, "'\(k)' \(refusal)", atValue: false)
                r.accept(k)
            }
        } else if var trigger = decodeTrigger(&r, limits: limits, required: requireTrigger) {
            if case .onCalendar(var calendar) = trigger.0 {
                calendar.dstGap = gap ?? .skip
                calendar.dstFold = fold ?? .first
                trigger.0 = .onCalendar(calendar)
            }
            if let issue = floorIssue(trigger.0, r, limits: limits) { r.report(issue) }
            spec.trigger = trigger.0
            spec.triggerLocation = trigger.1
            spec.triggerValueLocation = trigger.2
        }
        // The policies only mean something for a calendar expression; elsewhere they are a mistake.
        if !r.has("on_calendar"), r.has("dst_gap") || r.has("dst_fold") {
            for k in ["dst_gap", "dst_fold"] where r.has(k) {
                r.report(k, "'\(k)' only goes with 'on_calendar'", atValue: false)
            }
        }

        for issue in sizeIssues(spec, r, limits: limits) { r.report(issue) }
        r.finish(known: allowReplace ? Words.knownWithReplace : Words.known)
        if r.issues.isEmpty { return .success(spec) }
        return .failure(DecodeFailure(issues: r.issues))
    }

    /// Keys are printable, bounded, and safe to use as D-Bus strings and log fields.
    public static func validateKey(_ key: String, limits: SpecLimits = SpecLimits()) -> String? {
        if key.isEmpty { return "'key' must not be empty" }
        if key.utf8.count > limits.maxKeyLength { return "'key' is \(key.utf8.count) bytes; the limit is \(limits.maxKeyLength)" }
        // ASCII first: keys are almost always ASCII, and a scalar's general category is a table lookup.
        let ascii = key.utf8.allSatisfy { $0 < 0x80 }
        if ascii {
            guard let at = key.utf8.firstIndex(where: { $0 < 0x21 || $0 == 0x7F }) else { return nil }
            let byte = key.utf8[at]
            return keyRefusal(UInt32(byte), at: key.utf8.distance(from: key.utf8.startIndex, to: at),
                              kind: byte == 0x20 ? "a space" : "a control character")
        }
        // Printable means visible: a key that looks like another (a zero-width space, a no-break
        // space, a right-to-left override turning `lla` into `all` on screen) is refused, with the
        // character named so the caller can find it. The joiners (U+200C, U+200D) stay allowed:
        // emoji sequences and Persian and Indic words need them; so do characters newer than
        // this build's Unicode tables.
        for (i, c) in key.unicodeScalars.enumerated() {
            let kind: String?
            switch c.value {
            case 0x200B, 0x2060, 0xFEFF: kind = "an invisible character (zero-width space, word joiner or byte-order mark)"
            case 0x061C, 0x200E, 0x200F, 0x202A...0x202E, 0x2066...0x2069: kind = "a bidi control"
            case 0xE0000...0xE007F: kind = "an invisible tag character"
            default:
                switch c.properties.generalCategory {
                case .control: kind = "a control character"
                case .spaceSeparator, .lineSeparator, .paragraphSeparator: kind = "a space or separator"
                default: kind = nil
                }
            }
            if let kind { return keyRefusal(c.value, at: i, kind: kind) }
        }
        return nil
    }

    /// Names the character and where it is, so the caller can find it (a tab looks like spaces).
    private static func keyRefusal(_ scalar: UInt32, at index: Int, kind: String) -> String {
        let hex = String(scalar, radix: 16, uppercase: true)
        return "'key' must not contain spaces or control characters: U+\(String(repeating: "0", count: max(0, 4 - hex.count)))\(hex) at character \(index + 1) is \(kind)"
    }

    /// What every decode compares against, built once: a `Schedule` call decodes one spec, and
    /// rebuilding these lists per call was a measurable part of its cost.
    enum Words {
        static let urgency = Urgency.allCases.map { ($0.rawValue, $0) }
        static let missed = MissedPolicy.allCases.map { ($0.rawValue, $0) }
        static let dstGap = DSTGapPolicy.allCases.map { ($0.rawValue, $0) }
        static let dstFold = DSTFoldPolicy.allCases.map { ($0.rawValue, $0) }
        static let known = all.map(\.name)
        static let knownWithReplace = known + dbusOnly.map(\.name)
        static let repeatKeys = ["count", "starting", "until"]
        /// What only a trigger reads: the missed-firing policy, its lateness bound, and the zone
        /// of local times and calendar expressions.
        static let triggerOnlyKeys = ["missed", "max_late", "timezone"]
    }

    private static func decodeTrigger<R: FieldReader>(_ r: inout R, limits: SpecLimits, required: Bool) -> (TriggerSpec, SourceLocation, SourceLocation)? {
        // `at` is both a trigger and the event of remind_before.
        // A loop, not `filter`: its closure captured a copy of the reader per key (five per call).
        var present: [String] = []
        for k in triggerKeys where r.has(k) && !(k == "at" && r.has("remind_before")) { present.append(k) }
        for k in Words.repeatKeys where r.has(k) && !r.has("every") {
            r.report(k, "'\(k)' only goes with 'every'", atValue: false)
            r.accept(k)
        }
        if present.isEmpty {
            for k in triggerKeys { r.accept(k) }
            if required {
                r.report(FieldIssue(field: "trigger", location: r.tableLocation,
                                    message: "\(r.context) has no trigger; give one of 'at', 'after', 'every', 'on_calendar', 'remind_before'"))
            }
            return nil
        }
        if present.count > 1 {
            let second = present[1]
            r.report(FieldIssue(field: second, location: r.location(of: second),
                                message: "\(r.context) has two triggers, '\(present[0])' and '\(second)'; give exactly one"))
            for k in triggerKeys + Words.repeatKeys { r.accept(k) }
            return nil
        }
        let kind = present[0]
        let loc = r.location(of: kind)
        let valueLoc = r.valueLocation(of: kind)
        switch kind {
        case "at":
            guard let t = r.timeValue("at") else { return nil }
            return (.at(t), loc, valueLoc)
        case "after":
            guard let d = r.duration("after", positive: true) else { return nil }
            return (.after(d), loc, valueLoc)
        case "every":
            guard let period = r.duration("every", positive: true) else { return nil }
            var count: UInt32?
            if r.has("count") { count = r.integer("count", in: 1...Int64(UInt32.max)).map { UInt32($0) } }
            let starting = r.has("starting") ? r.timeValue("starting") : nil
            let until = r.has("until") ? r.timeValue("until") : nil
            return (.every(period, count: count, starting: starting, until: until), loc, valueLoc)
        case "on_calendar":
            guard let text = r.string("on_calendar") else { return nil }
            guard let spec = r.parse("on_calendar", text, { t throws(TimeSyntaxError) in try CalendarSpec.parse(t) }) else { return nil }
            return (.onCalendar(spec), loc, valueLoc)
        default:  // remind_before
            guard r.has("at") else {
                r.report("remind_before", "'remind_before' needs 'at', the time of the event", atValue: false)
                r.accept("remind_before")
                return nil
            }
            let event = r.timeValue("at")
            guard let texts = r.stringArray("remind_before") else { return nil }
            if texts.isEmpty { r.report("remind_before", "'remind_before' must list at least one offset"); return nil }
            if texts.count > limits.maxRemindOffsets {
                r.report("remind_before", "'remind_before' has \(texts.count) offsets; the limit is \(limits.maxRemindOffsets)")
                return nil
            }
            var offsets: [TimeSpan] = []
            for (i, t) in texts.enumerated() {
                // At the element, as the other element errors are: the array may span many lines.
                let element = r.elementLocation(of: "remind_before", at: i)
                do throws(TimeSyntaxError) {
                    let o = try TimeSpan.parse(t)
                    if o < .zero { throw TimeSyntaxError(.invalidDuration, "an offset before the event must not be negative", column: 1) }
                    guard r.within("remind_before", o, text: t, at: element) != nil else { return nil }
                    offsets.append(o)
                } catch {
                    r.report(FieldIssue(field: "remind_before", location: element, message: "invalid offset '\(t)' in 'remind_before': \(error.message)"))
                    return nil
                }
            }
            guard let event else { return nil }
            return (.remindBefore(event: event, offsets: offsets), loc, valueLoc)
        }
    }
}

/// All problems found while decoding one table or file.
public struct DecodeFailure: Error, Sendable {
    public var issues: [FieldIssue]
}

extension String {
    func trimmingCharacters(in set: Whitespace) -> String {
        var s = Substring(self)
        while let f = s.first, f == " " || f == "\t" { s.removeFirst() }
        while let l = s.last, l == " " || l == "\t" { s.removeLast() }
        return String(s)
    }
    enum Whitespace { case whitespaces }
}
