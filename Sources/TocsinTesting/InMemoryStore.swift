import Synchronization
import TocsinConfig
public import TocsinCore
import TocsinTime

/// A `NotificationStore` in memory, for tests of what the center does with its store: commits
/// can be held (to see which requests share a batch) and made to fail (to see that a failed
/// commit changes nothing), with no SQLite file, tmpfs or root mount.
public final class InMemoryStore: NotificationStore {
    public struct State: Sendable {
        public var rows: [String: StoredNotification] = [:]
        public var recentUserInfo: [String: [String: String]] = [:]
        /// History entries, oldest first, with title and backends filled in as the SQLite store does.
        public var history: [HistoryEvent] = []
        /// Every commit attempted, in order, with its operations; failed ones included.
        public var commits: [[StoreOp]] = []
        public var failed: [Int] = []
        /// Commits (1-based, counted over the store's life) that will fail.
        public var failing: Set<Int> = []
        public var held = false
        /// The quiet-hours state as committed.
        public var quiet = QuietSnapshot()
        /// Quiet commits fail while true (a full disk).
        public var failQuiet = false
    }

    public let state = WaitableState(State())
    private let gate = Mutex<[CheckedContinuation<Void, Never>]>([])
    private let counter = Mutex(0)

    public init() {}

    /// Makes commit number `n` (1-based, over the store's life) fail with a disk-full error.
    public func failCommit(number n: Int) { state.update { $0.failing.insert(n) } }

    /// Commits started from now on wait until `release()`.
    public func hold() { state.update { $0.held = true } }

    public func release() {
        state.update { $0.held = false }
        let waiting = gate.withLock { g in let w = g; g = []; return w }
        for c in waiting { c.resume() }
    }

    public var rows: [String: StoredNotification] { state.value.rows }
    public var commits: [[StoreOp]] { state.value.commits }

    public func load(chunkSize: Int) -> AsyncStream<Result<LoadedState, StoreError>> {
        let rows = state.value.rows.values.sorted { $0.notification.key < $1.notification.key }.map(RestoredRow.init)
        return AsyncStream { c in
            for start in stride(from: 0, to: rows.count, by: max(1, chunkSize)) {
                var part = LoadedState()
                part.rows = Array(rows[start..<min(rows.count, start + max(1, chunkSize))])
                c.yield(.success(part))
            }
            c.finish()
        }
    }

    /// An empty batch is no transaction: it is neither counted nor held.
    public func commit(_ ops: [StoreOp], reading: [String]) async throws(StoreError) -> [String: Notification] {
        if ops.isEmpty { return try await notifications(reading) }
        let number = counter.withLock { n -> Int in n += 1; return n }
        state.update { $0.commits.append(ops) }
        if state.value.held {
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                let resumeNow = gate.withLock { g -> Bool in
                    if !self.state.value.held { return true }
                    g.append(c)
                    return false
                }
                if resumeNow { c.resume() }
            }
        }
        if state.value.failing.contains(number) {
            state.update { $0.failed.append(number) }
            throw StoreError(.full, "injected failure of commit \(number)")
        }
        state.update { s in for op in ops { Self.apply(op, to: &s) } }
        return try await notifications(reading)
    }

    public func commitQuiet(_ ops: [QuietStoreOp]) async throws(StoreError) {
        if state.value.failQuiet { throw StoreError(.full, "injected failure of a quiet commit") }
        state.update { s in
            for op in ops {
                switch op {
                case .override(let o): s.quiet.override = o
                case .active(let a): s.quiet.active = a
                case .hold(let h): s.quiet.held.removeAll { $0.id == h.id }; s.quiet.held.append(h)
                case .release(let ids): s.quiet.held.removeAll { ids.contains($0.id) }
                }
            }
        }
    }

    public func loadQuiet() async throws(StoreError) -> QuietSnapshot { state.value.quiet }

    public func notifications(_ keys: [String]) async throws(StoreError) -> [String: Notification] {
        let rows = state.value.rows
        var out: [String: Notification] = [:]
        for k in keys { if let r = rows[k] { out[k] = r.notification } }
        return out
    }

    public func keys(after key: String, limit: Int) async throws(StoreError) -> [String] {
        let after = Array(key.utf8)
        return state.value.rows.keys.filter { Array($0.utf8).lexicographicallyPrecedes(after) == false && Array($0.utf8) != after }
            .sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }.prefix(limit).map { $0 }
    }

    public func history(_ query: HistoryQuery) async throws(StoreError) -> [HistoryEvent] {
        let limit = min(max(query.limit, 0), HistoryQuery.maxLimit)
        return Array(state.value.history.reversed().filter { e in
            (query.key.map { $0 == e.key } ?? true) && (query.since.map { e.time >= $0 } ?? true)
        }.prefix(limit))
    }

    public func userInfo(_ key: String) async throws(StoreError) -> [String: String]? {
        let s = state.value
        return s.rows[key]?.notification.userInfo ?? s.recentUserInfo[key]
    }

    public func close() async {}

    private static func apply(_ op: StoreOp, to s: inout State) {
        switch op {
        case .upsert(let row): s.rows[row.notification.key] = row
        case .delete(let key, let keep):
            if keep, let info = s.rows[key]?.notification.userInfo, !info.isEmpty { s.recentUserInfo[key] = info }
            s.rows[key] = nil
        case .progress(let key, let last, let alert, let pending):
            s.rows[key]?.last = last
            s.rows[key]?.alert = alert
            s.rows[key]?.pending = pending
        case .alert(let key, let alert): s.rows[key]?.alert = alert
        case .pending(let key, let p): s.rows[key]?.pending = p
        case .markCancelled(let key):
            s.rows[key]?.cancelled = true
            s.rows[key]?.alert = .idle
            s.rows[key]?.pending = nil
        case .record(var entry):
            let row = s.rows[entry.key]?.notification
            entry.title = row?.title ?? ""
            entry.backends = entry.backends ?? row?.backends ?? []
            s.history.append(entry)
        case .pruneHistory(let before, let keep, let batch):
            var removed = 0
            s.history.removeAll { e in
                guard removed < batch, e.time < before else { return false }
                removed += 1
                return true
            }
            let excess = min(max(0, s.history.count - keep), batch)
            s.history.removeFirst(excess)
        }
    }
}
