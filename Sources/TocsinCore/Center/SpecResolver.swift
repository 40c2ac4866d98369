import TocsinModel
import TocsinTime
import TocsinSystem

/// Turns a request (`NotificationSpec`, from the config file or D-Bus) into a `Notification`:
/// the zone looked up, relative and local times made absolute, the backends checked. The one
/// place where zone names and backend names of a request are validated, and where `[quiet]`
/// windows get their zones (`quietRules`).
struct SpecResolver: Sendable {
    let zones: ZoneCache
    let defaultZone: TimeZoneRules
    let defaultMissed: MissedPolicy
    let defaultMaxLate: TimeSpan?

    /// `known`: the configured backends' names; read only when `spec.backends` is set.
    func resolve(_ spec: NotificationSpec, source: NotificationSource, now: Instant,
                 backendNames known: [String]) throws(CenterError) -> Notification {
        let zone: TimeZoneRules
        if let name = spec.timezone {
            do { zone = try zones.zone(named: name) } catch {
                throw CenterError(.invalidTrigger, error.message, field: "timezone")
            }
        } else {
            zone = defaultZone
        }
        // Every instant made absolute here is checked against `TimeLimit`: the decoders check
        // what they can without a "now" and a zone, this what needs them.
        func instant(_ v: TimeValue, _ field: String) throws(CenterError) -> Instant {
            let t: Instant
            switch v {
            case .instant(let i): t = i
            case .local(let c): t = Timestamp.instant(of: c, in: zone)
            case .day(let days, let time): t = Timestamp.instant(days: days, at: time, from: now, in: zone)
            case .relative(let d): return try adding(d, field, shown: "+\(d)")
            }
            if let refusal = TimeLimit.refusal(of: t, field: field, value: Timestamp.rfc3339UTC(t)) {
                throw CenterError(.invalidTrigger, refusal, field: field)
            }
            return t
        }
        func adding(_ d: TimeSpan, _ field: String, shown: String? = nil) throws(CenterError) -> Instant {
            guard let t = TimeLimit.adding(d, to: now) else {
                throw CenterError(.invalidTrigger, TimeLimit.pastLatest(field: field, value: shown ?? "\(d)"), field: field)
            }
            return t
        }
        let trigger: Trigger
        switch spec.trigger {
        case .at(let v):
            let t = try instant(v, "at")
            // A config entry resolves like a past full date, so it is kept, skipped and reported
            // by `firstFiring` (a `check` warning at its position, a log line at load): refused
            // here, a time that was ahead when the file was checked would stop the daemon from
            // starting once that time of day has passed.
            if case .day(0, let time) = v, t <= now, source == .runtime { throw Self.pastToday(time, now: now, zone: zone) }
            trigger = .at(t)
        case .after(let d):
            guard d.microseconds > 0 else { throw CenterError(.invalidTrigger, "'after' must be positive", field: "after") }
            trigger = .at(try adding(d, "after"))
        case .every(let p, let count, let starting, let until):
            guard p.microseconds > 0 else { throw CenterError(.invalidTrigger, "'every' must be positive; an interval of 0 is refused", field: "every") }
            let first: Instant
            if let starting { first = try instant(starting, "starting") } else { first = try adding(p, "every") }
            var last: Instant?
            if let until { last = try instant(until, "until") }
            trigger = .every(period: p, starting: first, count: count, until: last)
        case .onCalendar(let c):
            let resolved: (spec: CalendarSpec, zone: TimeZoneRules)
            do { resolved = try c.resolvingZone(local: zone, rules: zones.rules) } catch {
                throw CenterError(.invalidTrigger, "\(error.message) in 'on_calendar'", field: "on_calendar")
            }
            trigger = .calendar(resolved.spec, zone: resolved.zone)
        case .remindBefore(let event, let offsets):
            let at = try instant(event, "at")
            for o in offsets where !TimeLimit.fits(o) {
                throw CenterError(.invalidTrigger, TimeLimit.pastLatest(field: "remind_before", value: "\(o)"), field: "remind_before")
            }
            trigger = .remindBefore(event: at, offsets: Trigger.mergingEqualOffsets(offsets))
        }
        if let names = spec.backends {
            for b in names where !known.contains(b) {
                let message = BackendNames.unknown(b, among: known) + " (configured: \(known.joined(separator: ", ")))"
                throw CenterError(.unknownBackend, message, field: "backends")
            }
        }
        if let late = spec.maxLate, !TimeLimit.fits(late) {
            throw CenterError(.invalidTrigger, TimeLimit.pastLatest(field: "max_late", value: "\(late)"), field: "max_late")
        }
        var n = Notification(
            key: spec.key ?? Self.generatedKey(), title: spec.title, body: spec.body, trigger: trigger,
            backends: spec.backends, urgency: spec.urgency, icon: spec.icon, category: spec.category, sound: spec.sound,
            actions: spec.actions, userInfo: spec.userInfo, missed: spec.missed ?? defaultMissed,
            maxLate: spec.maxLate ?? defaultMaxLate, timezone: zone.identifier, source: source,
            fingerprint: source == .config ? Self.fingerprint(spec) : "")
        n.wake = spec.wake
        return n
    }

    /// `[quiet]` with each window's zone resolved the way a notification's is. A window whose zone
    /// or expression cannot be used is refused with its position in the section.
    func quietRules(_ settings: QuietSettings) throws(CenterError) -> QuietRules {
        var windows: [QuietWindow] = []
        for (i, w) in settings.windows.enumerated() {
            var local = defaultZone
            if let name = w.timezone {
                do { local = try zones.zone(named: name, in: "[[quiet.window]] #\(i + 1) 'timezone'") } catch {
                    throw CenterError(.invalidConfig, error.message, field: "timezone")
                }
            }
            do {
                let r = try w.onCalendar.resolvingZone(local: local, rules: zones.rules)
                windows.append(QuietWindow(spec: r.spec, zone: r.zone, duration: w.duration))
            } catch {
                throw CenterError(.invalidConfig, "\(error.message) in [[quiet.window]] #\(i + 1)", field: "on_calendar")
            }
        }
        return QuietRules(windows: windows, modes: settings.backends, criticalPasses: settings.criticalPasses,
                          alarmsPass: settings.alarmsPass)
    }

