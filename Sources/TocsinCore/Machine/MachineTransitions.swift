import TocsinModel
public import TocsinTime
import TocsinSystem

/// What a config reload did.
public struct ReloadReport: Hashable, Sendable {
    public var added: [String] = []
    public var changed: [String] = []
    public var removed: [String] = []
    public var unchanged: [String] = []
    /// Entries whose trigger never fires again (an `at` in the past): reported, not delivered.
    public var skipped: [String] = []
    public init() {}
}

/// The requests a client makes, as transitions. Each either throws (and changes nothing) or
/// changes the state and appends what must be persisted, withdrawn and emitted.
extension NotificationMachine {
    /// Who asks, for the per-client quota (`[daemon] max_pending_per_client`).
    public struct Client: Hashable, Sendable {
        /// Who the quota counts: the process behind a D-Bus connection (`uid=U pid=P start=T`,
        /// from the gateway), or a unique name when the bus does not say.
        public var name: String
        public var limit: Int
        public init(name: String, limit: Int) { self.name = name; self.limit = limit }
    }

    /// Replacing one of the client's own active notifications adds nothing and always passes.
    private func checkQuota(_ client: Client?, replacing existing: Entry?) throws(CenterError) {
        guard let client else { return }
        let row = ownerRows[client.name]
        if let existing, existing.isActive, row != nil, existing.owner == row { return }
        let used = pending(of: client.name)
        guard used < client.limit else {
            throw CenterError(.quotaExceeded, "client (\(client.name)) has \(used) pending notifications, the limit ([daemon] max_pending_per_client) is \(client.limit); cancel some first")
        }
    }

    mutating func makeEntry(_ n: Notification) -> Entry {
        makeEntry(key: n.key, trigger: n.trigger, maxLate: n.maxLate, backends: n.backends, missed: n.missed,
                  isConfig: n.source == .config, wake: n.wake)
    }

    mutating func makeEntry(key: String, trigger: Trigger, maxLate: TimeSpan?, backends: [String]?, missed: MissedPolicy,
                            isConfig: Bool, wake: Bool) -> Entry {
        Entry(key: key, trigger: triggers.compact(trigger), maxLate: maxLate?.microseconds ?? .min,
              route: route(for: backends), missed: missed, isConfig: isConfig, wake: wake)
    }

    /// Adds `n` or replaces the notification with its key (unless `replace` is false and that one
    /// is still active: then it is kept and its key returned). `maxPending` bounds the active count.
    /// A one-shot claimed ahead of its instant counts as still active here, as it does for `cancel`.
    public mutating func schedule(_ n: Notification, replace: Bool, now: Instant, maxPending: Int, client: Client? = nil,
                                  into out: inout [MachineAction]) throws(CenterError) -> String {
        let existing = entry(n.key)
        if let existing, existing.isActive || claimedAhead(n.key, now: now), !replace { return n.key }
        let next: Occurrence
        switch n.trigger.firstFiring(after: now) {
        case .success(let first): next = first
        case .failure(let reason): throw reason
        }
        if !(existing?.isActive ?? false), activeCount >= maxPending {
            throw CenterError(.quotaExceeded, "\(activeCount) notifications are pending, the limit ([daemon] max_pending) is \(maxPending); cancel some first")
        }
        try checkQuota(client, replacing: existing)
        var e = makeEntry(n)
        e.next = PackedOccurrence(next)
        if let client { e.owner = ownerRow(client.name) }
        out.append(.persist(.upsert(StoredNotification(notification: n, base: now))))
        dropClaim(n.key, now: now, into: &out)
        dropHeld(n.key, into: &out)
        if let existing, existing.isActive { out.append(.withdraw(key: n.key, backends: targets(existing), reason: .replaced)) }
        put(e)
        return n.key
    }

    /// Delivers `n` now without a trigger; the key stays tracked so an alarm can be acknowledged.
    /// With `replace` false, an active notification with its key is kept and nothing is posted,
    /// as `schedule` keeps it.
    public mutating func post(_ n: Notification, replace: Bool = true, now: Instant, client: Client? = nil,
                              into out: inout [MachineAction]) throws(CenterError) -> String {
        if !replace, let existing = entry(n.key), existing.isActive || claimedAhead(n.key, now: now) { return n.key }
        try checkQuota(client, replacing: entry(n.key))
        let occ = Occurrence(instant: now, number: 1)
        var e = makeEntry(n)
        if let client { e.owner = ownerRow(client.name) }
        e.last = PackedOccurrence(occ)
        let ring = ringPolicy(e)
        if ring != nil { e.alert = .ringing(since: now, rings: 1) }
        let to = targets(e)
        let pend = to.isEmpty ? nil : PendingDelivery(occurrence: occ, due: now, remaining: to)
        out.append(.persist(.upsert(StoredNotification(notification: n, last: occ, alert: e.alert, pending: pend, base: now))))
        // No withdraw of a replaced one: the delivery replaces its popup by key, and a withdraw
        // racing with it could close the new popup.
        put(e)
        dropClaim(n.key, now: now, into: &out)
        dropHeld(n.key, into: &out)
        setInDelivery(n.key, pend)
        out.append(.deliver(PlannedDelivery(key: n.key, occurrence: occ, due: now, fired: now, reason: .postNow,
                                            targets: to, isAlarm: ring != nil)))
        cleanUpIfDone(n.key, into: &out)
        return n.key
    }

