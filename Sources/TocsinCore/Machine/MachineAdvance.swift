import TocsinModel
public import TocsinTime
import TocsinSystem

/// Time passing, and deliveries finishing: the transitions the clock and the backends drive.
extension NotificationMachine {
    /// Claims everything due at `now`, in due order: firings, ends of snoozes, alarm rings and
    /// alarms left unanswered. Repeating triggers continue after `now` once caught up, lazily.
    public mutating func advance(to now: Instant, into out: inout [MachineAction]) {
        while true {
            let due = popDue(now)
            if due.isEmpty { return }
            for key in due { advance(key, now: now, into: &out) }
        }
    }

    /// Claims, ahead of their instants, up to `limit` plain firings due by `horizon`, each as
    /// if the clock read its instant: the claim (and its successor) is made durable before the
    /// firing is due, so that only the emit happens at the instant (`TocsinCenter` holds the
    /// deliveries until then). Returns how many it claimed.
    public mutating func claimAhead(until horizon: Instant, limit: Int, into out: inout [MachineAction]) -> Int {
        guard limit > 0 else { return 0 }
        let due = popClaimableAhead(until: horizon, limit: limit)
        for (key, instant) in due { advance(key, now: instant, into: &out) }
        return due.count
    }

    private mutating func advance(_ key: String, now: Instant, into out: inout [MachineAction]) {
        guard var e = entry(key) else { return }
        var claimed: [PlannedDelivery] = []
        let ring = ringPolicy(e)
        if case .snoozed(let until) = e.alert, until <= now {
            e.alert = .idle
            if let occ = occurrence(e.last, of: e) {
                claimed.append(planned(e, occ, due: until, now: now, reason: .snoozeEnded, alarm: ring != nil))
            }
        }
        if case .ringing(let since, let rings) = e.alert, let ring, let occ = occurrence(e.last, of: e) {
            let every = ring.every.microseconds
            let nextRing = since + TimeSpan(microseconds: every &* Int64(rings))
            // A newer occurrence due now supersedes the ring of the old one: it starts ringing
            // afresh below (after downtime both fell due, and the stale ring played and was cut
            // at once).
            let superseded = occurrence(e.next, of: e).map { $0.instant <= now } ?? false
            if nextRing <= now, !superseded {
                // `max_rings` counts rings that played: time asleep or down uses none (counted
                // from the first ring by the clock, a 15 s suspend left an alarm that had rung
                // once unanswered at resume, silent). A late ring plays now and the cadence
                // starts again from it, unless it is later than the notification's `max_late`.
                let late = now - nextRing
                let maxLate: TimeSpan? = e.maxLate == .min ? nil : TimeSpan(microseconds: e.maxLate)
                let tooLate = late > Self.lateTolerance && maxLate.map { late > $0 } ?? false
                if rings >= ring.maxRings || tooLate {
                    e.alert = .unanswered(rings: rings)
                    out.append(.emit(.unanswered(key: key, rings: rings)))
                    out.append(.withdraw(key: key, backends: targets(e), reason: .unanswered))
                } else {
                    let base = late > Self.lateTolerance ? now - TimeSpan(microseconds: every &* Int64(rings)) : since
                    e.alert = .ringing(since: base, rings: rings + 1)
                    var d = PlannedDelivery(key: key, occurrence: occ, due: nextRing, fired: now, reason: .ring,
                                            targets: ringers(e), isAlarm: true)
                    d.ring = rings + 1
                    out.append(.deliver(d))
                }
            }
        }
        if let occ = occurrence(e.next, of: e), occ.instant <= now {
            let lastBefore = e.last
            handleDue(&e, occ, now: now, alarm: ring != nil, claimed: &claimed, into: &out)
            // A newer occurrence supersedes a snoozed one, as an alarm's new firing ends its
            // snooze below: left snoozed, its end delivered the newest occurrence a second time
            // (or, had the newer ones been skipped as missed, one the policy had skipped).
            if e.last != lastBefore, ring == nil, case .snoozed = e.alert { e.alert = .idle }
        }
        if !claimed.isEmpty, ring != nil {
            // A new firing (or the end of a snooze) starts ringing afresh.
            e.alert = .ringing(since: now, rings: 1)
        }
        put(e)
        let to = targets(e)
        for d in claimed {
            if !to.isEmpty { setInDelivery(key, PendingDelivery(occurrence: d.occurrence, due: d.due, remaining: to)) }
            out.append(.deliver(d))
        }
        out.append(.persist(.progress(key: key, last: occurrence(e.last, of: e), alert: e.alert, pending: inDelivery[key])))
        cleanUpIfDone(key, into: &out)
    }

    private func planned(_ e: Entry, _ occ: Occurrence, due: Instant, now: Instant, reason: FiringReason,
                         alarm: Bool) -> PlannedDelivery {
        PlannedDelivery(key: e.key, occurrence: occ, due: due, fired: now, reason: reason, targets: targets(e), isAlarm: alarm)
    }

