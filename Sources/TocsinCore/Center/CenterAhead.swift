import TocsinTime
import TocsinSystem

/// Firings claimed ahead of their instant (`NotificationMachine.claimAhead`), held until it.
///
/// A firing's claim must be durable before any backend sees it (deliveries are at most once
/// across a crash), and committing it at the due instant put a disk flush between the instant
/// and the `Fired` signal. The loop therefore wakes `claimAhead` early, commits the claims of
/// what falls due by then, and at the instant only emits. Nothing is handed to a backend
/// before its instant; a crash before it leaves a claim whose instant is still to come, which
/// start-up delivers at that instant (`closeInterrupted`).
///
/// A request that reaches the daemon after a firing's claim and before its instant is still
/// applied first when it drops the claim: cancelling, replacing or reloading the notification
/// releases nothing at the instant, and the history keeps no `fired` entry for it (`HistoryLog`).
/// One that reaches a batch begun at or after the instant comes after the firing, which that
/// batch releases first (`runBatch`), as the machine assumes (`NotificationMachine.cancel`).
/// Once durable, the claims are handed to their batch backends' `prepare`, so that the
/// dbus-signal backend's signals are built before the instant too.
///
/// At most `aheadLimit` firings wait at once: a burst of up to 1,024 due together is claimed and
/// prepared whole before its instant (claiming only two slices ahead left the rest of a burst of
/// 1,000 to be claimed and marshalled after it, at about twice the burst floor), and a crash
/// between the claim and the deliveries' confirmation leaves at most that many in doubt. A
/// larger burst claims the rest at the instant, through the burst window (`commitAndPerform`).
extension TocsinCenter {
    public static var aheadLimit: Int { 8 * sliceSize }

    /// The lead the next wake-up is armed with: none once `aheadLimit` firings wait, so the loop
    /// does not wake early for a claim it may not make.
    var claimLead: TimeSpan { staged.count < Self.aheadLimit ? options.claimAhead : .zero }

    /// Holds a batch's claims ahead, in one pass: staging a burst's thousand claims one at a time
    /// cost a scan of everything held for each, a million key comparisons on the loop during the
    /// lead. One open claim per key: a held firing of a key claimed again is dead, and of two
    /// claims of one key in `held` the later stands. `staged` stays ordered by instant, and among
    /// firings of one instant in the order they were claimed.
    func stage(_ held: [(delivery: PlannedDelivery, notification: Notification)]) {
        guard !held.isEmpty else { return }
        var latest: [String: Int] = [:]
        for (i, h) in held.enumerated() { latest[h.delivery.key] = i }
        var all = staged.filter { latest[$0.delivery.key] == nil }
        for (i, h) in held.enumerated() where latest[h.delivery.key] == i { all.append(h) }
        // Sorted by instant, then by position: the claims held before come first among equals.
        let order = all.indices.sorted { (all[$0].delivery.fired, $0) < (all[$1].delivery.fired, $1) }
        staged = order.map { all[$0] }
    }

    /// Forgets held firings whose claim a request dropped (cancel, replace, reload), once those
    /// requests are durable: a new claim of the same key and instant, made by a later batch,
    /// would otherwise make the old one look live again and both would go out.
    func pruneStaged() {
        staged.removeAll { machine.inDelivery[$0.delivery.key]?.occurrence != $0.delivery.occurrence }
    }

    /// Emits and dispatches what is due by `now`, if its claim still stands. One held across a
    /// suspend or a frozen process that began in its last milliseconds goes out late, and says so.
    func releaseStaged(now: Instant) {
        guard let first = staged.first, first.delivery.fired <= now else { return }
        let count = staged.firstIndex { $0.delivery.fired > now } ?? staged.endIndex
        let announce = announcesFirings
        var firings: [Firing] = []
        firings.reserveCapacity(count)
        // One whose claim a request dropped stays held while that request's batch is not durable
        // (`isRecording`): if its commit fails, the rollback puts the claim back, and it must
        // still go out. `pruneStaged` forgets it once the request is durable.
        var undecided: [(delivery: PlannedDelivery, notification: Notification)] = []
        for (held, n) in staged[..<count] {
            guard machine.inDelivery[held.key]?.occurrence == held.occurrence else {
                if machine.isRecording { undecided.append((held, n)) }
                continue
            }
            var d = held
            if now - d.fired > NotificationMachine.lateTolerance {
                d.reason = .late
                d.fired = now
            }
            let f = firing(d, n)
            if announce { emit(.fired(f, backends: d.targets)) }
            firings.append(f)
        }
        staged.replaceSubrange(..<count, with: undecided)
        if !firings.isEmpty { dispatch(firings) }
    }

    /// The requests' actions without an `unclaimed` whose firing went out already: the machine
    /// judges a claim by its instant (still to come: never sent), and only the center knows that
    /// shutdown sent it early (`releaseStagedEarly`) or that the clock was set back after it was
    /// sent. A claim not yet sent is held (`staged`) or in this batch's facts.
    /// One pass over the held firings and the facts, however many claims the requests drop (a
    /// CancelAll in the batch of a burst drops hundreds).
    func withoutSentClaims(_ actions: [MachineAction], facts: [MachineAction]) -> [MachineAction] {
        guard actions.contains(where: { if case .unclaimed = $0 { true } else { false } }) else { return actions }
        struct Claim: Hashable {
            var key: String
            var occurrence: Occurrence
        }
        var unsent = Set(staged.map { Claim(key: $0.delivery.key, occurrence: $0.delivery.occurrence) })
        for case .deliver(let d) in facts { unsent.insert(Claim(key: d.key, occurrence: d.occurrence)) }
        return actions.filter { a in
            guard case .unclaimed(let key, let occurrence, _) = a else { return true }
            return unsent.contains(Claim(key: key, occurrence: occurrence))
        }
    }

    /// Shutdown: what is claimed goes out now, at most `claimAhead` early, rather than be left to
    /// a start-up that may come after its instant and report it interrupted.
    func releaseStagedEarly() {
        guard let last = staged.last else { return }
        releaseStaged(now: last.delivery.fired)
    }
}
