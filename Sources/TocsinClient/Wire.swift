import DBus
import FoundationEssentials

/// The gateway's `a{sv}` shapes, both ways. Requests use the config file's field names and
/// syntax (docs/DBUS-API.md); times travel as unix microseconds or `@seconds`.
enum Wire {
    static func spec(_ content: NotificationContent, key: String) -> [(String, DBusValue)] {
        var f: [(String, DBusValue)] = [("key", .string(key)), ("title", .string(content.title))]
        if !content.body.isEmpty { f.append(("body", .string(content.body))) }
        f.append(("urgency", .string(content.urgency.rawValue)))
        if let icon = content.icon { f.append(("icon", .string(icon))) }
        if let category = content.category { f.append(("category", .string(category))) }
        if let sound = content.sound { f.append(("sound", .string(sound))) }
        if !content.actions.isEmpty {
            f.append(("actions", stringTable(content.actions.map { ($0.id, $0.title) })))
        }
        if let backends = content.backends { f.append(("backends", .array(.string, backends.map { .string($0) }))) }
        if !content.userInfo.isEmpty { f.append(("user_info", stringTable(content.userInfo.sorted { $0.key < $1.key }))) }
        return f
    }

    static func spec(_ request: NotificationRequest) -> DBusValue {
        var f = spec(request.content, key: request.key) + trigger(request.trigger)
        if !request.replacesExisting { f.append(("replace", .boolean(false))) }
        if request.wakesDevice { f.append(("wake", .boolean(true))) }
        return .vardict(f)
    }

    static func trigger(_ t: NotificationTrigger) -> [(String, DBusValue)] {
        switch t.kind {
        case .date(let d): return [("at", .string(instant(d)))]
        case let .interval(interval, repeats, count, until):
            guard repeats else { return [("after", .string(interval.systemdText))] }
            var f: [(String, DBusValue)] = [("every", .string(interval.systemdText))]
            if let count { f.append(("count", .uint32(UInt32(clamping: count)))) }
            if let until { f.append(("until", .string(instant(until)))) }
            return f
        case let .calendar(expression, timeZone):
            var f: [(String, DBusValue)] = [("on_calendar", .string(expression))]
            if let timeZone { f.append(("timezone", .string(timeZone))) }
            return f
        case let .reminders(offsets, event):
            return [("at", .string(instant(event))), ("remind_before", .array(.string, offsets.map { .string($0.systemdText) }))]
        }
    }

    /// `@<unix seconds>.<micro>`: exact to the daemon's resolution, and no zone to get wrong.
    static func instant(_ d: Date) -> String {
        let us = d.unixMicroseconds
        let s = us >= 0 ? us / 1_000_000 : -((-us + 999_999) / 1_000_000)
        let frac = us - s * 1_000_000
        let digits = String(frac)
        return "@\(s)." + String(repeating: "0", count: 6 - digits.count) + digits
    }

    static func stringTable(_ pairs: [(String, String)]) -> DBusValue {
        .dictionary(key: .string, value: .string, pairs.map { .init(.string($0.0), .string($0.1)) })
    }

    // MARK: Replies

    /// An `a{sv}` with typed lookups; a missing or mistyped field reads as nil.
    struct Fields {
        let values: [String: DBusValue]
        init(_ v: DBusValue) throws(TocsinClientError) {
            guard let d = try? v.asStringDictionary() else {
                throw TocsinClientError(.unexpectedReply, "expected a{sv} from the daemon, got '\(v.type)'")
            }
            values = d.mapValues(\.unwrappedVariant)
        }
        func string(_ k: String) -> String? { if case .string(let s)? = values[k] { return s } else { return nil } }
        func int64(_ k: String) -> Int64? { if case .int64(let x)? = values[k] { return x } else { return nil } }
        func uint32(_ k: String) -> Int? { if case .uint32(let x)? = values[k] { return Int(x) } else { return nil } }
        func bool(_ k: String) -> Bool? { if case .boolean(let b)? = values[k] { return b } else { return nil } }
        func date(_ k: String) -> Date? { int64(k).map(Date.init(unixMicroseconds:)) }
        func strings(_ k: String) -> [String] {
            guard case .array(_, let items)? = values[k] else { return [] }
            return items.compactMap { if case .string(let s) = $0.unwrappedVariant { s } else { nil } }
        }
        func table(_ k: String) -> [String: String] { values[k].map(Wire.table) ?? [:] }
    }

    static func table(_ v: DBusValue) -> [String: String] {
        guard let d = try? v.unwrappedVariant.asStringDictionary() else { return [:] }
        return d.compactMapValues { if case .string(let s) = $0.unwrappedVariant { s } else { nil } }
    }

