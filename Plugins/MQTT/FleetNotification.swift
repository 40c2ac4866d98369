public import TocsinCore
import TocsinTime
public import TocsinModel

/// A `fleet = true` notification as it crosses the fleet (the `notification` of a `scheduled`
/// message): its fields, and its trigger in the resolved, absolute form, so `after 1h` or an
/// `every` without `starting` mean the same instants on every machine, not "from whenever the
/// message arrives". Times are unix microseconds; spans microseconds.
public struct FleetNotification: Codable, Hashable, Sendable {
    public struct TriggerForm: Codable, Hashable, Sendable {
        /// `at`, `every`, `on_calendar` or `remind_before`.
        public var kind: String
        public var at: Int64?
        public var every: Int64?
        public var count: UInt32?
        public var starting: Int64?
        public var until: Int64?
        public var onCalendar: String?
        public var dstGap: String?
        public var dstFold: String?
        public var offsets: [Int64]?
        enum CodingKeys: String, CodingKey {
            case kind, at, every, count, starting, until, offsets
            case onCalendar = "on_calendar", dstGap = "dst_gap", dstFold = "dst_fold"
        }
    }
    public var title: String
    public var body: String?
    public var trigger: TriggerForm
    public var backends: [String]?
    public var urgency: String?
    public var icon: String?
    public var category: String?
    public var sound: String?
    /// `[id, label]` pairs, in order.
    public var actions: [[String]]?
    public var userInfo: [String: String]?
    public var missed: String?
    public var maxLate: Int64?
    public var timezone: String?
    /// Sent only when true, so machines that predate `wake` read the message as before.
    public var wake: Bool?

    enum CodingKeys: String, CodingKey {
        case title, body, trigger, backends, urgency, icon, category, sound, actions, missed, timezone, wake
        case userInfo = "user_info", maxLate = "max_late"
    }

    public init(_ n: TocsinCore.Notification) {
        title = n.title
        body = n.body.isEmpty ? nil : n.body
        switch n.trigger {
        case .at(let i): trigger = TriggerForm(kind: "at", at: i.microseconds)
        case let .every(period, starting, count, until):
            trigger = TriggerForm(kind: "every", every: period.microseconds, count: count, starting: starting.microseconds,
                                  until: until?.microseconds)
        case let .calendar(spec, _):
            trigger = TriggerForm(kind: "on_calendar", onCalendar: spec.normalized, dstGap: spec.dstGap.rawValue,
                                  dstFold: spec.dstFold.rawValue)
        case let .remindBefore(event, offsets):
            trigger = TriggerForm(kind: "remind_before", at: event.microseconds, offsets: offsets.map(\.microseconds))
        }
        backends = n.backends
        urgency = n.urgency.rawValue
        icon = n.icon; category = n.category; sound = n.sound
        actions = n.actions.isEmpty ? nil : n.actions.map { [$0.id, $0.label] }
        userInfo = n.userInfo.isEmpty ? nil : n.userInfo
        missed = n.missed.rawValue
        maxLate = n.maxLate?.microseconds
        timezone = n.timezone
        wake = n.wake ? true : nil
    }

    /// The notification as this machine schedules it (`fleet` set, so a cancel here is shared
    /// too); a failure names the field. The center still applies its own checks and limits.
    public func spec(key: String, limits: SpecLimits = SpecLimits()) -> Result<NotificationSpec, FleetMessage.DecodeError> {
        var s = NotificationSpec()
        s.key = key
        s.fleet = true
        // In the order of the fields, so the first bad one is the one reported.
        do throws(FleetMessage.DecodeError) {
            try refuseNUL()
            try readText(into: &s, limits: limits)
            s.trigger = try trigger.spec(limits: limits)
            try readDelivery(into: &s, limits: limits)
            try readTiming(into: &s)
        } catch {
            return .failure(error)
        }
        return .success(s)
    }

    /// Strings go on to D-Bus signals (`Fired`), which cannot carry NUL: refused here, by name.
    private func refuseNUL() throws(FleetMessage.DecodeError) {
        let strings: [(String, [String])] = [
            ("title", [title]), ("body", [body ?? ""]), ("icon", [icon ?? ""]), ("category", [category ?? ""]),
            ("sound", [sound ?? ""]), ("backends", backends ?? []), ("actions", (actions ?? []).flatMap { $0 }),
            ("user_info", (userInfo ?? [:]).flatMap { [$0.key, $0.value] }),
        ]
        for (field, values) in strings where values.contains(where: { $0.contains("\0") }) {
            throw fleetFieldError(field, "must not contain NUL characters")
        }
    }

    private func readText(into s: inout NotificationSpec, limits: SpecLimits) throws(FleetMessage.DecodeError) {
        guard !title.isEmpty, title.utf8.count <= limits.maxTitleBytes else {
            throw fleetFieldError("title", "must be 1-\(limits.maxTitleBytes) bytes")
        }
        s.title = title
        if let body {
            guard body.utf8.count <= limits.maxBodyBytes else { throw fleetFieldError("body", "is over \(limits.maxBodyBytes) bytes") }
            s.body = body
        }
    }

