import CTocsinSystem
import Synchronization
public import TocsinTime
#if canImport(Glibc)
import Glibc
public import TocsinSystem
#endif

/// The SQLite store, run on a thread of its own.
///
/// An fsync'd commit takes milliseconds; done on the center's executor it would stop every other
/// request for that long. Here the center hands a batch over and goes on collecting the next one
/// while this thread commits (group commit). Jobs run strictly in order, so a read issued after a
/// commit sees it. The thread sleeps in poll(2) on an eventfd; after a spell of work that filled
/// SQLite's page cache it wakes once more to give that memory back (`StoreMemoryPolicy`), and
/// otherwise sleeps with no timeout: idle, it never wakes.
public final class SQLiteStore: NotificationStore {
    let worker: StoreThread
    public let path: String

    /// Opens (creating if needed) `directory/state.sqlite3`; see `StateStore` for the checks.
    public convenience init(directory: String, zones: ZoneInfoDirectory = ZoneInfoDirectory()) throws(StoreError) {
        try self.init(directory: directory, zones: zones, memory: StoreMemoryPolicy())
    }

    /// With another memory policy: for tests, which shorten the quiet period and watch releases.
    init(directory: String, zones: ZoneInfoDirectory = ZoneInfoDirectory(), memory: StoreMemoryPolicy) throws(StoreError) {
        let store = try StateStore(directory: directory, zones: ZoneCache(directory: zones))
        path = store.path
        do {
            worker = try StoreThread(store, memory: memory)
        } catch {
            throw StoreError(.cannotOpen, "cannot start the store thread: \(error)")
        }
    }

    /// One job on the store thread reads the whole table (a large one in two halves, see
    /// `StateStore.loadSchedules`) and hands each chunk over as soon as it is decoded.
    public func load(chunkSize: Int) -> AsyncStream<Result<LoadedState, StoreError>> {
        let (stream, c) = AsyncStream.makeStream(of: Result<LoadedState, StoreError>.self)
        worker.submit { s in
            do throws(StoreError) {
                try s.loadSchedules(chunkSize: max(1, chunkSize)) { c.yield(.success($0)) }
            } catch {
                c.yield(.failure(error))
            }
            c.finish()
        } refused: {
            c.yield(.failure(StoreError(.failed, "the state database is closed")))
            c.finish()
        }
        return stream
    }

    public func commit(_ ops: [StoreOp], reading: [String]) async throws(StoreError) -> [String: Notification] {
        try await worker.run { s throws(StoreError) in try Self.apply(ops, reading: reading, on: s).get() }
    }

    /// One batch on the store thread, the same for `commit` and `commitEach` so that the two cannot
    /// drift: its transaction, then the read-back. The batch is durable once the transaction is;
    /// a failed read must not make it look as if it were not, so it reads as nothing.
    static func apply(_ ops: [StoreOp], reading: [String], on s: StateStore) -> Result<[String: Notification], StoreError> {
        if !ops.isEmpty {
            do throws(StoreError) {
                try s.transaction { () throws(StoreError) in for op in ops { try s.apply(op) } }
            } catch {
                return .failure(error)
            }
        }
        return .success(reading.isEmpty ? [:] : ((try? s.read(reading)) ?? [:]))
    }

    /// Every batch is queued on the store thread at once: the thread commits the next while the
    /// center delivers the one before.
    public func commitEach(_ batches: [(ops: [StoreOp], reading: [String])]) -> AsyncStream<Result<[String: Notification], StoreError>> {
        let (stream, c) = AsyncStream.makeStream(of: Result<[String: Notification], StoreError>.self)
        var remaining = batches.count
        if remaining == 0 { c.finish() }
        for b in batches {
            remaining -= 1
            let last = remaining == 0
            worker.submit { s in
                c.yield(Self.apply(b.ops, reading: b.reading, on: s))
                if last { c.finish() }
            } refused: {
                c.yield(.failure(StoreError(.failed, "the state database is closed")))
                if last { c.finish() }
            }
        }
        return stream
    }