    /// Cancels one notification. A config-defined one stays cancelled across reloads and restarts
    /// for as long as its definition in the file is unchanged; editing it there brings it back.
    ///
    /// A firing claimed ahead of its instant (`claimAhead`) that is still to come counts as
    /// pending: cancelling it before its instant means it never goes out.
    public mutating func cancel(_ key: String, now: Instant? = nil, into out: inout [MachineAction]) -> Bool {
        // Also for a one-shot that fired during quiet hours and is done: what is held of it goes.
        dropHeld(key, into: &out)
        guard var e = entry(key), e.isActive || claimedAhead(key, now: now) else { return false }
        if e.isConfig {
            out.append(.persist(.markCancelled(key: key)))
            e.cancelled = true
            e.alert = .idle
            put(e)
        } else {
            out.append(.persist(.delete(key: key, keepUserInfo: false)))
            remove(key)
        }
        dropClaim(key, now: now, into: &out)
        out.append(.withdraw(key: key, backends: targets(e), reason: .cancelled))
        out.append(.emit(.cancelled(key: key)))
        return true
    }

    /// Drops `key`'s open claim, if any. One whose instant is still to come was made ahead of it
    /// (`claimAhead`) and never handed to a backend (nothing goes out before its instant), so it
    /// never will be: `unclaimed` lets the history take back the `fired` entry its claim recorded,
    /// in the same transaction as the drop. The test is `claimedAhead`'s, so a Cancel answered
    /// true for such a claim and the history agree. One due by `now` may be out already and keeps
    /// its entry.
    private mutating func dropClaim(_ key: String, now: Instant?, into out: inout [MachineAction]) {
        guard let p = inDelivery[key] else { return }
        if claimedAhead(key, now: now) { out.append(.unclaimed(key: key, occurrence: p.occurrence, due: p.due)) }
        setInDelivery(key, nil)
    }

    /// A firing claimed ahead of its instant that is still to come (`claimAhead`).
    private func claimedAhead(_ key: String, now: Instant?) -> Bool {
        guard let now, let p = inDelivery[key] else { return false }
        return p.due > now
    }

    public mutating func cancelAll(now: Instant? = nil, into out: inout [MachineAction]) -> Int {
        var keys: [String] = []
        for (i, e) in slots.enumerated() where live[i] && (e.isActive || claimedAhead(e.key, now: now)) {
            keys.append(e.key)
        }
        keys.sort()
        var n = 0
        for k in keys where cancel(k, now: now, into: &out) { n += 1 }
        dropHeld(nil, into: &out)
        out.append(.emit(.cancelledAll(count: n)))
        return n
    }

    /// Stops a ringing or snoozed notification. False when there was nothing to acknowledge.
    public mutating func acknowledge(_ key: String, into out: inout [MachineAction]) throws(CenterError) -> Bool {
        guard var e = entry(key), !e.cancelled else {
            throw CenterError(.notFound, "no notification with key '\(Echo.capped(key))'", field: "key")
        }
        if case .idle = e.alert { return false }
        out.append(.persist(.alert(key: key, .idle)))
        e.alert = .idle
        put(e)
        out.append(.withdraw(key: key, backends: targets(e), reason: .acknowledged))
        out.append(.emit(.acknowledged(key: key)))
        cleanUpIfDone(key, into: &out)
        return true
    }

