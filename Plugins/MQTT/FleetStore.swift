import CSQLite
import Glibc
import Synchronization

/// The mqtt backend's durable state, in SQLite next to the daemon's:
/// - `mqtt_seen`: the idempotency ids this daemon has acted on, so a message the broker
///   redelivers (after a reconnect, a broker restart, or our own restart) acts at most once;
/// - `mqtt_outbox`: answers (acknowledges, snoozes) published but not yet acknowledged by the
///   broker, so one given while the broker was down survives a daemon restart and is sent then;
/// - `mqtt_delivered`: the latest occurrence delivered per key, so an acknowledge after a daemon
///   restart still names the occurrence it ends (its id must match the other machines').
///
/// - `mqtt_fleet`: per key of a `fleet = true` notification, whether it is shared now and the
///   instant of its latest change (scheduled or cancelled, here or elsewhere), so a change older
///   than the one in force (a late or replayed message) is not applied.
///
/// The backend's own file (`mqtt-NAME.sqlite` in the state directory) keeps the core's schema free of
/// a plugin's table; like the state store it is durable before we act (synchronous=FULL).
final class FleetStore: Sendable {
    private let db: Mutex<OpaquePointer?>

    struct OpenError: Error, CustomStringConvertible { var description: String }

    init(path: String) throws(OpenError) {
        // Like the state store: readable by its owner only (SQLite gives -wal and -shm the same mode).
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw OpenError(description: "cannot create \(path): errno \(errno)") }
        close(fd)
        var h: OpaquePointer?
        let rc = sqlite3_open_v2(path, &h, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX, nil)
        guard rc == SQLITE_OK, let h else {
            let why = h.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            sqlite3_close_v2(h)
            throw OpenError(description: "cannot open \(path): \(why)")
        }
        for sql in ["PRAGMA journal_mode=WAL", "PRAGMA synchronous=FULL", "PRAGMA busy_timeout=5000",
                    "CREATE TABLE IF NOT EXISTS mqtt_seen (id TEXT PRIMARY KEY, kind TEXT NOT NULL, seen_at INTEGER NOT NULL)",
                    "CREATE TABLE IF NOT EXISTS mqtt_delivered (key TEXT PRIMARY KEY, occurrence INTEGER NOT NULL, due INTEGER NOT NULL)",
                    "CREATE TABLE IF NOT EXISTS mqtt_fleet (key TEXT PRIMARY KEY, shared INTEGER NOT NULL, changed INTEGER NOT NULL)",
                    "CREATE TABLE IF NOT EXISTS mqtt_outbox (id TEXT PRIMARY KEY, topic TEXT NOT NULL, payload BLOB NOT NULL, created INTEGER NOT NULL)"] {
            guard sqlite3_exec(h, sql, nil, nil, nil) == SQLITE_OK else {
                let why = String(cString: sqlite3_errmsg(h))
                sqlite3_close_v2(h)
                throw OpenError(description: "cannot prepare \(path): \(why)")
            }
        }
        // Ids are kept for 30 days: far beyond any redelivery (a broker queues for a client that
        // is away, it does not hold messages for a month), and the table stays small.
        sqlite3_exec(h, "DELETE FROM mqtt_seen WHERE seen_at < CAST(strftime('%s','now') AS INTEGER) - \(Self.keepSeenSeconds)", nil, nil, nil)
        db = Mutex(h)
    }

    static let keepSeenSeconds: Int64 = 30 * 86_400

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

    /// Remembers the occurrence just delivered for `key`. Best effort: losing it only makes a later
    /// acknowledge's id differ from the other machines', which they then act on (harmlessly) again.
    func recordDelivered(key: String, occurrence: UInt64, due: Int64) {
        db.withLock { h in
            guard let h else { return }
            var stmt: OpaquePointer?
            guard sqlite3_prepare_v2(h, "INSERT OR REPLACE INTO mqtt_delivered (key, occurrence, due) VALUES (?1, ?2, ?3)", -1, &stmt, nil) == SQLITE_OK else { return }
            defer { sqlite3_finalize(stmt) }
            sqlite3_bind_text(stmt, 1, key, -1, tocsin_sqlite_transient())
            sqlite3_bind_int64(stmt, 2, Int64(bitPattern: occurrence))
            sqlite3_bind_int64(stmt, 3, due)
            _ = sqlite3_step(stmt)
        }
    }

    func lastDelivered(key: String) -> (occurrence: UInt64, due: Int64)? {
        db.withLock { h in
            guard let h else { return nil }
            var stmt: OpaquePointer?
            guard sqlite3_prepare_v2(h, "SELECT occurrence, due FROM mqtt_delivered WHERE key = ?1", -1, &stmt, nil) == SQLITE_OK else { return nil }
            defer { sqlite3_finalize(stmt) }
            sqlite3_bind_text(stmt, 1, key, -1, tocsin_sqlite_transient())
            guard sqlite3_step(stmt) == SQLITE_ROW else { return nil }
            return (UInt64(bitPattern: sqlite3_column_int64(stmt, 0)), sqlite3_column_int64(stmt, 1))
        }
    }

    /// Keeps an answer until the broker has it; durable before it is published.
    func enqueue(id: String, topic: String, payload: [UInt8], at unixSeconds: Int64) {
        db.withLock { h in
            guard let h else { return }
            var stmt: OpaquePointer?
            guard sqlite3_prepare_v2(h, "INSERT OR REPLACE INTO mqtt_outbox (id, topic, payload, created) VALUES (?1, ?2, ?3, ?4)", -1, &stmt, nil) == SQLITE_OK else { return }
            defer { sqlite3_finalize(stmt) }
            sqlite3_bind_text(stmt, 1, id, -1, tocsin_sqlite_transient())
            sqlite3_bind_text(stmt, 2, topic, -1, tocsin_sqlite_transient())
            payload.withUnsafeBytes { _ = sqlite3_bind_blob(stmt, 3, $0.baseAddress, Int32($0.count), tocsin_sqlite_transient()) }
            sqlite3_bind_int64(stmt, 4, unixSeconds)
            _ = sqlite3_step(stmt)
        }
    }

    func removeFromOutbox(id: String) {
        db.withLock { h in
            guard let h else { return }
            var stmt: OpaquePointer?
            guard sqlite3_prepare_v2(h, "DELETE FROM mqtt_outbox WHERE id = ?1", -1, &stmt, nil) == SQLITE_OK else { return }
            defer { sqlite3_finalize(stmt) }
            sqlite3_bind_text(stmt, 1, id, -1, tocsin_sqlite_transient())
            _ = sqlite3_step(stmt)
        }
    }

    /// What an earlier run owed the broker, oldest first.
    func outbox() -> [(id: String, topic: String, payload: [UInt8])] {
        db.withLock { h in
            guard let h else { return [] }
            var stmt: OpaquePointer?
            guard sqlite3_prepare_v2(h, "SELECT id, topic, payload FROM mqtt_outbox ORDER BY created, rowid", -1, &stmt, nil) == SQLITE_OK else { return [] }
            defer { sqlite3_finalize(stmt) }
            var out: [(id: String, topic: String, payload: [UInt8])] = []
            while sqlite3_step(stmt) == SQLITE_ROW {
                guard let id = sqlite3_column_text(stmt, 0), let topic = sqlite3_column_text(stmt, 1) else { continue }
                let n = Int(sqlite3_column_bytes(stmt, 2))
                let bytes = sqlite3_column_blob(stmt, 2).map { Array(UnsafeRawBufferPointer(start: $0, count: n)) } ?? []
                out.append((String(cString: id), String(cString: topic), bytes))
            }
            return out
        }
    }

    /// The highest snooze number recorded under `prefix` (`snoozed/<key>/<due>/<occurrence>/`),
    /// sent or received; 0 when none. Compared as a prefix, not with LIKE, since keys may hold `%`.
    func lastSnooze(prefix: String) -> Int {
        db.withLock { h in
            guard let h else { return 0 }
            var stmt: OpaquePointer?
            guard sqlite3_prepare_v2(h, "SELECT id FROM mqtt_seen WHERE substr(id, 1, length(?1)) = ?1", -1, &stmt, nil) == SQLITE_OK else { return 0 }
            defer { sqlite3_finalize(stmt) }
            sqlite3_bind_text(stmt, 1, prefix, -1, tocsin_sqlite_transient())
            var best = 0
            while sqlite3_step(stmt) == SQLITE_ROW {
                guard let text = sqlite3_column_text(stmt, 0) else { continue }
                let id = String(cString: text)
                if let n = Int(id.dropFirst(prefix.count)) { best = max(best, n) }
            }
            return best
        }
    }

    /// Records a change of a fleet notification (`shared`: scheduled and shared, false: cancelled
    /// or now this machine's own) made at `changed` (unix microseconds).
    func recordFleet(key: String, shared: Bool, changed: Int64) {
        db.withLock { h in
            guard let h else { return }
            var stmt: OpaquePointer?
            guard sqlite3_prepare_v2(h, "INSERT OR REPLACE INTO mqtt_fleet (key, shared, changed) VALUES (?1, ?2, ?3)", -1, &stmt, nil) == SQLITE_OK else { return }
            defer { sqlite3_finalize(stmt) }
            sqlite3_bind_text(stmt, 1, key, -1, tocsin_sqlite_transient())
            sqlite3_bind_int(stmt, 2, shared ? 1 : 0)
            sqlite3_bind_int64(stmt, 3, changed)
            _ = sqlite3_step(stmt)
        }
    }

    /// Every key's fleet state, for the start.
    func fleetKeys() -> [String: (shared: Bool, changed: Int64)] {
        db.withLock { h in
            guard let h else { return [:] }
            var stmt: OpaquePointer?
            guard sqlite3_prepare_v2(h, "SELECT key, shared, changed FROM mqtt_fleet", -1, &stmt, nil) == SQLITE_OK else { return [:] }
            defer { sqlite3_finalize(stmt) }
            var out: [String: (shared: Bool, changed: Int64)] = [:]
            while sqlite3_step(stmt) == SQLITE_ROW {
                guard let k = sqlite3_column_text(stmt, 0) else { continue }
                out[String(cString: k)] = (sqlite3_column_int(stmt, 1) != 0, sqlite3_column_int64(stmt, 2))
            }
            return out
        }
    }
}
