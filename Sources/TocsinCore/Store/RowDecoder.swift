import TocsinModel
import TocsinTime
import TocsinSystem

/// Turns rows of the notification table back into values.
///
/// A value owned by whoever scans: start-up's two scanning threads each have their own caches,
/// and the per-row cache updates are plain stores rather than the dynamically checked accesses
/// that a class's stored properties get.
struct RowDecoder {
    let zones: ZoneCache
    /// Parsed calendar expressions by their stored text: a million rows of one rule parse it once.
    private var calendars: [String: CalendarSpec] = [:]
    private var backendLists = RepeatedText<[String]?>()
    private var missedPolicies = RepeatedText<MissedPolicy>()

    init(zones: ZoneCache) { self.zones = zones }

    static let columns = """
        key, source, fingerprint, title, body, trigger_kind, trigger_a, trigger_b, trigger_c, trigger_d,
        trigger_text, zone, backends, urgency, icon, category, sound, actions, user_info, missed, max_late,
        last_number, last_instant, last_offset, alert, alert_a, alert_b, cancelled,
        pending_backends, pending_number, pending_instant, pending_offset, pending_due, wake, base
        """
    /// The same positions with the content left out: what start-up needs, and no more.
    static let scheduleColumns = """
        key, source, fingerprint, NULL, NULL, trigger_kind, trigger_a, trigger_b, trigger_c, trigger_d,
        trigger_text, zone, backends, NULL, NULL, NULL, NULL, NULL, NULL, missed, max_late,
        last_number, last_instant, last_offset, alert, alert_a, alert_b, cancelled,
        pending_backends, pending_number, pending_instant, pending_offset, pending_due, wake, base
        """

    /// The full row of `columns`, content included.
    mutating func row(_ q: SQLiteStatement) -> Result<StoredNotification, RowProblem> {
        let key = q.text(0) ?? ""
        let zoneName = q.text(11) ?? "UTC"
        let kind = q.int64(5)
        guard let trigger = trigger(q, kind: kind, zone: zoneName) else {
            return .failure(Self.unreadable(key, zone: zoneName))
        }
        let isConfig = q.int64(1) == 1
        var n = Notification(
            key: key, title: q.text(3) ?? "", body: q.text(4) ?? "", trigger: trigger, backends: backends(q),
            missed: missed(q), maxLate: Self.maxLate(q), timezone: zoneName,
            source: isConfig ? .config : .runtime, fingerprint: q.text(2) ?? "")
        n.urgency = q.text(13).flatMap(Urgency.init(rawValue:)) ?? .normal
        n.icon = q.text(14); n.category = q.text(15); n.sound = q.text(16)
        n.actions = Self.pairs(q.text(17) ?? "").map { NotificationAction(id: $0.0, label: $0.1) }
        for (k, v) in Self.pairs(q.text(18) ?? "") { n.userInfo[k] = v }
        n.wake = q.int64(33) == 1
        return .success(StoredNotification(notification: n, last: Self.last(q), alert: Self.alert(q), cancelled: q.int64(27) == 1,
                                           pending: Self.pending(q), base: Self.base(q)))
    }

    /// Start-up's row of `scheduleColumns`, appended in place. It reads only the columns the row's
    /// kind uses (no zone unless a calendar needs it), and copies nothing on the way into the chunk.
    mutating func scheduleRow(_ q: SQLiteStatement, into out: inout LoadedState) {
        let key = q.text(0) ?? ""
        let kind = q.int64(5)
        guard let trigger = trigger(q, kind: kind, zone: q.text(11) ?? "UTC") else {
            out.problems.append(Self.unreadable(key, zone: q.text(11) ?? "UTC").description)
            return
        }
        let isConfig = q.int64(1) == 1
        out.rows.append(RestoredRow(
            key: key, trigger: trigger, base: Self.base(q), backends: backends(q), missed: missed(q),
            maxLate: Self.maxLate(q), isConfig: isConfig, fingerprint: isConfig ? q.text(2) ?? "" : "", last: Self.last(q),
            alert: Self.alert(q), cancelled: q.int64(27) == 1, pending: Self.pending(q), wake: q.int64(33) == 1))
    }

    static func pairs(_ text: String) -> [(String, String)] {
        let flat = ListCodec.decode(text) ?? []
        return stride(from: 0, to: flat.count - 1, by: 2).map { (flat[$0], flat[$0 + 1]) }
    }

    // The columns both layouts share, by position.

    private mutating func trigger(_ q: SQLiteStatement, kind: Int64, zone: @autoclosure () -> String) -> Trigger? {
        TriggerColumns.decode(kind: kind, a: q.int(6), b: q.int(7), c: q.int(8), d: q.int(9), text: q.text(10),
                              zone: zone(), zones: zones, calendars: &calendars)
    }

    private static func unreadable(_ key: String, zone: String) -> RowProblem {
        RowProblem(description: "notification '\(key)': its trigger can no longer be read (zone '\(zone)')")
    }

    private mutating func backends(_ q: SQLiteStatement) -> [String]? {
        backendLists.decode(q, 12) { $0.flatMap(ListCodec.decode) }
    }

    private mutating func missed(_ q: SQLiteStatement) -> MissedPolicy {
        missedPolicies.decode(q, 19) { $0.flatMap(MissedPolicy.init(rawValue:)) ?? DaemonKeys.missed.defaultValue }
    }

    private static func maxLate(_ q: SQLiteStatement) -> TimeSpan? { q.int(20).map { TimeSpan(microseconds: $0) } }

    private static func last(_ q: SQLiteStatement) -> Occurrence? {
        guard let num = q.int(21), let inst = q.int(22) else { return nil }
        return Occurrence(instant: Instant(microseconds: inst), number: UInt32(clamping: num),
                          offset: q.int(23).map { TimeSpan(microseconds: $0) })
    }

    private static func alert(_ q: SQLiteStatement) -> AlertState {
        let kind = q.int64(24)
        return kind == 0 ? .idle : AlertColumns.decode(kind: kind, a: q.int(25), b: q.int(26))
    }

    private static func pending(_ q: SQLiteStatement) -> PendingDelivery? {
        guard let list = q.text(28).flatMap(ListCodec.decode), let num = q.int(29), let inst = q.int(30), let due = q.int(32) else {
            return nil
        }
        return PendingDelivery(occurrence: Occurrence(instant: Instant(microseconds: inst), number: UInt32(clamping: num),
                                                      offset: q.int(31).map { TimeSpan(microseconds: $0) }),
                               due: Instant(microseconds: due), remaining: list)
    }

    private static func base(_ q: SQLiteStatement) -> Instant? {
        q.int(34).map { Instant(microseconds: $0) }
    }
}
