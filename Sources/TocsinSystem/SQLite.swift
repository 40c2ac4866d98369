import CSQLite
#if canImport(Glibc)
import Glibc
#endif

/// An SQLite failure, with the database's own message.
public struct StoreError: Error, Hashable, Sendable, CustomStringConvertible {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        /// The closed set of codes: clients match on the static members below but cannot make
        /// new ones. Raw values are the stable spellings that messages and tests show.
        private enum _Code: String, Hashable, Sendable {
            case cannotOpen = "cannot-open"
            case corrupt
            case readOnly = "read-only"
            case full = "disk-full"
            case unsafeDirectory = "unsafe-directory"
            case inUse = "in-use"
            case failed
        }

        private let code: _Code

        private init(_ code: _Code) { self.code = code }

        /// The stable spelling, e.g. `cannot-open`.
        public var description: String { code.rawValue }

        public static let cannotOpen = Code(.cannotOpen)
        /// Not a Tocsin database, or damaged: never silently replaced.
        public static let corrupt = Code(.corrupt)
        public static let readOnly = Code(.readOnly)
        public static let full = Code(.full)
        public static let unsafeDirectory = Code(.unsafeDirectory)
        /// Another process holds the state directory (`StateDirectoryLock`).
        public static let inUse = Code(.inUse)
        public static let failed = Code(.failed)
    }
    public var code: Code
    public var message: String
    public init(_ code: Code, _ message: String) { self.code = code; self.message = message }
    public var description: String { message }
}

/// One SQLite connection. Not thread-safe by itself: owned by one actor.
package final class SQLiteDatabase {
    package let handle: OpaquePointer
    package let path: String

    package init(path: String) throws(StoreError) {
        var db: OpaquePointer?
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX
        let rc = sqlite3_open_v2(path, &db, flags, nil)
        guard rc == SQLITE_OK, let db else {
            // No handle: SQLite could not allocate one, or the library itself could not be loaded.
            var msg = db.map { String(cString: sqlite3_errmsg($0)) }
                ?? tocsin_sqlite_load_error().map { String(cString: $0) } ?? "out of memory"
            // "unable to open database file" alone does not say why (no permission, no file
            // descriptor left); the OS error does.
            if let db, case let os = sqlite3_system_errno(db), os != 0 { msg += " (\(String(cString: strerror(os))))" }
            if let db { sqlite3_close_v2(db) }
            throw StoreError(.cannotOpen, "cannot open state database \(path): \(msg)")
        }
        handle = db
        self.path = path
        sqlite3_busy_timeout(db, 5000)
    }

    deinit { sqlite3_close_v2(handle) }

    package func error(_ rc: Int32, _ what: String) -> StoreError {
        var msg = String(cString: sqlite3_errmsg(handle))
        // "disk I/O error" alone does not tell a file system turned read-only (what the kernel
        // does to a failing disk) from anything else, and SQLite's saved errno is often 0 by
        // then: on such errors, try to create a file next to the database and report why not.
        var readOnlyFS = false
        if rc & 0xff == SQLITE_IOERR || rc & 0xff == SQLITE_CANTOPEN || rc & 0xff == SQLITE_READONLY {
            let probe = path + ".probe-\(getpid())"
            let fd = open(probe, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
            if fd < 0 {
                let e = errno
                readOnlyFS = e == EROFS
                msg += " (the state directory cannot be written: \(String(cString: strerror(e))))"
            } else {
                close(fd)
                unlink(probe)
                let os = sqlite3_system_errno(handle)
                if os != 0 { msg += " (\(String(cString: strerror(os))))" }
            }
        }
        var code: StoreError.Code
        switch rc & 0xff {
        case SQLITE_CORRUPT, SQLITE_NOTADB: code = .corrupt
        case SQLITE_READONLY: code = .readOnly
        case SQLITE_FULL: code = .full
        case SQLITE_CANTOPEN: code = .cannotOpen
        default: code = .failed
        }
        if readOnlyFS { code = .readOnly }
        return StoreError(code, "\(what) (\(path)): \(msg)")
    }

    package func exec(_ sql: String) throws(StoreError) {
        let rc = sqlite3_exec(handle, sql, nil, nil, nil)
        guard rc == SQLITE_OK else { throw error(rc, "SQL failed") }
    }

    /// Rows the last finished INSERT, UPDATE or DELETE on this connection changed.
    package var changes: Int { Int(sqlite3_changes(handle)) }

    /// Bytes the connection's page cache holds: pages read or written stay cached (up to
    /// `cache_size`, 2 MB by default) after their transaction ends.
    package var cacheBytes: Int {
        var current: Int32 = 0, highwater: Int32 = 0
        return sqlite3_db_status(handle, SQLITE_DBSTATUS_CACHE_USED, &current, &highwater, 0) == SQLITE_OK ? Int(current) : 0
    }

    /// Gives the page cache back to the heap; the next statement reads its pages from the file
    /// again (from the kernel's page cache, not the disk, as a rule). Between transactions every
    /// page is unpinned, so all of them go (CSQLite's open turns off the first block of page
    /// slots SQLite would otherwise keep until the connection closes).
    package func releaseMemory() { _ = sqlite3_db_release_memory(handle) }

    package func prepare(_ sql: String) throws(StoreError) -> SQLiteStatement {
        var stmt: OpaquePointer?
        let rc = sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &stmt, nil)
        guard rc == SQLITE_OK, let stmt else { throw error(rc, "cannot prepare statement") }
        return SQLiteStatement(stmt, db: self)
    }
}

