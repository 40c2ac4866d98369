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
/// deliveryFinished, and quiet hours' switch, settings, evaluation and holds: `MachineQuiet.swift`);
/// each appends `MachineAction`s. While `recording`, every change keeps its pre-image, so a batch
/// whose commit failed is rolled back exactly, quiet hours included (`rollback()`).
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

    struct QueueItem: Comparable {
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
        /// Quiet hours before an input changed them (`MachineQuiet.swift`).
        case quiet(QuietMachine)
    }

    var slots: ContiguousArray<Entry> = []
    var live: [Bool] = []
    private var freeSlots: [Int32] = []
    var index: [String: Int32] = [:]
    var queue = Heap<QueueItem>()
    /// The same deadlines for the entries that ask to wake the machine, kept as `queue` is (stale
    /// items dropped lazily), so the wake alarm's instant costs what the next timer's does.
    var wakeQueue = Heap<QueueItem>()
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
    /// Keys whose stored claim may be older than this machine's: a hold whose commit failed was
    /// that backend's end of the claim in memory only (`rescueHold`). Not rolled back: writing a
    /// key's claim as memory has it is always right.
    var staleClaims: Set<String> = []
    /// Notifications with something left to do, kept as a counter so the quota check is O(1).
    public private(set) var activeCount = 0
    var undoLog: [Undo]?
    /// Quiet hours: the switch, the windows, the held firings (`MachineQuiet.swift`). Their inputs
    /// are this machine's inputs, recorded for rollback like every other change.
    public internal(set) var quiet = QuietMachine()
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

    /// A batch's changes are applied but not yet durable: `rollback` may still undo them.
    public var isRecording: Bool { undoLog != nil }

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
            case .quiet(let q): quiet = q
            }
        }
    }

    // MARK: Backends and routes

    public mutating func setBackends(_ list: [BackendInfo]) {
        undoLog?.append(.backends(backends))
        backends = list
        routing.refresh(backends: list)
        changeQuiet { $0.refreshModes(backends: list) }
    }

    public var backendNames: [String] { backends.map(\.name) }

    /// After `setBackends`: an alarm ringing on backends that no longer ring (a reload removed its
    /// sound backend) stops ringing. It had nothing left to ring on and, left `ringing`, it stayed
    /// so for good: no ring, no `Unanswered`, nothing ended it but an acknowledge. Its popups stay.
    public mutating func endRingingWithoutRinger(into out: inout [MachineAction]) {
        var ended: [String] = []
        for (i, e) in slots.enumerated() where live[i] {
            if case .ringing = e.alert, ringPolicy(e) == nil { ended.append(e.key) }
        }
        for key in ended {
            guard var e = entry(key) else { continue }
            e.alert = .idle
            put(e)
            out.append(.persist(.progress(key: key, last: occurrence(e.last, of: e), alert: e.alert, pending: inDelivery[key])))
            cleanUpIfDone(key, into: &out)
        }
    }

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
}
