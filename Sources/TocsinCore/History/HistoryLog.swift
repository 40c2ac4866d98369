import TocsinTime
import TocsinSystem

/// Turns the machine's actions into the store operations of one transaction, with a history
/// entry beside each firing, acknowledgement, snooze, cancellation, missed and unanswered event.
///
/// The entries go into the same transaction as the change they describe (a firing's claim, a
/// cancellation's delete): recording costs no fsync of its own, and a crash keeps both or neither.
/// Pure, so what is recorded is tested as operations.
///
/// A firing claimed ahead of its instant is recorded with its claim, before it goes out; when a
/// request drops that claim before the instant, the entry is taken back in the request's
/// transaction (`MachineAction.unclaimed`). Recording it at the instant instead would cost a
/// commit there (the flush claiming ahead exists to avoid) and a crash between the emit and that
/// commit would lose the entry of a firing that went out, while start-up holding the claim again
/// (`closeInterrupted`) relies on its entry being there already (`PlannedDelivery.recorded`).
struct HistoryLog: Sendable {
    var retention: HistoryRetention
    /// Old entries removed per transaction beyond the number added: pruning is bounded work on
    /// the store thread, never a sweep of the whole table, and still keeps up with any rate.
    static let pruneBatch = 64

    /// The store operations of `actions`, in order, with history entries placed so the store can
    /// still read the notification's row for them (a cancellation's entry goes before its delete).
    func ops(_ actions: [MachineAction], now: Instant) -> [StoreOp] {
        var out: [StoreOp] = []
        out.reserveCapacity(actions.count)
        var records = 0
        let on = retention.maxEntries > 0
        for (i, a) in actions.enumerated() {
            switch a {
            case .persist(let op):
                out.append(op)
            case .deliver(let d):
                // An alarm's later rings are the same firing ringing again, not new firings.
                guard on, d.ring == 1, !d.recorded else { continue }
                let late = d.reason == .late
                out.append(.record(HistoryEvent(kind: .fired, time: d.fired, key: d.key, backends: d.targets, due: d.due,
                                                occurrence: d.occurrence.number, late: late)))
                records += 1
            case .withdraw, .deliverHeld:
                continue
            case .unclaimed(let key, let occurrence, let due):
                // Even with recording off: the entry may date from before it was turned off.
                out.append(.unrecordFired(key: key, occurrence: occurrence.number, due: due))
            case .emit(let event):
                guard on, var entry = Self.entry(event, now: now) else { continue }
                if entry.kind != .interrupted { entry.backends = Self.withdrawn(from: actions, around: i, key: entry.key) }
                if entry.kind == .cancelled, let at = out.lastIndex(where: { Self.deletes($0, entry.key) }) {
                    out.insert(.record(entry), at: at)
                } else {
                    out.append(.record(entry))
                }
                records += 1
            }
        }
        if records > 0 {
            out.append(.pruneHistory(olderThan: now - retention.maxAge, keep: retention.maxEntries, batch: records + Self.pruneBatch))
        }
        return out
    }

    static func entry(_ event: CenterEvent, now: Instant) -> HistoryEvent? {
        switch event {
        case .acknowledged(let key): return HistoryEvent(kind: .acknowledged, time: now, key: key)
        case .snoozed(let key, let until): return HistoryEvent(kind: .snoozed, time: now, key: key, until: until)
        case .cancelled(let key): return HistoryEvent(kind: .cancelled, time: now, key: key)
        case .missed(let key, let due, let count):
            return HistoryEvent(kind: .missed, time: now, key: key, due: due, count: UInt32(clamping: count))
        case .unanswered(let key, let rings): return HistoryEvent(kind: .unanswered, time: now, key: key, count: rings)
        case .interrupted(let key, let due, let occurrence, let backends):
            return HistoryEvent(kind: .interrupted, time: now, key: key, backends: backends, due: due, occurrence: occurrence)
        case .fired, .actionInvoked, .deliveryFailed, .quietChanged, .cancelledAll: return nil
        }
    }

    /// The backends a withdrawal for the same key, just before the event, names.
    private static func withdrawn(from actions: [MachineAction], around i: Int, key: String) -> [String]? {
        var j = i - 1
        while j >= 0 {
            if case .withdraw(let k, let names, _) = actions[j], k == key { return names }
            if actions[j].key != key { return nil }
            j -= 1
        }
        return nil
    }

    private static func deletes(_ op: StoreOp, _ key: String) -> Bool {
        if case .delete(let k, _) = op { return k == key }
        return false
    }
}
