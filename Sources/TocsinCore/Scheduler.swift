import HeapModule
import TocsinConfig
import TocsinTime

/// The scheduling state machine: which notification fires next, and what to do when the clock
/// reaches it. Pure: it reads no clock and performs no I/O; `advance(to:)` returns actions that the
/// center (the I/O shell) makes durable and then executes. Tested directly with chosen instants.
public struct Scheduler: Sendable {
    /// A firing handled later than this after its due time counts as missed and follows the missed policy.
    public static let lateTolerance = TimeSpan.seconds(2)
    /// At most this many missed occurrences are examined one by one after downtime; the rest are
    /// skipped in one step, so a week-long suspend of a per-second trigger costs nothing.
    public static let catchUpLimit = 1000
    /// `fire-all` delivers at most this many late firings per notification per catch-up.
    public static let fireAllLimit = 100

    public struct Entry: Hashable, Sendable {
        public var notification: Notification
        /// The last occurrence handled (delivered or missed).
        public var last: Occurrence?
        /// The next occurrence, nil when the trigger is exhausted.
        public var next: Occurrence?
        public var alert: AlertState = .idle
        /// A config-defined notification the user cancelled; kept to survive reloads.
        public var cancelled = false
        /// How it rings while `alert` is `.ringing`: derived from its backends, not persisted.
        public var ring: RingPolicy?
        fileprivate var generation: UInt64 = 0

        public init(notification: Notification, last: Occurrence? = nil, next: Occurrence?,
                    alert: AlertState = .idle, cancelled: Bool = false) {
            self.notification = notification; self.last = last; self.next = next
            self.alert = alert; self.cancelled = cancelled
        }

        /// Still something to wait for or react to.
        public var isActive: Bool {
            guard !cancelled else { return false }
            if next != nil { return true }
            if case .idle = alert { return false }
            return true
        }

        /// The earliest instant at which the scheduler has work for this entry.
        public var wakeAt: Instant? {
            guard !cancelled else { return nil }
            var t = next?.instant
            if case .snoozed(let until) = alert { t = t.map { min($0, until) } ?? until }
            if case .ringing(let since, let rings) = alert, let ring {
                let next = since + TimeSpan(microseconds: ring.every.microseconds &* Int64(rings))
                t = t.map { min($0, next) } ?? next
            }
            return t
        }
    }

    public enum Action: Hashable, Sendable {
        /// Deliver this firing (already claimed: its occurrence is now `last`).
        case deliver(Firing)
        /// `count` occurrences from `firstDue` on were not delivered (policy or max_late).
        case missed(key: String, firstDue: Instant, count: Int)
        /// The entry's progress changed and must be persisted before any delivery.
        case progress(key: String)
        /// Deliver another ring of an alarm to its ringing backends.
        case ring(Firing)
        /// An alarm reached its last ring without a reaction.
        case unanswered(key: String, rings: UInt32)
    }

    private struct QueueItem: Comparable {
        var instant: Instant
        var key: String
        var generation: UInt64
        static func < (a: QueueItem, b: QueueItem) -> Bool {
            a.instant != b.instant ? a.instant < b.instant : a.key < b.key
        }
    }

    public private(set) var entries: [String: Entry] = [:]
    private var queue = Heap<QueueItem>()
    private var generation: UInt64 = 0
    /// Entries with something left to do, kept as a counter so the quota check stays O(1).
    public private(set) var activeCount = 0

    public init() {}

    public var count: Int { entries.count }
    public subscript(key: String) -> Entry? { entries[key] }

    /// Adds or replaces an entry and (re)queues it. O(log n).
    public mutating func put(_ entry: Entry) {
        var e = entry
        generation &+= 1
        e.generation = generation
        if let old = entries.updateValue(e, forKey: e.notification.key), old.isActive { activeCount -= 1 }
        if e.isActive { activeCount += 1 }
        if let t = e.wakeAt { queue.insert(QueueItem(instant: t, key: e.notification.key, generation: e.generation)) }
        compactIfNeeded()
    }

    /// Removes an entry; its queue item becomes stale and is skipped when it surfaces. O(1) amortised.
    @discardableResult
    public mutating func remove(_ key: String) -> Entry? {
        let e = entries.removeValue(forKey: key)
        if let e, e.isActive { activeCount -= 1 }
        compactIfNeeded()
        return e
    }

    public mutating func update(_ key: String, _ body: (inout Entry) -> Void) {
        guard var e = entries[key] else { return }
        body(&e)
        put(e)
    }

