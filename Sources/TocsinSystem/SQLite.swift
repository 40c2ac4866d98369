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
    /// page is unpinned, so all of them go except SQLite's first block of about 20 page slots,
    /// which it keeps until the connection closes (and `cacheBytes` does not count).
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

    package init(_ stmt: OpaquePointer, db: SQLiteDatabase) { self.stmt = stmt; self.db = db }
    deinit { sqlite3_finalize(stmt) }

    package func reset() {
        sqlite3_reset(stmt)
        sqlite3_clear_bindings(stmt)
    }

    package func bind(_ i: Int32, _ v: Int64?) {
        if let v { sqlite3_bind_int64(stmt, i, v) } else { sqlite3_bind_null(stmt, i) }
    }

    package func bind(_ i: Int32, _ v: String?) {
        guard let v else { sqlite3_bind_null(stmt, i); return }
        // withCString copies once; SQLITE_TRANSIENT makes SQLite copy, so the buffer may go away after.
        _ = v.withCString { p in
            sqlite3_bind_text(stmt, i, p, Int32(v.utf8.count), tocsin_sqlite_transient())
        }
    }

    package func bind(_ i: Int32, bytes: [UInt8]) {
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
