import Synchronization
import TocsinModel
import TocsinTime
#if canImport(Glibc)
import Glibc
import TocsinSystem
#endif

/// The durable state: one row per notification, written with O(log n) single-row statements.
///
/// WAL mode with `synchronous=FULL`: a commit that returned survives `kill -9` and power loss,
/// so a D-Bus reply sent after it means durable. Confined to one thread (`SQLiteStore`'s).
final class StateStore {
    /// Internal so the quiet-hours tables (`QuietStore.swift`) share the connection and its transactions.
    let db: SQLiteDatabase
    let path: String
    private let lock: StateDirectoryLock
    private var upsertStmt: SQLiteStatement
    private var progressStmt: SQLiteStatement
    private var alertStmt: SQLiteStatement
    private var pendingStmt: SQLiteStatement
    private var deleteStmt: SQLiteStatement
    private var cancelStmt: SQLiteStatement
    private var keepInfoStmt: SQLiteStatement
    private var readStmt: SQLiteStatement
    private var recentStmt: SQLiteStatement
    private var keysStmt: SQLiteStatement
    // Prepared once: `exec` compiled each of them again for every group commit.
    private var beginStmt: SQLiteStatement
    private var commitStmt: SQLiteStatement
    private let history: HistoryTable
    private var inTransaction = false
    private var keptSinceTrim = 0
    /// For point reads; start-up's scans make their own.
    private var decoder: RowDecoder
    let zones: ZoneCache

    /// 2: urgency and missed policy stored by name (1 stored their `allCases` index).
    /// 3: the `wake` column.
    /// 4: the `base` column, for every trigger (3 kept a calendar's in `trigger_a`, and none for
    /// the others, so a restart counted an `at`, `every` or `remind_before` from its first
    /// occurrence and fired the ones skipped when it was scheduled).
    static let schemaVersion = 4
    /// How many finished notifications' user_info is kept for late popup clicks.
    static let recentLimit = 1024