    private func handleDue(_ e: inout Entry, _ occ: Occurrence, now: Instant, alarm: Bool,
                           claimed: inout [PlannedDelivery], into out: inout [MachineAction]) {
        let trigger = triggers.expand(e.trigger)
        if now - occ.instant <= Self.lateTolerance {
            claimed.append(planned(e, occ, due: occ.instant, now: now, reason: .scheduled, alarm: alarm))
            e.last = PackedOccurrence(occ)
            e.next = PackedOccurrence(successor(of: occ, in: trigger))
            return
        }
        // Missed: collect what fell due meanwhile, lazily and bounded.
        var missed = [occ]
        var cursor = occ
        var overflow = false
        var following = successor(of: cursor, in: trigger)
        while let n = following, n.instant <= now {
            if missed.count >= Self.catchUpLimit { overflow = true; break }
            missed.append(n)
            cursor = n
            following = successor(of: cursor, in: trigger)
        }
        if overflow {
            // Skip the rest in one step: continue from now.
            following = coalesced(trigger.next(after: now, previous: cursor), after: cursor, in: trigger)
        }
        let maxLate: TimeSpan? = e.maxLate == .min ? nil : TimeSpan(microseconds: e.maxLate)
        let eligible = missed.filter { maxLate == nil || now - $0.instant <= maxLate! }
        let deliver: ArraySlice<Occurrence>
        switch e.missed {
        case .skip: deliver = []
        case .fireOnce: deliver = eligible.suffix(1)
        case .fireAll: deliver = eligible.suffix(Self.fireAllLimit)
        }
        let delivered = Set(deliver.map(\.instant))
        if let firstSkipped = missed.first(where: { !delivered.contains($0.instant) }) {
            out.append(.emit(.missed(key: e.key, due: firstSkipped.instant, count: missed.count - deliver.count)))
        }
        for o in deliver {
            claimed.append(planned(e, o, due: o.instant, now: now, reason: .late, alarm: alarm))
        }
        e.last = PackedOccurrence(cursor)
        e.next = PackedOccurrence(following)
    }

    /// The occurrence after `occ`, coalesced under `minPeriod`: the first line refuses triggers
    /// that repeat faster than the floor, this is the second, for what still would (a DST change
    /// bringing two calendar elapses together, a row stored under a lower floor). Everything due
    /// within `minPeriod` after `occ` becomes one firing at the end of that window (or exactly at
    /// the occurrence that falls there), as systemd's AccuracySec merges timers; a trigger whose
    /// last occurrence lies in the window still fires it, late by less than `minPeriod`.
    func successor(of occ: Occurrence, in trigger: Trigger) -> Occurrence? {
        coalesced(trigger.next(after: occ.instant, previous: occ), after: occ, in: trigger)
    }

    func coalesced(_ next: Occurrence?, after occ: Occurrence, in trigger: Trigger) -> Occurrence? {
        guard let next, minPeriod > .zero else { return next }
        let windowEnd = occ.instant + minPeriod
        guard next.instant < windowEnd else { return next }
        if let atEnd = trigger.next(after: windowEnd - TimeSpan(microseconds: 1), previous: next), atEnd.instant == windowEnd {
            return atEnd
        }
        var delayed = next
        delayed.instant = windowEnd
        return delayed
    }

    /// One backend finished (or gave up on) a claimed firing: once all have, the claim is done.
    public mutating func deliveryFinished(key: String, occurrence: Occurrence, backend: String,
                                          into out: inout [MachineAction]) {
        guard var p = inDelivery[key], p.occurrence == occurrence else {
            if staleClaims.remove(key) != nil { resyncClaim(key, into: &out) }
            return
        }
        staleClaims.remove(key)
        p.remaining.removeAll { $0 == backend }
        setInDelivery(key, p.remaining.isEmpty ? nil : p)
        out.append(.persist(.pending(key: key, inDelivery[key])))
        cleanUpIfDone(key, into: &out)
    }

    /// Writes `key`'s claim as this machine has it, or deletes its row when the machine no longer
    /// has the key (a one-shot done in memory whose deletion was not recorded).
    mutating func resyncClaim(_ key: String, into out: inout [MachineAction]) {
        if entry(key) != nil { out.append(.persist(.pending(key: key, inDelivery[key]))) } else {
            out.append(.persist(.delete(key: key, keepUserInfo: true)))
        }
    }

    /// Settles what a crash left claimed but unconfirmed, at start-up, before anything fires.
    ///
    /// Deliveries are at most once. A claim is durable before its delivery starts, and its end is
    /// recorded in a later transaction, so a claim still open after a crash may or may not have
    /// reached its backends (a burst's log lines were written, its confirmations not yet
    /// committed). Delivering it again would repeat what a user may already have seen; it is
    /// closed instead and reported: an `interrupted` event (a signal and a history entry) names the
    /// backends that never confirmed it. An alarm's ringing state is separate and survives, so an
    /// alarm rings again at its next ring.
    ///
    /// A backend for which quiet hours hold the firing still gets it when quiet ends, so it is
    /// not reported. (A hold and its confirmation now commit together; a state file written
    /// before that may still hold a firing whose confirmation was never recorded.)
    ///
    /// A claim made ahead of its instant (`claimAhead`) whose instant is still to come was never
    /// handed to a backend (nothing is delivered before its instant): it stays open and is
    /// delivered at its instant, once.
    ///
    /// Only a claim due within `lead` can have been made ahead: one due later was made before the
    /// wall clock was set back, and may have gone out already.
    public mutating func closeInterrupted(now: Instant, lead: TimeSpan = .zero, into out: inout [MachineAction]) {
        let held = heldForQuiet()
        for key in inDelivery.keys.sorted() {
            guard let p = inDelivery[key] else { continue }
            if p.due > now, p.due - now <= lead, let e = entry(key), ringPolicy(e) == nil {
                var d = PlannedDelivery(key: key, occurrence: p.occurrence, due: p.due, fired: p.due,
                                        reason: .scheduled, targets: p.remaining, isAlarm: false)
                d.recorded = true
                out.append(.deliver(d))
                continue
            }
            setInDelivery(key, nil)
            out.append(.persist(.pending(key: key, nil)))
            let doubtful = p.remaining.filter { !held.contains(Self.heldKey(key, p.occurrence.number, $0)) }
            if !doubtful.isEmpty {
                out.append(.emit(.interrupted(key: key, due: p.due, occurrence: p.occurrence.number, backends: doubtful)))
            }
            cleanUpIfDone(key, into: &out)
        }
    }
}
