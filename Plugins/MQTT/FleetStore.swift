import Glibc
import Synchronization
import TocsinSystem

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
/// a plugin's table; like the state store it is durable before we act (synchronous=FULL). It
/// uses the same SQLite wrapper as the state store (TocsinSystem), behind a mutex: the backend's
/// callbacks come from mosquitto's thread and from the center's tasks.
///
/// Every read and write is best effort: a failed write is reported as "new" or ignored, since
/// acting twice on an acknowledge is harmless and losing one is not.
final class FleetStore: Sendable {
    private let db: Mutex<Statements?>

    struct OpenError: Error, CustomStringConvertible { var description: String }

    /// The connection and its statements, prepared once.
    private final class Statements {
        let db: SQLiteDatabase
        /// When the tables were last pruned (unix seconds); once a day at most, on a write, so an
        /// idle daemon never wakes for it.
        var prunedAt: Int64 = 0
        let insertSeen, containsSeen, recordDelivered, lastDelivered: SQLiteStatement
        let enqueue, dequeue, outbox, seenWithPrefix, recordFleet, fleetKeys: SQLiteStatement
        init(_ db: SQLiteDatabase) throws(StoreError) {
            self.db = db
            insertSeen = try db.prepare("INSERT OR IGNORE INTO mqtt_seen (id, kind, seen_at) VALUES (?1, ?2, ?3)")
            containsSeen = try db.prepare("SELECT 1 FROM mqtt_seen WHERE id = ?1")
            recordDelivered = try db.prepare("INSERT OR REPLACE INTO mqtt_delivered (key, occurrence, due) VALUES (?1, ?2, ?3)")
            lastDelivered = try db.prepare("SELECT occurrence, due FROM mqtt_delivered WHERE key = ?1")
            enqueue = try db.prepare("INSERT OR REPLACE INTO mqtt_outbox (id, topic, payload, created) VALUES (?1, ?2, ?3, ?4)")
            dequeue = try db.prepare("DELETE FROM mqtt_outbox WHERE id = ?1")
            outbox = try db.prepare("SELECT id, topic, payload FROM mqtt_outbox ORDER BY created, rowid")
            seenWithPrefix = try db.prepare("SELECT id FROM mqtt_seen WHERE substr(id, 1, length(?1)) = ?1")
            recordFleet = try db.prepare("INSERT OR REPLACE INTO mqtt_fleet (key, shared, changed) VALUES (?1, ?2, ?3)")
            fleetKeys = try db.prepare("SELECT key, shared, changed FROM mqtt_fleet")
        }
    }