    /// Silences a notification now and delivers its last firing again at `now + duration`.
    public mutating func snooze(_ key: String, for duration: TimeSpan, now: Instant,
                                into out: inout [MachineAction]) throws(CenterError) -> Instant {
        guard var e = entry(key), !e.cancelled else {
            throw CenterError(.notFound, "no notification with key '\(Echo.capped(key))'", field: "key")
        }
        guard !e.last.isNone else {
            throw CenterError(.invalidArguments, "notification '\(key)' has not fired yet; there is nothing to snooze", argument: "key")
        }
        guard duration.microseconds > 0 else {
            throw CenterError(.invalidArguments, "snooze duration must be positive", argument: "duration")
        }
        guard let until = TimeLimit.adding(duration, to: now) else {
            throw CenterError(.invalidArguments, TimeLimit.pastLatest(field: "duration", value: "\(duration)"), field: "duration")
        }
        out.append(.persist(.alert(key: key, .snoozed(until: until))))
        e.alert = .snoozed(until: until)
        put(e)
        out.append(.withdraw(key: key, backends: targets(e), reason: .snoozed))
        out.append(.emit(.snoozed(key: key, until: until)))
        return until
    }

    /// Replaces every config-defined notification (cancel-before-schedule). Unchanged definitions
    /// (same `fingerprint`) keep their state and do not re-fire; runtime ones are untouched.
    public mutating func applyConfig(_ list: [(notification: Notification, fingerprint: String)], now: Instant,
                                     into out: inout [MachineAction]) -> ReloadReport {
        var report = ReloadReport()
        let wanted = Set(list.map(\.notification.key))
        var removed: [String] = []
        for (i, e) in slots.enumerated() where live[i] {
            if e.isConfig && !wanted.contains(e.key) { removed.append(e.key) }
        }
        removed.sort()
        report.removed = removed
        for key in removed {
            guard let e = entry(key) else { continue }
            out.append(.persist(.delete(key: key, keepUserInfo: false)))
            remove(key)
            setFingerprint(key, nil)
            dropClaim(key, now: now, into: &out)
            dropHeld(key, into: &out)
            if e.isActive {
                out.append(.withdraw(key: key, backends: targets(e), reason: .cancelled))
                out.append(.emit(.cancelled(key: key)))
            }
        }
        for (n, fingerprint) in list {
            let old = entry(n.key)
            if let old, old.isConfig, fingerprints[n.key] == fingerprint {
                report.unchanged.append(n.key)
                continue
            }
            if let old {
                report.changed.append(n.key)
                if old.isActive { out.append(.withdraw(key: n.key, backends: targets(old), reason: .replaced)) }
            } else {
                report.added.append(n.key)
            }
            var e = makeEntry(n)
            let next = try? n.trigger.firstFiring(after: now).get()
            if next == nil { report.skipped.append(n.key) }
            e.next = PackedOccurrence(next)
            out.append(.persist(.upsert(StoredNotification(notification: n, base: now))))
            dropClaim(n.key, now: now, into: &out)
            dropHeld(n.key, into: &out)
            put(e)
            setFingerprint(n.key, fingerprint)
        }
        return report
    }

    /// Puts a stored row back, as at start-up: the next occurrence is recomputed from the last one,
    /// or for a trigger that never fired, from when it was scheduled (`now` when the row does not
    /// say, so the notification is kept rather than lost).
    public mutating func restore(_ row: RestoredRow, now: Instant) {
        var e = makeEntry(key: row.key, trigger: row.trigger, maxLate: row.maxLate, backends: row.backends,
                          missed: row.missed, isConfig: row.isConfig, wake: row.wake)
        e.last = PackedOccurrence(row.last)
        e.alert = row.alert
        e.cancelled = row.cancelled
        if !row.cancelled {
            // The occurrences after `base`, as when it was scheduled: those it skipped then (an
            // `at` already past, earlier reminders, a series started long ago) stay skipped.
            let origin: Instant
            switch row.trigger {
            case .calendar: origin = row.base ?? now
            default: origin = row.base ?? Instant(microseconds: Int64.min / 2)  // stored before the base was: the first one counts
            }
            e.next = PackedOccurrence(row.last.map { successor(of: $0, in: row.trigger) }
                                      ?? row.trigger.next(after: origin, previous: nil))
        }
        put(e)
        if row.isConfig { setFingerprint(row.key, row.fingerprint) }
        if let p = row.pending { setInDelivery(row.key, p) }
    }

    /// A chunk of start-up's rows in one call: the center's machine is an actor's property, and
    /// each access to it is checked at run time, once per call rather than once per row.
    public mutating func restore(contentsOf rows: [RestoredRow], now: Instant) {
        for i in rows.indices { restore(rows[i], now: now) }
    }

    /// A runtime notification with nothing left to fire, ring or deliver is forgotten (its
    /// user_info kept by the store for late popup clicks).
    mutating func cleanUpIfDone(_ key: String, into out: inout [MachineAction]) {
        guard let e = entry(key), !e.isConfig, !e.isActive, inDelivery[key] == nil else { return }
        out.append(.persist(.delete(key: key, keepUserInfo: true)))
        remove(key)
    }
}
