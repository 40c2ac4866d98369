import HeapModule
import TocsinModel
public import TocsinTime
import TocsinSystem

/// The notification machine: every transition of every notification, as a pure function of
/// its inputs and the instant it is given. It reads no clock, does no I/O and keeps no content
/// (titles, bodies, actions and user_info live in the store): per notification it holds the key,
/// a compact trigger, the next and last occurrence and the alert state, about 100 bytes.
///
/// Inputs are the mutating methods (schedule, post, cancel, acknowledge, snooze, config, advance,
/// deliveryFinished); each appends `MachineAction`s. While `recording`, every change keeps its
/// pre-image, so a batch whose commit failed is rolled back exactly (`rollback()`).
public struct NotificationMachine: Sendable {
    /// A firing handled later than this after its due time counts as missed and follows the missed policy.
    public static let lateTolerance = TimeSpan.seconds(2)
    /// At most this many missed occurrences are examined one by one after downtime; the rest are
    /// skipped in one step, so a week-long suspend of a per-second trigger costs nothing.
    public static let catchUpLimit = 1000
    /// `fire-all` delivers at most this many late firings per notification per catch-up.
    public static let fireAllLimit = 100

    struct Entry: Sendable {
        var key: String
        var trigger: CompactTrigger
        var next = PackedOccurrence.none
        var last = PackedOccurrence.none
        var alert: AlertState = .idle
        /// `Int64.min`: none.
        var maxLate: Int64 = .min
        /// Row in `routing`; -1: the default targets.
        var route: Int32 = -1
        var missed = DaemonKeys.missed.defaultValue
        var isConfig = false
        /// `wake = true`: its deadlines also go into `wakeQueue`, for the wake-alarm timer.
        var wake = false
        var cancelled = false
        var generation: UInt32 = 0
        /// Row in `owners` of the client that scheduled it (per-client quota); -1: none.
        var owner: Int32 = -1

        var isActive: Bool {
            guard !cancelled else { return false }
            if !next.isNone { return true }
            if case .idle = alert { return false }
            return true
        }
    }

    private struct QueueItem: Comparable {
        var instant: Int64
        var slot: Int32
        var generation: UInt32
        static func < (a: QueueItem, b: QueueItem) -> Bool {
            a.instant != b.instant ? a.instant < b.instant : a.slot < b.slot
        }
    }

    enum Undo: Sendable {
        case entry(String, Entry?)
        case fingerprint(String, String?)
        case inDelivery(String, PendingDelivery?)
        case backends([BackendInfo])
    }

    var slots: ContiguousArray<Entry> = []
    var live: [Bool] = []
    private var freeSlots: [Int32] = []
    private var index: [String: Int32] = [:]
    private var queue = Heap<QueueItem>()
    /// The same deadlines for the entries that ask to wake the machine, kept as `queue` is (stale
    /// items dropped lazily), so the wake alarm's instant costs what the next timer's does.
    private var wakeQueue = Heap<QueueItem>()
    /// Between `beginRestore` and `endRestore`: no queue upkeep per entry.
    private var restoring = false
    private var generation: UInt32 = 0
    var triggers = TriggerTable()
    private var routing = RouteTable()
    public private(set) var backends: [BackendInfo] = []
    /// `[daemon] min_period`: consecutive firings of one notification are at least this far apart
    /// (see `successor`). Zero: no coalescing.
    public var minPeriod: TimeSpan = .zero
    /// Definitions of config entries as written, so an unchanged one keeps its state on reload.
    private(set) var fingerprints: [String: String] = [:]
    /// Claimed firings not yet confirmed by every backend.
    public private(set) var inDelivery: [String: PendingDelivery] = [:]
    /// Notifications with something left to do, kept as a counter so the quota check is O(1).
    public private(set) var activeCount = 0
    private var undoLog: [Undo]?
    /// Clients (D-Bus unique names) with active notifications, and how many each has.
    private var owners: [String] = []
    var ownerRows: [String: Int32] = [:]
    private var ownerActive: [Int] = []
    private var freeOwners: [Int32] = []

    public init() {}

    public var count: Int { index.count }

    // MARK: Storage

    func entry(_ key: String) -> Entry? { index[key].map { slots[Int($0)] } }