    init(path: String) throws(OpenError) {
        // Like the state store: readable by its owner only (SQLite gives -wal and -shm the same mode).
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw OpenError(description: "cannot create \(path): \(String(cString: strerror(errno)))") }
        close(fd)
        do throws(StoreError) {
            let db = try SQLiteDatabase(path: path)
            for sql in ["PRAGMA journal_mode=WAL", "PRAGMA synchronous=FULL",
                        "CREATE TABLE IF NOT EXISTS mqtt_seen (id TEXT PRIMARY KEY, kind TEXT NOT NULL, seen_at INTEGER NOT NULL)",
                        "CREATE TABLE IF NOT EXISTS mqtt_delivered (key TEXT PRIMARY KEY, occurrence INTEGER NOT NULL, due INTEGER NOT NULL)",
                        "CREATE TABLE IF NOT EXISTS mqtt_fleet (key TEXT PRIMARY KEY, shared INTEGER NOT NULL, changed INTEGER NOT NULL)",
                        "CREATE TABLE IF NOT EXISTS mqtt_outbox (id TEXT PRIMARY KEY, topic TEXT NOT NULL, payload BLOB NOT NULL, created INTEGER NOT NULL)"] {
                try db.exec(sql)
            }
            let statements = try Statements(db)
            Self.prune(statements, now: Self.nowSeconds())
            self.db = Mutex(statements)
        } catch {
            // The SQLite wrapper's errors name the file already.
            throw OpenError(description: "cannot open the mqtt backend's store: \(error.message)")
        }
    }

    static let keepSeenSeconds: Int64 = 30 * 86_400

    static func nowSeconds() -> Int64 { Int64(time(nil)) }

    /// Forgets what no message can concern any more: ids seen, occurrences delivered and fleet
    /// keys no longer shared, each older than 30 days. That is far beyond any redelivery (a
    /// broker queues for a client that is away, it does not hold messages for a month). Without
    /// it the last two tables kept a row for every key ever used (an app that makes a key per
    /// notification grew them without end), and the fleet keys are all read at start.
    private static func prune(_ s: Statements, now: Int64) {
        let cutoff = now - keepSeenSeconds
        for sql in ["DELETE FROM mqtt_seen WHERE seen_at < \(cutoff)",
                    "DELETE FROM mqtt_delivered WHERE due < \(cutoff) * 1000000",
                    "DELETE FROM mqtt_fleet WHERE shared = 0 AND changed < \(cutoff) * 1000000"] {
            try? s.db.exec(sql)
        }
        s.prunedAt = now
    }

    /// Prunes once a day, on a write: a daemon that runs for months stays as small as one just started.
    private static func pruneIfDue(_ s: Statements, now: Int64) {
        if now - s.prunedAt >= 86_400 { prune(s, now: now) }
    }

    /// Records `id`; true when it was new (act on it), false when seen before (drop it).
    /// A write that fails counts as new: acting twice on an acknowledge is harmless, losing one is not.
    func insert(_ id: String, kind: String, at unixSeconds: Int64) -> Bool {
        db.withLock { s in
            guard let s else { return true }
            Self.pruneIfDue(s, now: unixSeconds)
            let st = s.insertSeen
            st.bind(1, id); st.bind(2, kind); st.bind(3, unixSeconds)
            guard (try? st.run()) != nil else { return true }
            return s.db.changes == 1
        }
    }

    func contains(_ id: String) -> Bool {
        db.withLock { s in
            guard let st = s?.containsSeen else { return false }
            defer { st.reset() }
            st.bind(1, id)
            return (try? st.step()) == true
        }
    }

    /// Remembers the occurrence just delivered for `key`. Best effort: losing it only makes a later
    /// acknowledge's id differ from the other machines', which they then act on (harmlessly) again.
    func recordDelivered(key: String, occurrence: UInt64, due: Int64) {
        db.withLock { s in
            guard let s else { return }
            Self.pruneIfDue(s, now: Self.nowSeconds())
            let st = s.recordDelivered
            st.bind(1, key); st.bind(2, Int64(bitPattern: occurrence)); st.bind(3, due)
            try? st.run()
        }
    }

    func lastDelivered(key: String) -> (occurrence: UInt64, due: Int64)? {
        db.withLock { s in
            guard let st = s?.lastDelivered else { return nil }
            defer { st.reset() }
            st.bind(1, key)
            guard (try? st.step()) == true else { return nil }
            return (UInt64(bitPattern: st.int64(0)), st.int64(1))
        }
    }

    /// Keeps an answer until the broker has it; durable before it is published.
    func enqueue(id: String, topic: String, payload: [UInt8], at unixSeconds: Int64) {
        db.withLock { s in
            guard let st = s?.enqueue else { return }
            st.bind(1, id); st.bind(2, topic); st.bind(3, bytes: payload); st.bind(4, unixSeconds)
            try? st.run()
        }
    }

    func removeFromOutbox(id: String) {
        db.withLock { s in
            guard let st = s?.dequeue else { return }
            st.bind(1, id)
            try? st.run()
        }
    }

    /// What an earlier run owed the broker, oldest first.
    func outbox() -> [(id: String, topic: String, payload: [UInt8])] {
        db.withLock { s in
            guard let st = s?.outbox else { return [] }
            defer { st.reset() }
            var out: [(id: String, topic: String, payload: [UInt8])] = []
            while (try? st.step()) == true {
                guard let id = st.text(0), let topic = st.text(1) else { continue }
                out.append((id, topic, st.blob(2)))
            }
            return out
        }
    }

    /// The highest snooze number recorded under `prefix` (`snoozed/<key>/<due>/<occurrence>/`),
    /// sent or received; 0 when none. Compared as a prefix, not with LIKE, since keys may hold `%`.
    func lastSnooze(prefix: String) -> Int {
        db.withLock { s in
            guard let st = s?.seenWithPrefix else { return 0 }
            defer { st.reset() }
            st.bind(1, prefix)
            var best = 0
            while (try? st.step()) == true {
                guard let id = st.text(0) else { continue }
                if let n = Int(id.dropFirst(prefix.count)) { best = max(best, n) }
            }
            return best
        }
    }

    /// Records a change of a fleet notification (`shared`: scheduled and shared, false: cancelled
    /// or now this machine's own) made at `changed` (unix microseconds).
    func recordFleet(key: String, shared: Bool, changed: Int64) {
        db.withLock { s in
            guard let st = s?.recordFleet else { return }
            st.bind(1, key); st.bind(2, Int64(shared ? 1 : 0)); st.bind(3, changed)
            try? st.run()
        }
    }

    /// Every key's fleet state, for the start.
    func fleetKeys() -> [String: (shared: Bool, changed: Int64)] {
        db.withLock { s in
            guard let st = s?.fleetKeys else { return [:] }
            defer { st.reset() }
            var out: [String: (shared: Bool, changed: Int64)] = [:]
            while (try? st.step()) == true {
                guard let k = st.text(0) else { continue }
                out[k] = (st.int64(1) != 0, st.int64(2))
            }
            return out
        }
    }
}