    /// Opens (creating if needed) `directory/state.sqlite3`. The directory is created 0700 and must
    /// not be writable by others; files are created 0600.
    /// Makes the database at `path`: schema written and durable under `path.new`, then renamed.
    /// Created 0600 here rather than under a narrowed umask: the umask is the whole process's, so
    /// narrowing it races with other threads creating files (and with children inheriting it).
    /// SQLite gives the -wal and -shm files the database file's mode.
    static func create(_ path: String, in directory: String) throws(StoreError) {
        let fresh = path + ".new"
        for suffix in ["", "-wal", "-shm", "-journal"] { unlink(fresh + suffix) }
        let fd = open(fresh, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { throw StoreError(.failed, "cannot create state database \(fresh): \(String(cString: strerror(errno)))") }
        close(fd)
        do {
            // Closed at the end of the scope: SQLite checkpoints the WAL into the file and removes it.
            let db = try SQLiteDatabase(path: fresh)
            try db.exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; PRAGMA foreign_keys=OFF;")
            try StateStore.migrate(db)
        }
        guard rename(fresh, path) == 0 else {
            throw StoreError(.failed, "cannot move the new state database into place at \(path): \(String(cString: strerror(errno)))")
        }
        let dir = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if dir >= 0 { _ = fsync(dir); close(dir) }
    }

    init(directory: String, zones: ZoneCache) throws(StoreError) {
        self.zones = zones
        decoder = RowDecoder(zones: zones)
        try StateStore.prepareDirectory(directory)
        lock = try StateDirectoryLock(directory: directory)
        path = directory + "/state.sqlite3"
        // A new database is made under another name and renamed into place once its schema is
        // durable, so `state.sqlite3` is never empty unless something truncated it. An empty one
        // is refused like any other damage: taken as a new, empty schedule it silently lost
        // every pending notification.
        var st = stat()
        if lstat(path, &st) != 0 {
            guard errno == ENOENT else {
                throw StoreError(.failed, "cannot read state database \(path): \(String(cString: strerror(errno)))")
            }
            try StateStore.create(path, in: directory)
        } else if (st.st_mode & S_IFMT) == S_IFREG, st.st_size == 0 {
            throw StoreError(.corrupt, "state database \(path) is empty (0 bytes), so it was truncated; move it aside to start with an empty schedule, or restore a backup")
        }
        // A WAL with frames left in it: the last stop was not clean (a crash, `kill -9`, power).
        var wal = stat()
        let uncleanStop = lstat(path + "-wal", &wal) == 0 && wal.st_size > 0
        db = try SQLiteDatabase(path: path)
        do {
            try StateStore.checkOwnership(db)
            try StateStore.refuseNewerSchema(db)
            try db.exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; PRAGMA foreign_keys=OFF;")
            try StateStore.migrate(db)
            try StateStore.checkSmallTables(db, wholeHistory: uncleanStop)
        } catch {
            if error.code == .corrupt || error.message.contains("not a database") {
                throw StoreError(.corrupt, "state database \(path) is damaged or not a Tocsin database (\(error.message)); move it aside to start with an empty schedule, or restore a backup")
            }
            throw error
        }
        upsertStmt = try db.prepare("""
            INSERT OR REPLACE INTO notification(key, source, fingerprint, title, body, trigger_kind, trigger_a, trigger_b,
              trigger_c, trigger_d, trigger_text, zone, backends, urgency, icon, category, sound, actions, user_info,
              missed, max_late, last_number, last_instant, last_offset, alert, alert_a, alert_b, cancelled,
              pending_backends, pending_number, pending_instant, pending_offset, pending_due, wake, base)
            VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22,
              ?23, ?24, ?25, ?26, ?27, ?28, ?29, ?30, ?31, ?32, ?33, ?34, ?35)
            """)
        progressStmt = try db.prepare("""
            UPDATE notification SET last_number=?2, last_instant=?3, last_offset=?4, alert=?5, alert_a=?6, alert_b=?7,
              pending_backends=?8, pending_number=?9, pending_instant=?10, pending_offset=?11, pending_due=?12 WHERE key=?1
            """)
        alertStmt = try db.prepare("UPDATE notification SET alert=?2, alert_a=?3, alert_b=?4 WHERE key=?1")
        pendingStmt = try db.prepare("UPDATE notification SET pending_backends=?2, pending_number=?3, pending_instant=?4, pending_offset=?5, pending_due=?6 WHERE key=?1")
        deleteStmt = try db.prepare("DELETE FROM notification WHERE key=?1")
        cancelStmt = try db.prepare("UPDATE notification SET cancelled=1, alert=0, pending_backends=NULL WHERE key=?1")
        keepInfoStmt = try db.prepare("INSERT OR REPLACE INTO recent(key, user_info) SELECT key, user_info FROM notification WHERE key=?1 AND user_info != ''")
        readStmt = try db.prepare("SELECT \(RowDecoder.columns) FROM notification WHERE key=?1")
        recentStmt = try db.prepare("SELECT user_info FROM recent WHERE key=?1")
        keysStmt = try db.prepare("SELECT key FROM notification WHERE key > ?1 ORDER BY key LIMIT ?2")
        beginStmt = try db.prepare("BEGIN IMMEDIATE")
        commitStmt = try db.prepare("COMMIT")
        history = try HistoryTable(db)
    }

    private static func prepareDirectory(_ dir: String) throws(StoreError) {
        var st = stat()
        if stat(dir, &st) != 0 {
            // mkdir -p with 0700 for the leaf; parents get 0755 like XDG dirs usually have.
            let comps = dir.split(separator: "/", omittingEmptySubsequences: true)
            var partial = dir.hasPrefix("/") ? "" : "."
            for (i, comp) in comps.enumerated() {
                partial += "/" + comp
                if stat(partial, &st) == 0 { continue }
                let mode: mode_t = i == comps.count - 1 ? 0o700 : 0o755
                if mkdir(partial, mode) != 0 && errno != EEXIST {
                    throw StoreError(.cannotOpen, "cannot create state directory \(partial): \(String(cString: strerror(errno)))")
                }
            }
            guard stat(dir, &st) == 0 else {
                throw StoreError(.cannotOpen, "cannot create state directory \(dir): \(String(cString: strerror(errno)))")
            }
        }
        guard (st.st_mode & S_IFMT) == S_IFDIR else {
            throw StoreError(.cannotOpen, "state directory \(dir) is not a directory")
        }
        if st.st_mode & 0o022 != 0 {
            throw StoreError(.unsafeDirectory, "state directory \(dir) is writable by group or others (mode \(String(st.st_mode & 0o777, radix: 8))); run: chmod 700 \(dir)")
        }
    }

    /// Someone else's SQLite file at our path: switching it to WAL or adding our tables to it
    /// would be a silent change, so this runs before anything writes.
    private static func checkOwnership(_ db: SQLiteDatabase) throws(StoreError) {
        let tables = try db.prepare("SELECT name FROM sqlite_master WHERE type='table'")
        var names: Set<String> = []
        while try tables.step() { if let n = tables.text(0) { names.insert(n) } }
        if !names.isEmpty && !names.contains("meta") {
            throw StoreError(.corrupt, "it has tables (\(names.sorted().prefix(5).joined(separator: ", "))) but none of Tocsin's")
        }
    }

    /// The tables start-up does not read whole. The notifications are all loaded at every start,
    /// so a damaged page there fails the load; these are read piecemeal (quiet hours at start,
    /// history and recent user info on demand), so a page lost from them (a truncated file, with
    /// a WAL that still held the notifications' pages) went unnoticed: the daemon started, and
    /// every write that touched them failed from then on. `quick_check` of one table reads only
    /// its pages and its indexes': milliseconds at the default history size (10,000 events). The
    /// history may be configured up to 10,000,000 events, a gigabyte to read at every start, so
    /// beyond `historyCheckedWhole` rows it is checked only after a stop that was not clean,
    /// when damage is likeliest.
    private static func checkSmallTables(_ db: SQLiteDatabase, wholeHistory: Bool) throws(StoreError) {
        var tables = ["meta", "recent", "quiet_state", "quiet_held"]
        let span = try db.prepare("SELECT coalesce(max(id) - min(id), 0) FROM history")
        let small = try span.step() && span.int64(0) <= historyCheckedWhole
        if wholeHistory || small { tables.append("history") }
        for table in tables {
            let check = try db.prepare("PRAGMA quick_check('\(table)')")
            var problems: [String] = []
            while try check.step() {
                if let line = check.text(0), line != "ok" { problems.append(line) }
            }
            if !problems.isEmpty {
                throw StoreError(.corrupt, "table \(table): \(problems.prefix(3).joined(separator: "; "))")
            }
        }
    }

    /// Events of history checked at every start (`checkSmallTables`).
    static let historyCheckedWhole: Int64 = 200_000

    /// A later release's file, after a downgrade: not damage, and moving it aside (what the
    /// damage message advises) would throw the schedule away. Read before anything here writes
    /// to the file (`migrate` creates what is missing).
    private static func refuseNewerSchema(_ db: SQLiteDatabase) throws(StoreError) {
        let meta = try db.prepare("SELECT count(*) FROM sqlite_master WHERE type='table' AND name='meta'")
        guard try meta.step(), meta.int64(0) > 0 else { return }
        let q = try db.prepare("SELECT value FROM meta WHERE name='schema_version'")
        guard try q.step(), let text = q.text(0), let v = Int(text), v > schemaVersion else { return }
        throw StoreError(.failed, "state database \(db.path) was written by a newer Tocsin (schema version \(v); this one reads up to \(schemaVersion)): run that version again, or restore a backup made with this one; keep the file, it holds your schedule")
    }

    private static func migrate(_ db: SQLiteDatabase) throws(StoreError) {
        try db.exec("""
            CREATE TABLE IF NOT EXISTS meta(name TEXT PRIMARY KEY, value TEXT NOT NULL);
            CREATE TABLE IF NOT EXISTS notification(
              key TEXT PRIMARY KEY, source INTEGER NOT NULL, fingerprint TEXT NOT NULL,
              title TEXT NOT NULL, body TEXT NOT NULL,
              trigger_kind INTEGER NOT NULL, trigger_a INTEGER, trigger_b INTEGER, trigger_c INTEGER, trigger_d INTEGER,
              trigger_text TEXT, zone TEXT NOT NULL,
              backends TEXT, urgency TEXT NOT NULL, icon TEXT, category TEXT, sound TEXT,
              actions TEXT NOT NULL, user_info TEXT NOT NULL, missed TEXT NOT NULL, max_late INTEGER,
              last_number INTEGER, last_instant INTEGER, last_offset INTEGER,
              alert INTEGER NOT NULL DEFAULT 0, alert_a INTEGER, alert_b INTEGER,
              cancelled INTEGER NOT NULL DEFAULT 0,
              pending_backends TEXT, pending_number INTEGER, pending_instant INTEGER, pending_offset INTEGER, pending_due INTEGER,
              wake INTEGER NOT NULL DEFAULT 0, base INTEGER
            ) WITHOUT ROWID;
            CREATE TABLE IF NOT EXISTS recent(key TEXT PRIMARY KEY, user_info TEXT NOT NULL, seq INTEGER);
            \(StateStore.quietSchema)
            \(HistoryTable.schema)
            INSERT OR IGNORE INTO meta(name, value) VALUES ('schema_version', '\(schemaVersion)');
            """)
        let q = try db.prepare("SELECT value FROM meta WHERE name='schema_version'")
        guard try q.step(), let text = q.text(0), let v = Int(text) else {
            throw StoreError(.corrupt, "state database \(db.path) has an unknown schema version")
        }
        q.reset()
        var version = v
        if version == 1 {
            // Version 1 stored urgency and the missed policy as indexes into their cases as then
            // declared (low, normal, critical; skip, fire-once, fire-all); names survive reordering.
            try db.exec("""
                BEGIN IMMEDIATE;
                UPDATE notification SET
                  urgency = CASE urgency WHEN 0 THEN 'low' WHEN 2 THEN 'critical' ELSE 'normal' END,
                  missed = CASE missed WHEN 0 THEN 'skip' WHEN 2 THEN 'fire-all' ELSE 'fire-once' END;
                UPDATE meta SET value = '2' WHERE name = 'schema_version';
                COMMIT;
                """)
            version = 2
        }
        if version == 2 {
            // Version 2 had no `wake` column: every stored notification keeps wake = false.
            try db.exec("""
                BEGIN IMMEDIATE;
                ALTER TABLE notification ADD COLUMN wake INTEGER NOT NULL DEFAULT 0;
                UPDATE meta SET value = '3' WHERE name = 'schema_version';
                COMMIT;
                """)
            version = 3
        }
        if version == 3 {
            // Version 3 kept only a calendar's base (in trigger_a). Other rows keep no base: they
            // are restored as before, from their first occurrence.
            try db.exec("""
                BEGIN IMMEDIATE;
                ALTER TABLE notification ADD COLUMN base INTEGER;
                UPDATE notification SET base = trigger_a, trigger_a = NULL WHERE trigger_kind = 3;
                UPDATE meta SET value = '4' WHERE name = 'schema_version';
                COMMIT;
                """)
            version = 4
        }
        if version != schemaVersion {
            throw StoreError(.corrupt, "state database \(db.path) has an unknown schema version \(v)")
        }
    }

    // MARK: Transactions

    /// Runs `body` in one transaction: all of it is durable when this returns, or none of it.
    func transaction<T>(_ body: () throws(StoreError) -> T) throws(StoreError) -> T {
        if inTransaction { return try body() }
        try beginStmt.run()
        inTransaction = true
        do {
            let v = try body()
            try commitStmt.run()
            inTransaction = false
            return v
        } catch {
            _ = try? db.exec("ROLLBACK")
            inTransaction = false
            throw error
        }
    }

    // MARK: Writes

    func save(_ e: StoredNotification) throws(StoreError) {
        let s = upsertStmt
        let n = e.notification
        let pending = e.pending
        s.bind(1, n.key)
        s.bind(2, n.source == .config ? 1 : 0)
        s.bind(3, n.fingerprint)
        s.bind(4, n.title)
        s.bind(5, n.body)
        let t = TriggerColumns(n.trigger)
        s.bind(6, t.kind); s.bind(7, t.a); s.bind(8, t.b); s.bind(9, t.c); s.bind(10, t.d)
        s.bind(11, t.text)
        s.bind(12, n.timezone)
        s.bind(13, n.backends.map(ListCodec.encode))
        s.bind(14, n.urgency.rawValue)
        s.bind(15, n.icon); s.bind(16, n.category); s.bind(17, n.sound)
        s.bind(18, ListCodec.encode(n.actions.flatMap { [$0.id, $0.label] }))
        s.bind(19, ListCodec.encode(n.userInfo.sorted { $0.key < $1.key }.flatMap { [$0.key, $0.value] }))
        s.bind(20, n.missed.rawValue)
        s.bind(21, n.maxLate?.microseconds)
        s.bind(22, e.last.map { Int64($0.number) }); s.bind(23, e.last?.instant.microseconds); s.bind(24, e.last?.offset?.microseconds)
        let a = AlertColumns(e.alert)
        s.bind(25, a.kind); s.bind(26, a.a); s.bind(27, a.b)
        s.bind(28, e.cancelled ? 1 : 0)
        bindPending(s, from: 29, pending)
        s.bind(34, n.wake ? 1 : 0)
        s.bind(35, e.base?.microseconds)
        try s.run()
    }

    private func bindPending(_ s: SQLiteStatement, from i: Int32, _ p: PendingDelivery?) {
        s.bind(i, p.map { ListCodec.encode($0.remaining) })
        s.bind(i + 1, p.map { Int64($0.occurrence.number) })
        s.bind(i + 2, p?.occurrence.instant.microseconds)
        s.bind(i + 3, p?.occurrence.offset?.microseconds)
        s.bind(i + 4, p?.due.microseconds)
    }

    /// After a firing: what was handled last and the alert state, one small UPDATE.
    func saveProgress(key: String, last: Occurrence?, alert: AlertState, pending: PendingDelivery?) throws(StoreError) {
        let s = progressStmt
        s.bind(1, key)
        s.bind(2, last.map { Int64($0.number) }); s.bind(3, last?.instant.microseconds); s.bind(4, last?.offset?.microseconds)
        let a = AlertColumns(alert)
        s.bind(5, a.kind); s.bind(6, a.a); s.bind(7, a.b)
        bindPending(s, from: 8, pending)
        try s.run()
    }

    func saveAlert(key: String, _ alert: AlertState) throws(StoreError) {
        let s = alertStmt
        s.bind(1, key)
        let a = AlertColumns(alert)
        s.bind(2, a.kind); s.bind(3, a.a); s.bind(4, a.b)
        try s.run()
    }

    func savePending(key: String, _ p: PendingDelivery?) throws(StoreError) {
        let s = pendingStmt
        s.bind(1, key)
        bindPending(s, from: 2, p)
        try s.run()
    }

    func delete(key: String, keepUserInfo: Bool) throws(StoreError) {
        if keepUserInfo {
            keepInfoStmt.bind(1, key)
            try keepInfoStmt.run()
            keptSinceTrim += 1
            if keptSinceTrim >= Self.recentLimit {
                keptSinceTrim = 0
                try db.exec("DELETE FROM recent WHERE rowid NOT IN (SELECT rowid FROM recent ORDER BY rowid DESC LIMIT \(Self.recentLimit))")
            }
        }
        deleteStmt.bind(1, key)
        try deleteStmt.run()
    }

    func apply(_ op: StoreOp) throws(StoreError) {
        switch op {
        case .upsert(let row): try save(row)
        case .delete(let key, let keep): try delete(key: key, keepUserInfo: keep)
        case .progress(let key, let last, let alert, let pending): try saveProgress(key: key, last: last, alert: alert, pending: pending)
        case .alert(let key, let alert): try saveAlert(key: key, alert)
        case .pending(let key, let p): try savePending(key: key, p)
        case .markCancelled(let key): try markCancelled(key: key)
        case .record(let entry): try history.insert(entry)
        case .unrecordFired(let key, let occurrence, let due): try history.unrecordFired(key: key, occurrence: occurrence, due: due)
        case .pruneHistory(let before, let keep, let batch): try history.prune(olderThan: before, keep: keep, batch: batch)
        case .quietSwitch(let o): try saveQuietSwitch(o)
        case .quietActive(let a): try saveQuietActive(a)
        case .hold(let h): try saveHeld(h)
        case .unhold(let ids): try deleteHeld(ids)
        }
    }

    func history(_ q: HistoryQuery) throws(StoreError) -> [HistoryEvent] { try history.query(q) }

    func markCancelled(key: String) throws(StoreError) {
        cancelStmt.bind(1, key)
        try cancelStmt.run()
    }

    // MARK: Read

    func read(_ keys: [String]) throws(StoreError) -> [String: Notification] {
        var out: [String: Notification] = [:]
        out.reserveCapacity(keys.count)
        for key in keys {
            readStmt.bind(1, key)
            defer { readStmt.reset() }
            if try readStmt.step(), case .success(let row) = decoder.row(readStmt) { out[key] = row.notification }
        }
        return out
    }

    /// Keys after `key` in the primary key's order (bytes of UTF-8), from its index.
    func keys(after key: String, limit: Int) throws(StoreError) -> [String] {
        keysStmt.bind(1, key)
        keysStmt.bind(2, Int64(limit))
        defer { keysStmt.reset() }
        var out: [String] = []
        while try keysStmt.step() { if let k = keysStmt.text(0) { out.append(k) } }
        return out
    }

    func userInfo(_ key: String) throws(StoreError) -> [String: String]? {
        if let n = try read([key])[key] { return n.userInfo }
        recentStmt.bind(1, key)
        defer { recentStmt.reset() }
        guard try recentStmt.step() else { return nil }
        return RowDecoder.pairs(recentStmt.text(0) ?? "").reduce(into: [:]) { $0[$1.0] = $1.1 }
    }
}
