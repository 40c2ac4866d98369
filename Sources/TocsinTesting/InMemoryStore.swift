import Synchronization
import TocsinConfig
public import TocsinCore
import TocsinTime
public import TocsinSystem

/// A `NotificationStore` in memory, for tests of what the center does with its store: commits
/// can be held (to see which requests share a batch) and made to fail (to see that a failed
/// commit changes nothing), with no SQLite file, tmpfs or root mount.
///
/// It behaves as `SQLiteStore` does wherever the `StoreConformance` cases look: keys are compared
/// as UTF-8 bytes (two canonically equivalent spellings are two rows), held firings come back in
/// id order and in the form the quiet table keeps, and a closed store fails every call.
public final class InMemoryStore: NotificationStore {
    public struct State: Sendable {
        /// Rows by their key's UTF-8 bytes: Swift's `String` equality would merge "é" and "e\u{301}".
        public var stored: [[UInt8]: StoredNotification] = [:]
        public var recent: [[UInt8]: [String: String]] = [:]
        public var rows: [String: StoredNotification] {
            stored.values.reduce(into: [:]) { $0[$1.notification.key] = $1 }
        }
        /// History entries, oldest first, with title and backends filled in as the SQLite store does.
        public var history: [HistoryEvent] = []
        /// Every commit attempted, in order, with its operations; failed ones included.
        public var commits: [[StoreOp]] = []
        public var failed: [Int] = []
        /// Commits (1-based, counted over the store's life) that will fail.
        public var failing: Set<Int> = []
        public var held = false
        /// Commits waiting at the gate now (`hold()`). `commits` counts a commit as soon as it
        /// starts, before it reaches the gate: a test that must know the commit has not gone
        /// past the gate (to let it go with `releaseWaiting()`) waits on this instead.
        public var waiting = 0
        /// The quiet-hours state as committed.
        public var quiet = QuietSnapshot()
        /// Commits that carry quiet-hours ops fail while true (a full disk), with all their ops.
        public var failQuiet = false
        /// Every commit that writes anything fails while true, as on a full disk (`fill()`).
        public var full = false
        /// Set by `close()`: every later call fails, as on a stopped SQLite store thread.
        public var closed = false
    }

    static let closedError = StoreError(.failed, "the state database is closed")

    public let state = WaitableState(State())
    private let gate = Mutex<[CheckedContinuation<Void, Never>]>([])
    private let counter = Mutex(0)
    /// The last `commitEach` queued: each call's commits start after those of the call before,
    /// the order the protocol promises (a task per call could start in either order).
    private let queue = Mutex<Task<Void, Never>?>(nil)

    public init() {}

    /// Makes commit number `n` (1-based, over the store's life) fail with a disk-full error.
    public func failCommit(number n: Int) { state.update { $0.failing.insert(n) } }

    /// Every later commit that writes fails with `.full` until `state.full` is cleared: what
    /// `StoreConformance.faultCases` do to a store (SQLite: its page count capped at its size).
    public func fill() { state.update { $0.full = true } }

    /// Commits (and a load) started from now on wait until `release()`.
    public func hold() { state.update { $0.held = true } }

    public func release() {
        state.update { $0.held = false }
        openGate()
    }

    /// Lets the commits waiting at the gate go on and keeps holding those started later: a test
    /// steps a center through two consecutive batches (one it queued work behind, then that
    /// work's own), which `release()` and then `hold()` would do only if the test won the race
    /// with the center's next commit.
    public func releaseWaiting() { openGate() }