    /// A random (version 4) UUID: unique across restarts and machines without any state.
    static func generatedKey() -> String {
        var g = SystemRandomNumberGenerator()
        var bytes = (0..<16).map { _ in UInt8.random(in: 0...255, using: &g) }
        bytes[6] = bytes[6] & 0x0f | 0x40
        bytes[8] = bytes[8] & 0x3f | 0x80
        let hex = Array("0123456789abcdef")
        var out = ""
        out.reserveCapacity(36)
        for (i, b) in bytes.enumerated() {
            if i == 4 || i == 6 || i == 8 || i == 10 { out.append("-") }
            out.append(hex[Int(b >> 4)])
            out.append(hex[Int(b & 0xf)])
        }
        return out
    }

    /// A stable digest of a definition as written (positions excluded), so moving an entry in the
    /// file or reformatting it does not count as a change.
    static func fingerprint(_ s: NotificationSpec) -> String {
        var parts: [String] = [s.key ?? "", s.title, s.body, triggerText(s.trigger), s.backends.map { $0.joined(separator: "\u{1}") } ?? "*",
                               s.urgency.rawValue, s.icon ?? "", s.category ?? "", s.sound ?? "",
                               s.actions.map { "\($0.id)=\($0.label)" }.joined(separator: "\u{1}"),
                               s.userInfo.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: "\u{1}"),
                               s.missed?.rawValue ?? "", s.maxLate.map { "\($0.microseconds)" } ?? "", s.timezone ?? ""]
        // The DST policies are not part of the expression's text; a changed policy is a changed definition.
        // Appended only when set, so fingerprints stored before the policies existed stay equal.
        if case .onCalendar(let c) = s.trigger, c.dstGap != .skip || c.dstFold != .first {
            parts.append("dst_gap=\(c.dstGap.rawValue);dst_fold=\(c.dstFold.rawValue)")
        }
        // Likewise `wake`: only when set, so a definition written before it existed is unchanged.
        if s.wake { parts.append("wake") }
        parts = parts.map { "\($0.utf8.count):\($0)" }
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        for b in parts.joined().utf8 {
            h ^= UInt64(b)
            h = h &* 0x0000_0100_0000_01b3
        }
        return String(h, radix: 16)
    }

    /// `--at 07:00` in the evening: systemd reads a time alone as today's, which has passed. Said
    /// in those words, with tomorrow's date to give instead: "in the past" alone reads as a bug
    /// to someone who meant the next 07:00.
    static func pastToday(_ time: TimeOfDay, now: Instant, zone: TimeZoneRules) -> CenterError {
        let clock = time.clock
        let tomorrow = Timestamp.rfc3339(Timestamp.instant(days: 1, at: time, from: now, in: zone), in: zone)
        return CenterError(.invalidTrigger, "'at' is in the past: a time alone is today's, and \(clock) today has passed; "
                           + "a past time is never delivered (for tomorrow's, give its date: \(tomorrow.prefix(10)) \(clock))", field: "at")
    }

    /// The trigger as `"\(trigger)"` prints it, which the fingerprints stored so far were made
    /// from, so they must not change. That went through reflection (`Mirror`, a type lookup per
    /// field) and was half of a reload's work on the thread that fires: 9 µs of each
    /// notification's, 0.45 s for 50,000. Written out here: reflection prints a payload with a
    /// `description` (`TimeSpan`, `Instant`, `CalendarSpec`'s normalized expression) by it, and the
    /// others field by field, qualified by their module. `FingerprintTests` holds each kind to
    /// `String(describing:)`.
    static func triggerText(_ t: TriggerSpec) -> String {
        switch t {
        case .at(let v):
            return "at(\(timeValueText(v)))"
        case .after(let span):
            return "after(\(span.description))"
        case .every(let period, let count, let starting, let until):
            return "every(\(period.description), count: \(count.map { "Optional(\($0))" } ?? "nil"), "
                + "starting: \(starting.map { "Optional(\(timeValueText($0)))" } ?? "nil"), "
                + "until: \(until.map { "Optional(\(timeValueText($0)))" } ?? "nil"))"
        case .remindBefore(let event, let offsets):
            return "remindBefore(event: \(timeValueText(event)), offsets: [\(offsets.map(\.description).joined(separator: ", "))])"
        case .onCalendar(let c):
            return "onCalendar(\(c.description))"
        }
    }

    /// A `TimeValue` as reflection prints it inside another value (qualified by its module).
    private static func timeValueText(_ v: TimeValue) -> String {
        switch v {
        case .instant(let i):
            return "TocsinModel.TimeValue.instant(\(i.description))"
        case .relative(let span):
            return "TocsinModel.TimeValue.relative(\(span.description))"
        case .local(let c):
            return "TocsinModel.TimeValue.local(TocsinTime.CivilDateTime(year: \(c.year), month: \(c.month), day: \(c.day), "
                + "hour: \(c.hour), minute: \(c.minute), second: \(c.second), microsecond: \(c.microsecond)))"
        case .day(let days, let t):
            return "TocsinModel.TimeValue.day(days: \(days), time: TocsinTime.TimeOfDay(hour: \(t.hour), minute: \(t.minute), "
                + "second: \(t.second), microsecond: \(t.microsecond)))"
        }
    }
}