    public func notifications(_ keys: [String]) async throws(StoreError) -> [String: Notification] {
        try await worker.run { s throws(StoreError) in try s.read(keys) }
    }

    public func keys(after key: String, limit: Int) async throws(StoreError) -> [String] {
        try await worker.run { s throws(StoreError) in try s.keys(after: key, limit: limit) }
    }

    public func history(_ query: HistoryQuery) async throws(StoreError) -> [HistoryEvent] {
        try await worker.run { s throws(StoreError) in try s.history(query) }
    }

    public func userInfo(_ key: String) async throws(StoreError) -> [String: String]? {
        try await worker.run { s throws(StoreError) in try s.userInfo(key) }
    }

    public func close() async { worker.stop() }

    deinit { worker.stop() }
}

/// When the store thread gives memory back: once it has had no job for `quietFor` while SQLite's
/// page cache holds at least `threshold` bytes, it empties that cache and trims the heap
/// (`malloc_trim`).
///
/// Scheduling 10,000 notifications left the daemon 3.9 MB more anonymous memory, of which 1.1 MB
/// was SQLite's page cache and 0.7 MB free heap glibc had not returned; a daemon holds its
/// memory all day, and pages cached for a burst of work are rarely what the next one needs. The
/// threshold keeps the lone firing or call from costing a second wake-up: its transaction touches
/// a few pages, the cache stays under it, and the thread sleeps with no timeout. During a stream
/// of work the queue never stays empty for `quietFor`, so nothing is released under load. One
/// release per spell of work at most: after it the thread sleeps without a timeout until the next
/// job, whatever stayed cached, so no page SQLite keeps can turn it into a timer
/// (`ReleaseSchedule`).
///
/// The quiet period stays under the 500 ms an idle-wake-up measurement waits for quiet and the 2 s
/// the benchmarks' idle figure waits after its fill, so the release happens before either
/// window opens.
struct StoreMemoryPolicy: Sendable {
    var quietFor: Duration
    var threshold: Int
    /// Called on the store thread after each release with the page cache's bytes before and after
    /// it: what tests wait on.
    var released: (@Sendable (_ before: Int, _ after: Int) -> Void)?

    init(quietFor: Duration = .milliseconds(250), threshold: Int = 256 << 10,
         released: (@Sendable (_ before: Int, _ after: Int) -> Void)? = nil) {
        self.quietFor = quietFor
        self.threshold = threshold
        self.released = released
    }

    /// poll(2) takes whole milliseconds in an Int32: a period under one rounds down to a release
    /// at once, and one past Int32's range (about 24 days) is clamped rather than trapping.
    func timeout(cacheBytes: Int) -> Int32 {
        guard cacheBytes >= threshold else { return -1 }
        guard quietFor > .zero else { return 0 }
        guard quietFor < .milliseconds(Int64(Int32.max)) else { return Int32.max }
        let (seconds, attoseconds) = quietFor.components
        return Int32(seconds * 1000 + attoseconds / 1_000_000_000_000_000)
    }
}

/// The store thread's side of the policy: one release per spell of work at most, so whatever a
/// release leaves cached, the thread then sleeps without a timeout until the next job.
struct ReleaseSchedule {
    let policy: StoreMemoryPolicy
    private var workedSinceRelease = false

    init(_ policy: StoreMemoryPolicy) { self.policy = policy }

    mutating func ranJobs() { workedSinceRelease = true }
    mutating func released() { workedSinceRelease = false }

    /// The cache is measured only when there is work to release after: the thread's usual sleep,
    /// after a release, asks nothing of SQLite.
    func timeout(cacheBytes: @autoclosure () -> Int) -> Int32 {
        workedSinceRelease ? policy.timeout(cacheBytes: cacheBytes()) : -1
    }
}