    /// Waits at the gate while `hold()` is in force.
    private func passGate() async {
        guard state.value.held else { return }
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let resumeNow = gate.withLock { g -> Bool in
                if !self.state.value.held { return true }
                g.append(c)
                self.state.update { $0.waiting += 1 }
                return false
            }
            if resumeNow { c.resume() }
        }
    }

    /// `waiting` changes only under the gate's lock, so it always counts the gate.
    private func openGate() {
        let waiting = gate.withLock { g in
            let w = g
            g = []
            state.update { $0.waiting = 0 }
            return w
        }
        for c in waiting { c.resume() }
    }

    public var rows: [String: StoredNotification] { state.value.rows }
    public var commits: [[StoreOp]] { state.value.commits }

    public func load(chunkSize: Int) -> AsyncStream<Result<LoadedState, StoreError>> {
        let s = state.value
        let rows = s.stored.sorted { $0.key.lexicographicallyPrecedes($1.key) }.map { RestoredRow($0.value) }
        let send: @Sendable (AsyncStream<Result<LoadedState, StoreError>>.Continuation) -> Void = { c in
            if s.closed {
                c.yield(.failure(Self.closedError))
                c.finish()
                return
            }
            // As SQLite's: a first, empty chunk with the total, so the caller sizes its tables once.
            var head = LoadedState()
            head.totalRows = rows.count
            c.yield(.success(head))
            for start in stride(from: 0, to: rows.count, by: max(1, chunkSize)) {
                var part = LoadedState()
                part.rows = Array(rows[start..<min(rows.count, start + max(1, chunkSize))])
                c.yield(.success(part))
            }
            c.finish()
        }
        // A load started while the gate holds waits at it too: a test stops a center mid-load.
        guard s.held else { return AsyncStream { send($0) } }
        return AsyncStream { c in
            Task {
                await self.passGate()
                send(c)
            }
        }
    }

    public func commitEach(_ batches: [(ops: [StoreOp], reading: [String])]) -> AsyncStream<Result<[String: Notification], StoreError>> {
        let (stream, c) = AsyncStream.makeStream(of: Result<[String: Notification], StoreError>.self)
        queue.withLock { last in
            let before = last
            last = Task {
                await before?.value
                for b in batches {
                    do throws(StoreError) { c.yield(.success(try await commit(b.ops, reading: b.reading))) } catch { c.yield(.failure(error)) }
                }
                c.finish()
            }
        }
        return stream
    }

    /// An empty batch is no transaction: it is neither counted nor held.
    public func commit(_ ops: [StoreOp], reading: [String]) async throws(StoreError) -> [String: Notification] {
        if state.value.closed { throw Self.closedError }
        if ops.isEmpty { return try await notifications(reading) }
        let number = counter.withLock { n -> Int in n += 1; return n }
        state.update { $0.commits.append(ops) }
        await passGate()
        let s = state.value
        if s.failing.contains(number) || s.full || (s.failQuiet && ops.contains(where: Self.isQuiet)) {
            state.update { $0.failed.append(number) }
            throw StoreError(.full, "injected failure of commit \(number)")
        }
        state.update { s in for op in ops { Self.apply(op, to: &s) } }
        return try await notifications(reading)
    }

    public func loadQuiet() async throws(StoreError) -> QuietSnapshot {
        let s = state.value
        if s.closed { throw Self.closedError }
        return s.quiet
    }

    public func notifications(_ keys: [String]) async throws(StoreError) -> [String: Notification] {
        let s = state.value
        if s.closed { throw Self.closedError }
        var out: [String: Notification] = [:]
        for k in keys { if let r = s.stored[Array(k.utf8)] { out[k] = r.notification } }
        return out
    }

    /// A negative limit is SQLite's "no limit".
    public func keys(after key: String, limit: Int) async throws(StoreError) -> [String] {
        let s = state.value
        if s.closed { throw Self.closedError }
        let after = Array(key.utf8)
        let keys = s.stored.keys.filter { after.lexicographicallyPrecedes($0) }.sorted { $0.lexicographicallyPrecedes($1) }
        return keys.prefix(limit < 0 ? keys.count : limit).map { s.stored[$0]!.notification.key }
    }

    public func history(_ query: HistoryQuery) async throws(StoreError) -> [HistoryEvent] {
        let s = state.value
        if s.closed { throw Self.closedError }
        let limit = min(max(query.limit, 0), HistoryQuery.maxLimit)
        let key = query.key.map { Array($0.utf8) }
        return Array(s.history.reversed().filter { e in
            (key.map { $0 == Array(e.key.utf8) } ?? true) && (query.since.map { e.time >= $0 } ?? true)
        }.prefix(limit))
    }

    public func userInfo(_ key: String) async throws(StoreError) -> [String: String]? {
        let s = state.value
        if s.closed { throw Self.closedError }
        let k = Array(key.utf8)
        return s.stored[k]?.notification.userInfo ?? s.recent[k]
    }

    public func close() async { state.update { $0.closed = true } }

    private static func apply(_ op: StoreOp, to s: inout State) {
        switch op {
        case .upsert(let row): s.stored[Array(row.notification.key.utf8)] = row
        case .delete(let key, let keep):
            let k = Array(key.utf8)
            if keep, let info = s.stored[k]?.notification.userInfo, !info.isEmpty { s.recent[k] = info }
            s.stored[k] = nil
        case .progress(let key, let last, let alert, let pending):
            let k = Array(key.utf8)
            s.stored[k]?.last = last
            s.stored[k]?.alert = alert
            s.stored[k]?.pending = pending
        case .alert(let key, let alert): s.stored[Array(key.utf8)]?.alert = alert
        case .pending(let key, let p): s.stored[Array(key.utf8)]?.pending = p
        case .markCancelled(let key):
            let k = Array(key.utf8)
            s.stored[k]?.cancelled = true
            s.stored[k]?.alert = .idle
            s.stored[k]?.pending = nil
        case .record(var entry):
            let row = s.stored[Array(entry.key.utf8)]?.notification
            entry.title = row?.title ?? ""
            entry.backends = entry.backends ?? row?.backends ?? []
            s.history.append(entry)
        case .unrecordFired(let key, let occurrence, let due):
            if let i = s.history.lastIndex(where: { $0.kind == .fired && $0.key == key && $0.occurrence == occurrence && $0.due == due }) {
                s.history.remove(at: i)
            }
        case .pruneHistory(let before, let keep, let batch):
            var removed = 0
            s.history.removeAll { e in
                guard removed < batch, e.time < before else { return false }
                removed += 1
                return true
            }
            let excess = min(max(0, s.history.count - keep), batch)
            s.history.removeFirst(excess)
        case .quietSwitch(let o): s.quiet.override = o
        case .quietActive(let a): s.quiet.active = a
        case .hold(let h):
            s.quiet.held.removeAll { $0.id == h.id }
            s.quiet.held.append(StoreConformance.storedForm(h))
            s.quiet.held.sort { $0.id < $1.id }
        case .unhold(let ids): s.quiet.held.removeAll { ids.contains($0.id) }
        }
    }

    private static func isQuiet(_ op: StoreOp) -> Bool {
        switch op {
        case .quietSwitch, .quietActive, .hold, .unhold: return true
        default: return false
        }
    }
}