    /// The instant the loop must wake at, nil when nothing is scheduled.
    public mutating func nextDeadline() -> Instant? {
        while let top = queue.min {
            if let e = entries[top.key], e.generation == top.generation { return top.instant }
            _ = queue.popMin()
        }
        return nil
    }

    /// Everything due at `now`, in due order. Repeating triggers continue after `now` once caught up.
    public mutating func advance(to now: Instant) -> [Action] {
        var actions: [Action] = []
        while let top = queue.min, top.instant <= now {
            _ = queue.popMin()
            guard var e = entries[top.key], e.generation == top.generation else { continue }
            if case .snoozed(let until) = e.alert, until <= now {
                e.alert = .idle
                if let occ = e.last {
                    actions.append(.deliver(Firing(notification: e.notification, occurrence: occ, due: until,
                                                   fired: now, reason: .snoozeEnded)))
                }
            }
            if case .ringing(let since, let rings) = e.alert, let ring = e.ring, let occ = e.last {
                let every = ring.every.microseconds
                if since + TimeSpan(microseconds: every &* Int64(rings)) <= now {
                    // The ring due now; after downtime that may be several rings on.
                    let due = UInt32(clamping: (now - since).microseconds / every + 1)
                    if due > ring.maxRings {
                        e.alert = .unanswered(rings: rings)
                        actions.append(.unanswered(key: top.key, rings: rings))
                    } else {
                        var f = Firing(notification: e.notification, occurrence: occ,
                                       due: since + TimeSpan(microseconds: every &* Int64(due - 1)), fired: now, reason: .ring)
                        f.ring = due
                        e.alert = .ringing(since: since, rings: due)
                        actions.append(.ring(f))
                    }
                }
            }
            if let occ = e.next, occ.instant <= now {
                handleDue(&e, occ, now: now, into: &actions)
            }
            actions.append(.progress(key: top.key))
            put(e)
        }
        return actions
    }

    private func handleDue(_ e: inout Entry, _ occ: Occurrence, now: Instant, into actions: inout [Action]) {
        let trigger = e.notification.trigger
        if now - occ.instant <= Scheduler.lateTolerance {
            actions.append(.deliver(Firing(notification: e.notification, occurrence: occ, due: occ.instant,
                                           fired: now, reason: .scheduled)))
            e.last = occ
            e.next = trigger.next(after: occ.instant, previous: occ)
            return
        }
        // Missed: collect what fell due meanwhile, lazily and bounded.
        var missed = [occ]
        var cursor = occ
        var overflow = false
        var following = trigger.next(after: cursor.instant, previous: cursor)
        while let n = following, n.instant <= now {
            if missed.count >= Scheduler.catchUpLimit { overflow = true; break }
            missed.append(n)
            cursor = n
            following = trigger.next(after: cursor.instant, previous: cursor)
        }
        if overflow {
            // Skip the rest in one step: continue from now.
            following = trigger.next(after: now, previous: cursor)
        }
        let maxLate = e.notification.maxLate
        let eligible = missed.filter { maxLate == nil || now - $0.instant <= maxLate! }
        let deliver: ArraySlice<Occurrence>
        switch e.notification.missed {
        case .skip: deliver = []
        case .fireOnce: deliver = eligible.suffix(1)
        case .fireAll: deliver = eligible.suffix(Scheduler.fireAllLimit)
        }
        let delivered = Set(deliver.map(\.instant))
        if let firstSkipped = missed.first(where: { !delivered.contains($0.instant) }) {
            let count = missed.count - deliver.count
            actions.append(.missed(key: e.notification.key, firstDue: firstSkipped.instant, count: count))
        }
        for o in deliver {
            actions.append(.deliver(Firing(notification: e.notification, occurrence: o, due: o.instant,
                                           fired: now, reason: .late)))
        }
        e.last = cursor
        e.next = following
    }

    /// Stale queue items (from replaced or removed entries) are dropped in one rebuild when they
    /// outnumber live ones, keeping memory proportional to what is scheduled.
    private mutating func compactIfNeeded() {
        guard queue.count > 2 * entries.count + 1024 else { return }
        var items: [QueueItem] = []
        items.reserveCapacity(entries.count)
        for (key, e) in entries {
            if let t = e.wakeAt { items.append(QueueItem(instant: t, key: key, generation: e.generation)) }
        }
        queue = Heap(items)
    }
}
