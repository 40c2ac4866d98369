import TocsinTime
import TocsinSystem

/// The `history` table: entries appended inside the transactions of the changes they describe,
/// read newest first, pruned a bounded batch at a time. Confined to the store thread, like `StateStore`.
final class HistoryTable {
    /// Created with the other tables (`StateStore.migrate`); additive, so older state files gain it.
    static let schema = """
        CREATE TABLE IF NOT EXISTS history(
          id INTEGER PRIMARY KEY, time INTEGER NOT NULL, event TEXT NOT NULL, key TEXT NOT NULL, title TEXT NOT NULL,
          backends TEXT, due INTEGER, until_time INTEGER, occurrence INTEGER, late INTEGER, count INTEGER);
        CREATE INDEX IF NOT EXISTS history_time ON history(time);
        CREATE INDEX IF NOT EXISTS history_key ON history(key, id);
        """

    private let insertStmt: SQLiteStatement
    private let unrecordStmt: SQLiteStatement
    private let pruneAgeStmt: SQLiteStatement
    private let pruneCountStmt: SQLiteStatement
    private let queryStmt: SQLiteStatement

    init(_ db: SQLiteDatabase) throws(StoreError) {
        // Title and, when the center does not know them, backends come from the notification's row.
        insertStmt = try db.prepare("""
            INSERT INTO history(time, event, key, title, backends, due, until_time, occurrence, late, count)
            VALUES (?1, ?2, ?3, COALESCE((SELECT title FROM notification WHERE key=?3), ''),
                    COALESCE(?4, (SELECT backends FROM notification WHERE key=?3), ''), ?5, ?6, ?7, ?8, ?9)
            """)
        // The newest match, found through `history_key` (key, id).
        unrecordStmt = try db.prepare("""
            DELETE FROM history WHERE id =
              (SELECT max(id) FROM history WHERE key = ?1 AND event = 'fired' AND occurrence = ?2 AND due = ?3)
            """)
        pruneAgeStmt = try db.prepare("DELETE FROM history WHERE id IN (SELECT id FROM history WHERE time < ?1 ORDER BY time LIMIT ?2)")
        pruneCountStmt = try db.prepare("""
            DELETE FROM history WHERE id IN
              (SELECT id FROM history WHERE id <= (SELECT max(id) FROM history) - ?1 ORDER BY id LIMIT ?2)
            """)
        queryStmt = try db.prepare("""
            SELECT time, event, key, title, backends, due, until_time, occurrence, late, count FROM history
            WHERE (?1 IS NULL OR key = ?1) AND time >= ?2 ORDER BY id DESC LIMIT ?3
            """)
    }

    func insert(_ e: HistoryEvent) throws(StoreError) {
        let s = insertStmt
        s.bind(1, e.time.microseconds)
        s.bind(2, e.kind.rawValue)
        s.bind(3, e.key)
        s.bind(4, e.backends.map(ListCodec.encode))
        s.bind(5, e.due?.microseconds)
        s.bind(6, e.until?.microseconds)
        s.bind(7, e.occurrence.map(Int64.init))
        s.bind(8, e.late.map { $0 ? 1 : 0 })
        s.bind(9, e.count.map(Int64.init))
        try s.run()
    }

    func unrecordFired(key: String, occurrence: UInt32, due: Instant) throws(StoreError) {
        unrecordStmt.bind(1, key)
        unrecordStmt.bind(2, Int64(occurrence))
        unrecordStmt.bind(3, due.microseconds)
        try unrecordStmt.run()
    }

    func prune(olderThan: Instant, keep: Int, batch: Int) throws(StoreError) {
        pruneAgeStmt.bind(1, olderThan.microseconds)
        pruneAgeStmt.bind(2, Int64(batch))
        try pruneAgeStmt.run()
        pruneCountStmt.bind(1, Int64(keep))
        pruneCountStmt.bind(2, Int64(batch))
        try pruneCountStmt.run()
    }

    func query(_ q: HistoryQuery) throws(StoreError) -> [HistoryEvent] {
        let s = queryStmt
        s.bind(1, q.key)
        s.bind(2, q.since?.microseconds ?? Int64.min)
        s.bind(3, Int64(min(max(q.limit, 0), HistoryQuery.maxLimit)))
        defer { s.reset() }
        var out: [HistoryEvent] = []
        while try s.step() {
            // A row whose event name this version does not know is left out rather than misread.
            guard let time = s.int(0), let kind = s.text(1).flatMap(HistoryEvent.Kind.init(rawValue:)) else { continue }
            var e = HistoryEvent(kind: kind, time: Instant(microseconds: time), key: s.text(2) ?? "", title: s.text(3) ?? "")
            e.backends = ListCodec.decode(s.text(4) ?? "") ?? []
            e.due = s.int(5).map { Instant(microseconds: $0) }
            e.until = s.int(6).map { Instant(microseconds: $0) }
            e.occurrence = s.int(7).map { UInt32(clamping: $0) }
            e.late = s.int(8).map { $0 != 0 }
            e.count = s.int(9).map { UInt32(clamping: $0) }
            out.append(e)
        }
        return out
    }
}
