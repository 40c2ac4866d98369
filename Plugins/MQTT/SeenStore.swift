import CSQLite
import Synchronization

/// The idempotency ids this daemon has acted on, in SQLite next to its state, so a message the
/// broker redelivers (after a reconnect, a broker restart, or our own restart) acts at most once.
///
/// The backend's own file (`mqtt-NAME.sqlite` in the state directory) keeps the core's schema free of
/// a plugin's table; like the state store it is durable before we act (synchronous=FULL).
final class SeenStore: Sendable {
    private let db: Mutex<OpaquePointer?>

    struct OpenError: Error, CustomStringConvertible { var description: String }

    init(path: String) throws(OpenError) {
        var h: OpaquePointer?
        let rc = sqlite3_open_v2(path, &h, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX, nil)
        guard rc == SQLITE_OK, let h else {
            let why = h.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            sqlite3_close_v2(h)
            throw OpenError(description: "cannot open \(path): \(why)")
        }
        for sql in ["PRAGMA journal_mode=WAL", "PRAGMA synchronous=FULL", "PRAGMA busy_timeout=5000",
                    "CREATE TABLE IF NOT EXISTS mqtt_seen (id TEXT PRIMARY KEY, kind TEXT NOT NULL, seen_at INTEGER NOT NULL)"] {
            guard sqlite3_exec(h, sql, nil, nil, nil) == SQLITE_OK else {
                let why = String(cString: sqlite3_errmsg(h))
                sqlite3_close_v2(h)
                throw OpenError(description: "cannot prepare \(path): \(why)")
            }
        }
        db = Mutex(h)
    }

    deinit { db.withLock { sqlite3_close_v2($0); $0 = nil } }

    /// Records `id`; true when it was new (act on it), false when seen before (drop it).
    /// A write that fails counts as new: acting twice on an acknowledge is harmless, losing one is not.
    func insert(_ id: String, kind: String, at unixSeconds: Int64) -> Bool {
        db.withLock { h in
            guard let h else { return true }
            var stmt: OpaquePointer?
            guard sqlite3_prepare_v2(h, "INSERT OR IGNORE INTO mqtt_seen (id, kind, seen_at) VALUES (?1, ?2, ?3)", -1, &stmt, nil) == SQLITE_OK else { return true }
            defer { sqlite3_finalize(stmt) }
            sqlite3_bind_text(stmt, 1, id, -1, tocsin_sqlite_transient())
            sqlite3_bind_text(stmt, 2, kind, -1, tocsin_sqlite_transient())
            sqlite3_bind_int64(stmt, 3, unixSeconds)
            guard sqlite3_step(stmt) == SQLITE_DONE else { return true }
            return sqlite3_changes(h) == 1
        }
    }

    func contains(_ id: String) -> Bool {
        db.withLock { h in
            guard let h else { return false }
            var stmt: OpaquePointer?
            guard sqlite3_prepare_v2(h, "SELECT 1 FROM mqtt_seen WHERE id = ?1", -1, &stmt, nil) == SQLITE_OK else { return false }
            defer { sqlite3_finalize(stmt) }
            sqlite3_bind_text(stmt, 1, id, -1, tocsin_sqlite_transient())
            return sqlite3_step(stmt) == SQLITE_ROW
        }
    }
}