/// A prepared statement, reset and reused: the hot paths never re-parse SQL.
package final class SQLiteStatement {
    package let stmt: OpaquePointer
    unowned let db: SQLiteDatabase
    /// Made on the first text bound (BEGIN, COMMIT and pruning bind none).
    private var texts: BindArena?
    /// Parameters 1...63 given a value since the last `reset`. The others are NULL, as every
    /// parameter is after `sqlite3_clear_bindings` or `prepare`, so binding NULL to them again
    /// (half the upsert's 34 on a typical call, at about 80 instructions each) can be skipped.
    private var valued: UInt64 = 0

    package init(_ stmt: OpaquePointer, db: SQLiteDatabase) { self.stmt = stmt; self.db = db }
    // The statement goes first: `texts` (freed after this body) must outlive SQLite's pointers into it.
    deinit { sqlite3_finalize(stmt) }

    package func reset() {
        sqlite3_reset(stmt)
        sqlite3_clear_bindings(stmt)
        texts?.rewind()
        valued = 0
    }

    private func bindNull(_ i: Int32) {
        if i > 0 && i < 64 {
            let bit: UInt64 = 1 << UInt64(i)
            guard valued & bit != 0 else { return }
            valued &= ~bit
        }
        sqlite3_bind_null(stmt, i)
    }

    private func markValued(_ i: Int32) {
        if i > 0 && i < 64 { valued |= 1 << UInt64(i) }
    }

    package func bind(_ i: Int32, _ v: Int64?) {
        guard let v else { bindNull(i); return }
        sqlite3_bind_int64(stmt, i, v)
        markValued(i)
    }

    package func bind(_ i: Int32, _ v: String?) {
        guard var v else { bindNull(i); return }
        markValued(i)
        v.withUTF8 { bytes in
            let arena = texts ?? BindArena()
            texts = arena
            if let kept = arena.keep(bytes) {
                // SQLITE_STATIC (a null destructor): SQLite reads the bytes where they are until
                // `reset` clears the binding, and only then does the arena reuse them.
                sqlite3_bind_text(stmt, i, kept, Int32(bytes.count), nil)
            } else {
                // Only a value longer than what is left, so never an empty one without storage.
                bytes.withMemoryRebound(to: CChar.self) { chars in
                    _ = sqlite3_bind_text(stmt, i, chars.baseAddress, Int32(chars.count), tocsin_sqlite_transient())
                }
            }
        }
    }

    package func bind(_ i: Int32, bytes: [UInt8]) {
        markValued(i)
        _ = bytes.withUnsafeBytes { sqlite3_bind_blob(stmt, i, $0.baseAddress, Int32($0.count), tocsin_sqlite_transient()) }
    }

    /// Runs a statement that returns no rows.
    package func run() throws(StoreError) {
        defer { reset() }
        let rc = sqlite3_step(stmt)
        guard rc == SQLITE_DONE || rc == SQLITE_ROW else { throw db.error(rc, "write failed") }
    }

    /// Steps once: true while there is a row.
    package func step() throws(StoreError) -> Bool {
        let rc = sqlite3_step(stmt)
        if rc == SQLITE_ROW { return true }
        if rc == SQLITE_DONE { return false }
        throw db.error(rc, "read failed")
    }

    package func int(_ col: Int32) -> Int64? {
        sqlite3_column_type(stmt, col) == SQLITE_NULL ? nil : sqlite3_column_int64(stmt, col)
    }

    /// A NOT NULL column: no type check first.
    package func int64(_ col: Int32) -> Int64 { sqlite3_column_int64(stmt, col) }

    /// The text's bytes, valid only inside `body`: for comparing without making a `String`.
    package func withText<R>(_ col: Int32, _ body: (UnsafeBufferPointer<UInt8>?) -> R) -> R {
        guard sqlite3_column_type(stmt, col) != SQLITE_NULL, let p = sqlite3_column_text(stmt, col) else { return body(nil) }
        return body(UnsafeBufferPointer(start: p, count: Int(sqlite3_column_bytes(stmt, col))))
    }

    package func text(_ col: Int32) -> String? {
        guard sqlite3_column_type(stmt, col) != SQLITE_NULL, let p = sqlite3_column_text(stmt, col) else { return nil }
        let n = Int(sqlite3_column_bytes(stmt, col))
        return String(decoding: UnsafeBufferPointer(start: p, count: n), as: UTF8.self)
    }

    package func blob(_ col: Int32) -> [UInt8] {
        let n = Int(sqlite3_column_bytes(stmt, col))
        return sqlite3_column_blob(stmt, col).map { Array(UnsafeRawBufferPointer(start: $0, count: n)) } ?? []
    }
}

