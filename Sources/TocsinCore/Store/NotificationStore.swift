public import TocsinModel
public import TocsinTime
public import TocsinSystem

/// A delivery that was claimed (its occurrence recorded as fired) but not yet confirmed by every
/// backend. Persisted so a crash in between re-delivers instead of losing it.
public struct PendingDelivery: Hashable, Sendable {
    public var occurrence: Occurrence
    public var due: Instant
    public var remaining: [String]
    public init(occurrence: Occurrence, due: Instant, remaining: [String]) {
        self.occurrence = occurrence; self.due = due; self.remaining = remaining
    }
}

/// One notification's row as the store holds it.
public struct StoredNotification: Hashable, Sendable {
    public var notification: Notification
    public var last: Occurrence?
    public var alert: AlertState
    public var cancelled: Bool
    public var pending: PendingDelivery?
    /// When it was scheduled: the first firing is the first occurrence after it. A restart before
    /// the first firing needs it to find that occurrence again (and to treat it as missed if the
    /// daemon was down at the time), and not to fire what scheduling skipped as past: a config
    /// `at` already gone, reminders before it, a series' occurrences before it.
    public var base: Instant?
    public init(notification: Notification, last: Occurrence? = nil, alert: AlertState = .idle, cancelled: Bool = false,
                pending: PendingDelivery? = nil, base: Instant? = nil) {
        self.notification = notification; self.last = last; self.alert = alert
        self.cancelled = cancelled; self.pending = pending; self.base = base
    }
}

/// One change to the durable state. The machine emits these; the center commits a batch of them
/// in one transaction.
public enum StoreOp: Hashable, Sendable {
    /// Boxed, for the reason `TocsinCenter.Request`'s notifications are: an op is copied into
    /// actions, batches and history entries on its way to the store thread.
    indirect case upsert(StoredNotification)
    /// `keepUserInfo`: remember its user_info, so a popup clicked after the notification finished
    /// still hands it back with `ActionInvoked`.
    case delete(key: String, keepUserInfo: Bool)
    /// After a firing: what was handled last, the alert state and the claimed delivery, in one row update.
    case progress(key: String, last: Occurrence?, alert: AlertState, pending: PendingDelivery?)
    case alert(key: String, AlertState)
    case pending(key: String, PendingDelivery?)
    case markCancelled(key: String)
    /// Appends a history entry; the store fills in what the center leaves open (title, backends)
    /// from the notification's row as it is at this point of the transaction.
    case record(HistoryEvent)
    /// Removes the newest `fired` entry of `key`'s occurrence `occurrence` due at `due`: the one
    /// its claim recorded, taken back when the claim was dropped before its instant
    /// (`MachineAction.unclaimed`). One claim per key is open at a time, so the newest such entry
    /// is that claim's; an older firing of the same occurrence (a clock set back) stays.
    case unrecordFired(key: String, occurrence: UInt32, due: Instant)
    /// Removes at most `batch` history entries older than `olderThan` or beyond the newest `keep`.
    case pruneHistory(olderThan: Instant, keep: Int, batch: Int)
    /// Quiet hours (`Quiet/QuietStore.swift`), in the same transaction as the rest of the batch:
    /// a hold and the confirmation that the backend is done with the claim are durable together,
    /// and a failed batch leaves the switch, the state and the held firings as they were.
    /// The manual switch (nil: none).
    case quietSwitch(QuietOverride?)
    /// Whether it was quiet at the last evaluation.
    case quietActive(Bool)
    /// A firing a backend holds, with its content (it outlives its notification).
    case hold(HeldFiring)
    /// Held firings released or replaced, by id.
    case unhold([Int64])
}

/// One persisted notification as start-up needs it: what the machine keeps, none of the content.
///
/// Its own type rather than a `StoredNotification` with empty content: a million of those were
/// copied, moved and destroyed field by field on their way from the store's thread to the
/// machine, a quarter of the whole load.
public struct RestoredRow: Hashable, Sendable {
    public var key: String
    public var trigger: Trigger
    /// When it was scheduled (see `StoredNotification.base`).
    public var base: Instant?
    public var backends: [String]?
    public var missed: MissedPolicy
    public var maxLate: TimeSpan?
    public var isConfig: Bool
    /// Config-defined rows only: what a reload compares; empty for the others.
    public var fingerprint: String
    public var last: Occurrence?
    public var alert: AlertState
    public var cancelled: Bool
    public var pending: PendingDelivery?
    public var wake: Bool

