import HeapModule
public import TocsinTime

/// The deadline queues: when the loop must wake, what is due, what may be claimed ahead. Kept
/// beside the entries (`NotificationMachine.put` inserts, stale items are dropped lazily).
extension NotificationMachine {
    /// The instant the loop must wake at, nil when nothing is scheduled.
    public mutating func nextDeadline() -> Instant? {
        while let top = queue.min {
            if isCurrent(top) { return Instant(microseconds: top.instant) }
            _ = queue.popMin()
        }
        return nil
    }

    /// The soonest deadline and whose it is, for `Status`, without sorting every notification.
    public mutating func nextDue() -> (key: String, instant: Instant)? {
        guard let at = nextDeadline(), let top = queue.min else { return nil }
        return (slots[Int(top.slot)].key, at)
    }

    func isCurrent(_ item: QueueItem) -> Bool {
        live[Int(item.slot)] && slots[Int(item.slot)].generation == item.generation
    }

    /// The earliest deadline of a notification with `wake = true`, and its key: the instant the
    /// wake-alarm timer is armed for. It moves with the schedule as `nextDeadline` does.
    public mutating func nextWake() -> (key: String, instant: Instant)? {
        while let top = wakeQueue.min {
            if isCurrent(top) { return (slots[Int(top.slot)].key, Instant(microseconds: top.instant)) }
            _ = wakeQueue.popMin()
        }
        return nil
    }

    /// Pops every current queue item due at `now`, as keys in (instant, key) order.
    mutating func popDue(_ now: Instant) -> [String] {
        var due: [(Int64, String)] = []
        while let top = queue.min, top.instant <= now.microseconds {
            _ = queue.popMin()
            if isCurrent(top) { due.append((top.instant, slots[Int(top.slot)].key)) }
        }
        due.sort { $0.0 != $1.0 ? $0.0 < $1.0 : $0.1 < $1.1 }
        return due.map(\.1)
    }

    /// Whether this entry's next firing may be claimed before its instant (`claimAhead`): a
    /// plain firing with backends to go to and nothing else due. Alarms are claimed at their
    /// instant: acknowledging one before its first ring must stop that ring, and a claim made
    /// ahead has already started ringing. One open claim per key, as for every firing.
    func claimableAhead(_ e: Entry) -> Bool {
        guard !e.cancelled, !e.next.isNone, inDelivery[e.key] == nil, ringPolicy(e) == nil else { return false }
        guard case .idle = e.alert else { return false }
        return !targets(e).isEmpty
    }

    /// When the loop must next wake: `lead` before the soonest deadline when that one can be
    /// claimed ahead, else at it. Uses the same test as `popClaimableAhead`, so a wake-up always
    /// has work and the loop never spins.
    public mutating func nextClaim(lead: TimeSpan) -> Instant? {
        guard let at = nextDeadline(), let top = queue.min else { return nil }
        return lead > .zero && claimableAhead(slots[Int(top.slot)]) ? at - lead : at
    }

    /// Pops up to `limit` entries that `claimableAhead` accepts with a deadline at or before
    /// `horizon`, soonest first, with their deadlines. Entries it passes over stay queued.
    mutating func popClaimableAhead(until horizon: Instant, limit: Int) -> [(key: String, instant: Instant)] {
        var out: [(key: String, instant: Instant)] = []
        var passed: [QueueItem] = []
        while out.count < limit, let top = queue.min, top.instant <= horizon.microseconds {
            _ = queue.popMin()
            guard isCurrent(top) else { continue }
            let e = slots[Int(top.slot)]
            if claimableAhead(e) { out.append((e.key, Instant(microseconds: top.instant))) } else { passed.append(top) }
        }
        for item in passed { queue.insert(item) }
        return out
    }

    /// Stale queue items (from replaced or removed entries) are dropped in one rebuild when they
    /// outnumber live ones, keeping memory proportional to what is scheduled.
    mutating func compactQueueIfNeeded() {
        guard queue.count > 2 * index.count + 1024 || wakeQueue.count > 2 * index.count + 1024 else { return }
        rebuildQueue()
    }

    mutating func rebuildQueue() {
        var items: [QueueItem] = []
        var wakes: [QueueItem] = []
        items.reserveCapacity(index.count)
        for (i, e) in slots.enumerated() where live[i] {
            if let t = wakeAt(e) {
                let item = QueueItem(instant: t, slot: Int32(i), generation: e.generation)
                items.append(item)
                if e.wake { wakes.append(item) }
            }
        }
        queue = Heap(items)
        wakeQueue = Heap(wakes)
    }
}