/// The bytes of the text values bound to one statement, kept until the statement is reset.
///
/// Why: bound with `SQLITE_TRANSIENT`, each value is copied into a buffer SQLite mallocs, and
/// freed on the next bind or clear. Saving a notification binds about a dozen strings, so every
/// `Schedule` paid a dozen malloc and free pairs on the store thread for bytes that SQLite only
/// reads once, to build the row. Bound from here with `SQLITE_STATIC`, they are read in place.
///
/// The block never moves or shrinks while values are bound, so every pointer SQLite holds stays
/// valid until `rewind`, which `SQLiteStatement.reset` calls after clearing the bindings. A value
/// that does not fit in what is left is bound with `SQLITE_TRANSIENT`, as before; the next
/// `rewind` then grows the block to what that use wanted, up to `largest`. So a statement that
/// binds a key holds a small block, the upsert about a kilobyte, and nothing a client sends can
/// make one hold more than `largest`.
final class BindArena {
    static let smallest = 128
    /// A notification's usual strings fit many times over; a long body does not, and is copied.
    static let largest = 2048
    private var block: UnsafeMutablePointer<CChar>
    private(set) var capacity: Int
    private var used = 0
    /// Bytes this use of the statement would have kept, the ones that did not fit included.
    private var wanted = 0

    init() {
        capacity = Self.smallest
        block = .allocate(capacity: capacity)
    }

    deinit { block.deallocate() }

    /// The bytes copied into the block, or nil when they do not fit in what is left of it.
    func keep(_ bytes: UnsafeBufferPointer<UInt8>) -> UnsafePointer<CChar>? {
        wanted += bytes.count
        guard bytes.count <= capacity - used else { return nil }
        let start = block + used
        if let base = bytes.baseAddress { UnsafeMutableRawPointer(start).copyMemory(from: base, byteCount: bytes.count) }
        used += bytes.count
        return UnsafePointer(start)
    }

    /// Only when no binding points into the block any more.
    func rewind() {
        if wanted > capacity && capacity < Self.largest {
            block.deallocate()
            var grown = capacity
            while grown < wanted && grown < Self.largest { grown *= 2 }
            capacity = min(grown, Self.largest)
            block = .allocate(capacity: capacity)
        }
        used = 0
        wanted = 0
    }
}