    /// Where and how it is shown: backends, urgency, icon, category, sound, actions, user info.
    private func readDelivery(into s: inout NotificationSpec, limits: SpecLimits) throws(FleetMessage.DecodeError) {
        if let backends {
            guard backends.count <= limits.maxBackends else { throw fleetFieldError("backends", "has more than \(limits.maxBackends) names") }
            s.backends = backends
        }
        if let urgency {
            guard let u = Urgency(rawValue: urgency) else { throw fleetFieldError("urgency", "is '\(urgency)'; it must be low, normal or critical") }
            s.urgency = u
        }
        for (name, value) in [("icon", icon), ("category", category), ("sound", sound)] {
            if let value, value.utf8.count > limits.maxShortStringBytes { throw fleetFieldError(name, "is over \(limits.maxShortStringBytes) bytes") }
        }
        s.icon = icon; s.category = category; s.sound = sound
        if let actions {
            guard actions.count <= limits.maxActions, actions.allSatisfy({ $0.count == 2 }) else {
                throw fleetFieldError("actions", "must be at most \(limits.maxActions) [id, label] pairs")
            }
            s.actions = actions.map { NotificationAction(id: $0[0], label: $0[1]) }
        }
        if let userInfo {
            let bytes = userInfo.reduce(0) { $0 + $1.key.utf8.count + $1.value.utf8.count }
            guard userInfo.count <= limits.maxUserInfoEntries, bytes <= limits.maxUserInfoBytes else { throw fleetFieldError("user_info", "is over the limits") }
            s.userInfo = userInfo
        }
    }

    /// What happens when it is late, in which zone, and whether it wakes the machine.
    private func readTiming(into s: inout NotificationSpec) throws(FleetMessage.DecodeError) {
        if let missed {
            guard let m = MissedPolicy(rawValue: missed) else { throw fleetFieldError("missed", "is '\(missed)'; it must be skip, fire-once or fire-all") }
            s.missed = m
        }
        if let maxLate {
            guard maxLate > 0 else { throw fleetFieldError("max_late", "must be positive") }
            s.maxLate = TimeSpan(microseconds: maxLate)
        }
        if let tz = timezone {
            guard !tz.isEmpty, !tz.hasPrefix("/"), !tz.contains(".."), !tz.contains("\0") else {
                throw fleetFieldError("timezone", "must be an IANA zone name, found '\(tz)'")
            }
            s.timezone = tz
        }
        s.wake = wake ?? false
    }
}

extension FleetNotification.TriggerForm {
    /// The trigger as this machine schedules it: every instant absolute, as it was sent.
    func spec(limits: SpecLimits) throws(FleetMessage.DecodeError) -> TriggerSpec {
        switch kind {
        case "at":
            guard let at else { throw fleetFieldError("trigger.at", "is missing") }
            return .at(.instant(Instant(microseconds: at)))
        case "every":
            guard let every, every > 0 else { throw fleetFieldError("trigger.every", "must be a positive number of microseconds") }
            guard let starting else { throw fleetFieldError("trigger.starting", "is missing (the fleet needs the first firing as an instant)") }
            return .every(TimeSpan(microseconds: every), count: count, starting: .instant(Instant(microseconds: starting)),
                          until: until.map { .instant(Instant(microseconds: $0)) })
        case "on_calendar":
            guard let text = onCalendar else { throw fleetFieldError("trigger.on_calendar", "is missing") }
            var c: CalendarSpec
            do { c = try CalendarSpec.parse(text) } catch { throw fleetFieldError("trigger.on_calendar", "is not a calendar expression: \(error.message)") }
            guard let gap = DSTGapPolicy(rawValue: dstGap ?? "skip") else { throw fleetFieldError("trigger.dst_gap", "is not skip or shift") }
            guard let fold = DSTFoldPolicy(rawValue: dstFold ?? "first") else { throw fleetFieldError("trigger.dst_fold", "is not first or both") }
            c.dstGap = gap; c.dstFold = fold
            return .onCalendar(c)
        case "remind_before":
            guard let at else { throw fleetFieldError("trigger.at", "is missing") }
            guard let offsets, !offsets.isEmpty, offsets.count <= limits.maxRemindOffsets, offsets.allSatisfy({ $0 >= 0 }) else {
                throw fleetFieldError("trigger.offsets", "must list 1-\(limits.maxRemindOffsets) offsets of at least 0")
            }
            return .remindBefore(event: .instant(Instant(microseconds: at)), offsets: offsets.map { TimeSpan(microseconds: $0) })
        default:
            throw fleetFieldError("trigger.kind", "is '\(kind)'; it must be at, every, on_calendar or remind_before")
        }
    }
}

/// A field of a received notification that this machine cannot schedule, named as in the message.
private func fleetFieldError(_ field: String, _ why: String) -> FleetMessage.DecodeError {
    .init(description: "field 'notification.\(field)' \(why)")
}