/// The thread that owns the `StateStore`.
///
/// `@unchecked Sendable`: `store` is touched only by the thread (thread confinement); the job
/// list is behind `jobs`' mutex.
final class StoreThread: @unchecked Sendable {
    typealias Job = @Sendable (StateStore) -> Void
    /// Released by the thread when it ends, which closes the database (and checkpoints its WAL
    /// into the main file) before `stop()` returns.
    private var store: StateStore?
    private let jobs = Mutex<(queue: [Job], stopped: Bool)>(([], false))
    private let wakeFD: Int32
    private let thread = Mutex<pthread_t?>(nil)
    private let memory: StoreMemoryPolicy

    struct StartError: Error, CustomStringConvertible { var description: String }

    init(_ store: StateStore, memory: StoreMemoryPolicy) throws(StartError) {
        self.store = store
        self.memory = memory
        wakeFD = tocsin_eventfd_create()
        guard wakeFD >= 0 else { throw StartError(description: String(cString: strerror(errno))) }
        // The thread holds the worker until `main` returns, as the store must outlive its jobs.
        switch WorkerThread.startJoinable({ [self] in main() }) {
        case .success(let t): thread.withLock { $0 = t }
        case .failure(let e): throw StartError(description: e.description)
        }
    }

    deinit { Glibc.close(wakeFD) }

    /// Runs `body` on the store thread and returns its result.
    func run<T: Sendable>(_ body: @escaping @Sendable (StateStore) throws(StoreError) -> T) async throws(StoreError) -> T {
        let result: Result<T, StoreError> = await withCheckedContinuation { c in
            let accepted = jobs.withLock { j -> Bool in
                if j.stopped { return false }
                j.queue.append { s in
                    do throws(StoreError) { c.resume(returning: .success(try body(s))) } catch { c.resume(returning: .failure(error)) }
                }
                return true
            }
            if accepted {
                _ = tocsin_eventfd_signal(wakeFD)
            } else {
                c.resume(returning: .failure(StoreError(.failed, "the state database is closed")))
            }
        }
        return try result.get()
    }

    /// Queues `job` without waiting for it; `refused` runs instead once the thread has stopped.
    func submit(_ job: @escaping Job, refused: () -> Void) {
        let accepted = jobs.withLock { j -> Bool in
            if j.stopped { return false }
            j.queue.append(job)
            return true
        }
        if accepted { _ = tocsin_eventfd_signal(wakeFD) } else { refused() }
    }

    /// Finishes the queued jobs, then ends the thread; later jobs fail.
    func stop() {
        jobs.withLock { $0.stopped = true }
        _ = tocsin_eventfd_signal(wakeFD)
        guard let t = thread.withLock({ t -> pthread_t? in let v = t; t = nil; return v }) else { return }
        if pthread_equal(t, pthread_self()) != 0 { pthread_detach(t) } else { pthread_join(t, nil) }
    }

    private func main() {
        var pfd = pollfd(fd: wakeFD, events: Int16(POLLIN), revents: 0)
        var schedule = ReleaseSchedule(memory)
        while true {
            let (batch, stopped) = jobs.withLock { j -> ([Job], Bool) in
                let q = j.queue
                j.queue = []
                return (q, j.stopped)
            }
            if let store { for job in batch { job(store) } }
            if stopped && batch.isEmpty {
                store = nil
                return
            }
            if !batch.isEmpty {
                schedule.ranJobs()
                continue
            }
            pfd.revents = 0
            let ready = poll(&pfd, 1, schedule.timeout(cacheBytes: store?.db.cacheBytes ?? 0))
            if ready > 0 {
                _ = tocsin_eventfd_drain(wakeFD)
            } else if ready == 0, let store {
                releaseMemory(store)
                schedule.released()
            }
        }
    }

    /// Between jobs, so no transaction is open and every cached page can go.
    private func releaseMemory(_ store: StateStore) {
        let before = store.db.cacheBytes
        store.db.releaseMemory()
        _ = tocsin_malloc_trim()
        memory.released?(before, store.db.cacheBytes)
    }
}