    mutating func put(_ e: Entry) {
        var e = e
        generation &+= 1
        e.generation = generation
        // One hash of the key, not a lookup and then an insertion: a million restored rows are a
        // million probes into a table far larger than the cache.
        let free = freeSlots.last ?? Int32(slots.count)
        let found = Self.claim(&index[e.key, default: -1], free)
        let slot: Int32
        if found >= 0 {
            slot = found
            let old = slots[Int(found)]
            undoLog?.append(.entry(e.key, old))
            if old.isActive { deactivated(old) }
            slots[Int(found)] = e
        } else {
            undoLog?.append(.entry(e.key, nil))
            slot = free
            if freeSlots.popLast() != nil {
                slots[Int(free)] = e
                live[Int(free)] = true
            } else {
                slots.append(e)
                live.append(true)
            }
        }
        if e.isActive {
            activeCount += 1
            if e.owner >= 0 { ownerActive[Int(e.owner)] += 1 }
        }
        guard !restoring else { return }
        if let t = wakeAt(e) {
            queue.insert(QueueItem(instant: t, slot: slot, generation: e.generation))
            if e.wake { wakeQueue.insert(QueueItem(instant: t, slot: slot, generation: e.generation)) }
        }
        compactQueueIfNeeded()
    }

    /// The slot `value` holds, or -1 after storing `free` in it when it held none.
    private static func claim(_ value: inout Int32, _ free: Int32) -> Int32 {
        if value >= 0 { return value }
        value = free
        return -1
    }

    /// Start-up: the tables sized once for `count` more notifications, and the deadline queue
    /// built in one O(n) pass at `endRestore` instead of one heap insertion per row.
    public mutating func beginRestore(expecting count: Int) {
        restoring = true
        index.reserveCapacity(index.count + count)
        slots.reserveCapacity(slots.count + count)
        live.reserveCapacity(live.count + count)
    }

    public mutating func endRestore() {
        restoring = false
        rebuildQueue()
    }

    mutating func remove(_ key: String) {
        guard let s = index.removeValue(forKey: key) else { return }
        let old = slots[Int(s)]
        undoLog?.append(.entry(key, old))
        if old.isActive { deactivated(old) }
        slots[Int(s)] = Entry(key: "", trigger: CompactTrigger(kind: .at))
        live[Int(s)] = false
        freeSlots.append(s)
        compactQueueIfNeeded()
    }

    private mutating func deactivated(_ e: Entry) {
        activeCount -= 1
        guard e.owner >= 0 else { return }
        let row = Int(e.owner)
        ownerActive[row] -= 1
        if ownerActive[row] == 0 {
            // A client with nothing pending is forgotten, so clients that come and go do not accumulate.
            ownerRows[owners[row]] = nil
            owners[row] = ""
            freeOwners.append(e.owner)
        }
    }

    /// The row of a client, created when it schedules its first notification.
    mutating func ownerRow(_ name: String) -> Int32 {
        if let r = ownerRows[name] { return r }
        let r: Int32
        if let f = freeOwners.popLast() { r = f; owners[Int(r)] = name; ownerActive[Int(r)] = 0 } else {
            r = Int32(owners.count)
            owners.append(name)
            ownerActive.append(0)
        }
        ownerRows[name] = r
        return r
    }

    /// How many active notifications `client` scheduled.
    public func pending(of client: String) -> Int { ownerRows[client].map { ownerActive[Int($0)] } ?? 0 }

    public var clientCount: Int { ownerRows.count }

    mutating func setFingerprint(_ key: String, _ f: String?) {
        undoLog?.append(.fingerprint(key, fingerprints[key]))
        fingerprints[key] = f
    }

    mutating func setInDelivery(_ key: String, _ p: PendingDelivery?) {
        let old = p == nil ? inDelivery.removeValue(forKey: key) : inDelivery.updateValue(p!, forKey: key)
        undoLog?.append(.inDelivery(key, old))
    }

    // MARK: Undo

    /// Starts keeping pre-images of every change, for `rollback`.
    public mutating func beginRecording() { undoLog = [] }

    /// The batch is durable: forget the pre-images.
    public mutating func endRecording() { undoLog = nil }

    /// Applies `body` outside the batch being recorded: facts that arrive while a batch's requests
    /// are still uncommitted (a delivery confirmed mid-burst) must survive that batch's rollback.
    public mutating func unrecorded(_ body: (inout NotificationMachine) -> Void) {
        let saved = undoLog
        undoLog = nil
        body(&self)
        undoLog = saved
    }