    public init(key: String, trigger: Trigger, base: Instant?, backends: [String]?, missed: MissedPolicy, maxLate: TimeSpan?,
                isConfig: Bool, fingerprint: String, last: Occurrence?, alert: AlertState, cancelled: Bool, pending: PendingDelivery?,
                wake: Bool = false) {
        self.key = key; self.trigger = trigger; self.base = base; self.backends = backends; self.missed = missed
        self.maxLate = maxLate; self.isConfig = isConfig; self.fingerprint = fingerprint; self.last = last
        self.alert = alert; self.cancelled = cancelled; self.pending = pending; self.wake = wake
    }

    /// What start-up reads of a full row (stores that keep rows whole, and tests).
    public init(_ row: StoredNotification) {
        let n = row.notification
        self.init(key: n.key, trigger: n.trigger, base: row.base, backends: n.backends, missed: n.missed, maxLate: n.maxLate,
                  isConfig: n.source == .config, fingerprint: n.source == .config ? n.fingerprint : "", last: row.last,
                  alert: row.alert, cancelled: row.cancelled, pending: row.pending, wake: n.wake)
    }
}

/// What start-up needs to rebuild the schedule, one chunk of rows at a time.
public struct LoadedState: Sendable {
    public var rows: [RestoredRow] = []
    /// Rows that could not be turned back into notifications (a zone removed from the system, ...).
    public var problems: [String] = []
    /// On the first chunk: how many rows all chunks hold, so the caller can size its tables once.
    public var totalRows: Int?
    public init() {}
}

/// The durable state behind the center. `commit` applies a whole batch atomically: when it
/// throws, none of the batch is stored. Implementations serialise their calls (the SQLite one
/// runs them on its own thread, in order), so a read issued after a commit sees it.
public protocol NotificationStore: Sendable {
    /// Every row, content optional, in chunks of at most `chunkSize` rows, so the caller rebuilds
    /// its schedule from one chunk while the store reads the next. A failure ends the stream.
    func load(chunkSize: Int) -> AsyncStream<Result<LoadedState, StoreError>>
    /// Applies `ops` in one transaction; then returns the full rows of `reading` that exist.
    func commit(_ ops: [StoreOp], reading: [String]) async throws(StoreError) -> [String: Notification]
    /// Commits each batch in its own transaction, in order, and reports each as soon as it is
    /// durable (with the rows it reads), so the caller can deliver one batch of a burst while the
    /// next is being committed. The batches are queued before this returns: those of successive
    /// calls apply in the order of the calls, which is how the center keeps one batch's
    /// transactions in the order its machine made them.
    func commitEach(_ batches: [(ops: [StoreOp], reading: [String])]) -> AsyncStream<Result<[String: Notification], StoreError>>
    /// The full rows of `keys` that exist.
    func notifications(_ keys: [String]) async throws(StoreError) -> [String: Notification]
    /// Up to `limit` keys of stored rows after `key` (empty: from the first), in the order of
    /// their UTF-8 bytes: what `List` pages walk, so a page costs an index range, not a sort.
    func keys(after key: String, limit: Int) async throws(StoreError) -> [String]
    /// History entries matching `query`, newest first.
    func history(_ query: HistoryQuery) async throws(StoreError) -> [HistoryEvent]
    /// The user_info of a notification, pending or recently finished.
    func userInfo(_ key: String) async throws(StoreError) -> [String: String]?
    /// The quiet-hours state: the manual switch, whether it was quiet, the held firings.
    func loadQuiet() async throws(StoreError) -> QuietSnapshot
    func close() async
}

extension NotificationStore {
    /// Every row at once.
    public func load() async throws(StoreError) -> LoadedState {
        var all = LoadedState()
        for await chunk in load(chunkSize: 1 << 16) {
            switch chunk {
            case .success(let part):
                all.rows += part.rows
                all.problems += part.problems
            case .failure(let error): throw error
            }
        }
        return all
    }
}
