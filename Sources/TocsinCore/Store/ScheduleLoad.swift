import Synchronization
#if canImport(Glibc)
import Glibc
import TocsinSystem
#endif

extension StateStore {
    /// From this many rows on, start-up scans the table on two threads.
    static let parallelScanRows = 100_000

    /// Every row without its content, in chunks of `chunkSize` rows; the first chunk is empty and
    /// carries `totalRows`. The trigger's next occurrence is recomputed by the caller from `last`.
    ///
    /// A large table is scanned in two halves of its key range, this thread taking the lower and a
    /// second connection on a thread of its own the upper, so the chunks of the halves arrive
    /// interleaved. Both read the same state: this job holds the store thread until both halves
    /// are done, so no commit can run in between (nothing else writes the file).
    func loadSchedules(chunkSize: Int, parallelFrom: Int = parallelScanRows,
                       _ emit: @escaping @Sendable (LoadedState) -> Void) throws(StoreError) {
        do {
            let count = try db.prepare("SELECT count(*) FROM notification")
            var head = LoadedState()
            if try count.step() { head.totalRows = count.int(0).map(Int.init) }
            let total = head.totalRows ?? 0
            emit(head)
            var decoder = RowDecoder(zones: zones)
            guard total >= parallelFrom, let split = try middleKey(of: total) else {
                try Self.scan(db, from: nil, below: nil, chunkSize: chunkSize, decoder: &decoder, emit)
                return
            }
            let (path, zones) = (self.path, self.zones)
            let helper = ScanThread { () throws(StoreError) in
                let upper = try SQLiteDatabase(path: path)
                var decoder = RowDecoder(zones: zones)
                try StateStore.scan(upper, from: split, below: nil, chunkSize: chunkSize, decoder: &decoder, emit)
            }
            guard let helper else {
                // No second thread (the process is out of them): this one scans it all.
                try Self.scan(db, from: nil, below: nil, chunkSize: chunkSize, decoder: &decoder, emit)
                return
            }
            let lower = Result { () throws(StoreError) in
                try Self.scan(db, from: nil, below: split, chunkSize: chunkSize, decoder: &decoder, emit)
            }
            let upperResult = helper.join()
            try lower.get()
            try upperResult.get()
        } catch {
            guard error.code == .corrupt else { throw error }
            throw StoreError(.corrupt, "state database \(path) is damaged (\(error.message)); move it aside to start with an empty schedule, or restore a backup")
        }
    }

    /// The key half of the rows sort below: an index walk that decodes nothing.
    private func middleKey(of total: Int) throws(StoreError) -> String? {
        let q = try db.prepare("SELECT key FROM notification ORDER BY key LIMIT 1 OFFSET ?1")
        q.bind(1, Int64(total / 2))
        return try q.step() ? q.text(0) : nil
    }

    /// Rows with `from <= key < below` (either bound open when nil), in key order.
    private static func scan(_ db: SQLiteDatabase, from: String?, below: String?, chunkSize: Int, decoder: inout RowDecoder,
                             _ emit: (LoadedState) -> Void) throws(StoreError) {
        var bounds: [String] = []
        if from != nil { bounds.append("key >= ?1") }
        if below != nil { bounds.append("key < ?2") }
        let q = try db.prepare("SELECT \(RowDecoder.scheduleColumns) FROM notification"
                               + (bounds.isEmpty ? "" : " WHERE " + bounds.joined(separator: " AND ")))
        if let from { q.bind(1, from) }
        if let below { q.bind(2, below) }
        var out = LoadedState()
        out.rows.reserveCapacity(chunkSize)
        while try q.step() {
            decoder.scheduleRow(q, into: &out)
            if out.rows.count == chunkSize {
                emit(out)
                out = LoadedState()
                out.rows.reserveCapacity(chunkSize)
            }
        }
        if !out.rows.isEmpty || !out.problems.isEmpty { emit(out) }
    }
}

/// A thread that runs one body and hands its result to `join`. Nil when no thread could be
/// created, so the caller runs the work itself.
final class ScanThread: Sendable {
    typealias Body = @Sendable () throws(StoreError) -> Void
    private let body: Body
    private let outcome = Mutex<Result<Void, StoreError>>(.success(()))
    private let thread = Mutex<pthread_t?>(nil)

    init?(_ body: @escaping Body) {
        self.body = body
        guard case .success(let t) = WorkerThread.startJoinable({ self.run() }) else { return nil }
        thread.withLock { $0 = t }
    }

    private func run() {
        let r = Result { () throws(StoreError) in try body() }
        outcome.withLock { $0 = r }
    }

    func join() -> Result<Void, StoreError> {
        if let t = thread.withLock({ t -> pthread_t? in let v = t; t = nil; return v }) { pthread_join(t, nil) }
        return outcome.withLock { $0 }
    }
}