    /// Undoes every change since `beginRecording`, newest first.
    public mutating func rollback() {
        guard let log = undoLog else { return }
        undoLog = nil
        for u in log.reversed() {
            switch u {
            case .entry(let key, let e):
                if let e { put(e) } else { remove(key) }
            case .fingerprint(let key, let f): fingerprints[key] = f
            case .inDelivery(let key, let p): inDelivery[key] = p
            case .backends(let b):
                backends = b
                routing.refresh(backends: b)
            }
        }
    }

    // MARK: Backends and routes

    public mutating func setBackends(_ list: [BackendInfo]) {
        undoLog?.append(.backends(backends))
        backends = list
        routing.refresh(backends: list)
    }

    public var backendNames: [String] { backends.map(\.name) }

    /// A notification without `backends` goes to every backend except alarms: ringing is opt-in,
    /// so adding an alarm to a config never makes ordinary reminders ring.
    public var defaultTargets: [String] { routing.defaultRoute.targets }

    mutating func route(for names: [String]?) -> Int32 { routing.row(for: names, backends: backends) }

    func resolved(_ e: Entry) -> RouteTable.ResolvedRoute { routing.resolved(e.route) }

    func targets(_ e: Entry) -> [String] { resolved(e).targets }

    func explicitBackends(_ e: Entry) -> [String]? { routing.names(e.route) }

    func ringPolicy(_ e: Entry) -> RingPolicy? { resolved(e).ring }

    func ringers(_ e: Entry) -> [String] { resolved(e).ringers }

    // MARK: Reading

    func occurrence(_ p: PackedOccurrence, of e: Entry) -> Occurrence? {
        guard !p.isNone else { return nil }
        return Occurrence(instant: Instant(microseconds: p.instant), number: p.number,
                          offset: triggers.offset(e.trigger, number: p.number))
    }

    /// The earliest instant at which the machine has work for this entry.
    func wakeAt(_ e: Entry) -> Int64? {
        guard !e.cancelled else { return nil }
        var t: Int64? = e.next.isNone ? nil : e.next.instant
        if case .snoozed(let until) = e.alert { t = min(t ?? .max, until.microseconds) }
        if case .ringing(let since, let rings) = e.alert, let ring = ringPolicy(e) {
            let next = since.microseconds &+ ring.every.microseconds &* Int64(rings)
            t = min(t ?? .max, next)
        }
        return t
    }

    public func isActive(_ key: String) -> Bool { entry(key)?.isActive ?? false }

    /// What `List` shows of one notification, without its content.
    public struct Summary: Hashable, Sendable {
        public var key: String
        public var nextFire: Instant?
        public var state: AlertState
        /// The latest occurrence that fell due, for `tocsin list`'s LAST column.
        public var lastFire: Instant? = nil
    }

    public func summary(_ key: String) -> Summary? {
        guard let e = entry(key), e.isActive else { return nil }
        return Summary(key: key, nextFire: wakeAt(e).map { Instant(microseconds: $0) }, state: e.alert, lastFire: e.last.isNone ? nil : Instant(microseconds: e.last.instant))
    }

    /// Active notifications, soonest first (ringing ones, which have no next instant, first of all).
    public func activeSummaries() -> [Summary] {
        var out: [Summary] = []
        out.reserveCapacity(activeCount)
        for (i, e) in slots.enumerated() where live[i] && e.isActive {
            out.append(Summary(key: e.key, nextFire: wakeAt(e).map { Instant(microseconds: $0) }, state: e.alert, lastFire: e.last.isNone ? nil : Instant(microseconds: e.last.instant)))
        }
        out.sort { a, b in
            switch (a.nextFire, b.nextFire) {
            case (nil, nil): return a.key < b.key
            case (nil, _): return true
            case (_, nil): return false
            case (let x?, let y?): return x != y ? x < y : a.key < b.key
            }
        }
        return out
    }

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

    private func isCurrent(_ item: QueueItem) -> Bool {
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
    private mutating func compactQueueIfNeeded() {
        guard queue.count > 2 * index.count + 1024 || wakeQueue.count > 2 * index.count + 1024 else { return }
        rebuildQueue()
    }

    private mutating func rebuildQueue() {
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