    static func pending(_ v: DBusValue) throws(TocsinClientError) -> PendingNotification {
        let f = try Fields(v)
        return PendingNotification(
            key: f.string("key") ?? "", title: f.string("title") ?? "", body: f.string("body") ?? "",
            nextFire: f.date("next_fire"), lastFire: f.date("last_fire"),
            state: f.string("state").flatMap(PendingNotification.State.init(rawValue:)) ?? .scheduled,
            triggerDescription: f.string("trigger") ?? "",
            urgency: f.string("urgency").flatMap(NotificationUrgency.init(rawValue:)) ?? .normal,
            backends: f.strings("backends"), userInfo: f.table("user_info"), snoozedUntil: f.date("snoozed_until"),
            wakesDevice: f.bool("wake") ?? false)
    }

    /// An entry without its kind or time is a reply this client cannot read, not one to skip:
    /// a history with holes in it would look complete.
    static func history(_ v: DBusValue) throws(TocsinClientError) -> HistoryEntry {
        let f = try Fields(v)
        guard let word = f.string("event"), let kind = HistoryEntry.Kind(rawValue: word), let time = f.date("time") else {
            throw TocsinClientError(.unexpectedReply, "History answered an entry without 'event' s and 'time' x: \(f.values.keys.sorted())")
        }
        return HistoryEntry(time: time, kind: kind, key: f.string("key") ?? "", title: f.string("title") ?? "",
                            due: f.date("due"), until: f.date("until"), occurrence: f.uint32("occurrence"),
                            count: f.uint32("count"), late: f.bool("late"), backends: f.strings("backends"))
    }

    static func status(_ v: DBusValue) throws(TocsinClientError) -> DaemonStatus {
        let f = try Fields(v)
        return DaemonStatus(version: f.string("version") ?? "", pid: f.uint32("pid") ?? 0, pending: f.uint32("pending") ?? 0,
                            backends: f.table("backends"), nextKey: f.string("next_key"), nextFire: f.date("next_fire"),
                            wake: f.string("wake") ?? "", wakeNextKey: f.string("wake_next_key"), wakeNext: f.date("wake_next"),
                            wakeArmed: f.date("wake_armed"), sleep: f.string("sleep") ?? "")
    }

    static func quiet(_ v: DBusValue) throws(TocsinClientError) -> QuietState {
        let f = try Fields(v)
        return QuietState(active: f.bool("active") ?? false,
                          source: f.string("source").flatMap(QuietState.Source.init(rawValue:)) ?? .none,
                          held: f.uint32("held") ?? 0, until: f.date("until"))
    }

    // MARK: Signals

    /// The gateway's signals as events; a malformed one (another version's) is dropped.
    static func event(_ s: DBusSignal) -> NotificationEvent? {
        let a = s.arguments
        func str(_ i: Int) -> String? { if i < a.count, case .string(let v) = a[i] { v } else { nil } }
        func date(_ i: Int) -> Date? { if i < a.count, case .int64(let v) = a[i] { Date(unixMicroseconds: v) } else { nil } }
        if s.member.rawValue == "CancelledAll" {
            guard let first = a.first, case .uint32(let count) = first else { return nil }
            return .cancelledAll(count: Int(count))
        }
        guard let key = str(0) else { return nil }
        switch s.member.rawValue {
        case "Fired":
            guard a.count > 1, let f = try? Fields(a[1]) else { return nil }
            return .fired(FiredNotification(
                key: key, title: f.string("title") ?? "", body: f.string("body") ?? "",
                due: f.date("due") ?? .distantPast, fired: f.date("fired") ?? .distantPast,
                occurrence: f.uint32("occurrence") ?? 1, late: f.bool("late") ?? false, userInfo: f.table("user_info"),
                before: f.int64("before").map { .microseconds($0) }))
        case "ActionInvoked":
            guard let action = str(1) else { return nil }
            return .actionInvoked(key: key, action: action, userInfo: a.count > 2 ? table(a[2]) : [:])
        case "Acknowledged": return .acknowledged(key: key)
        case "Cancelled": return .cancelled(key: key)
        case "Snoozed": return date(1).map { .snoozed(key: key, until: $0) }
        case "Missed": return date(1).map { .missed(key: key, due: $0) }
        case "Unanswered":
            guard a.count > 1, case .uint32(let rings) = a[1] else { return nil }
            return .unanswered(key: key, rings: Int(rings))
        case "Interrupted":
            guard let due = date(1), a.count > 3, case .uint32(let occurrence) = a[2], case .array(_, let names) = a[3] else { return nil }
            return .interrupted(key: key, due: due, occurrence: Int(occurrence),
                                backends: names.compactMap { if case .string(let n) = $0 { n } else { nil } })
        default: return nil
        }
    }
}
