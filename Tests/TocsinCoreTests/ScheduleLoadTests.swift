import Synchronization
import Testing
import TocsinConfig
@testable import TocsinCore
import TocsinTesting
import TocsinTime
import TocsinSystem
import TocsinModel

/// Start-up's scan of the state table, on one thread and split over two (what a large table
/// gets): every row arrives once, decoded the same either way.
@Suite("Loading the persisted schedule")
struct ScheduleLoadTests {
    /// Rows of every shape the machine restores: each trigger kind, config rows with their
    /// fingerprint, explicit backends, fired and ringing rows, claimed deliveries, cancelled rows.
    static func rows(_ n: Int) throws -> [StoredNotification] {
        let berlin = try ZoneInfoDirectory().rules(named: "Europe/Berlin")
        let weekdays = try CalendarSpec.parse("Mon..Fri 07:30")
        return (0..<n).map { i in
            let trigger: Trigger = switch i % 4 {
            case 0: .at(t0 + .seconds(Int64(i)))
            case 1: .every(period: .minutes(15), starting: t0, count: i % 8 == 1 ? 5 : nil, until: nil)
            case 2: .calendar(weekdays, zone: berlin)
            default: .remindBefore(event: t0 + .hours(48), offsets: [.hours(24), .hours(3)])
            }
            var n = Notification(key: "k\(i)", title: "title \(i)", trigger: trigger, backends: i % 5 == 0 ? ["log", "spy"] : nil,
                                 missed: i % 3 == 0 ? .skip : .fireOnce, maxLate: i % 7 == 0 ? .minutes(5) : nil,
                                 timezone: i % 4 == 2 ? "Europe/Berlin" : "UTC", source: i % 6 == 0 ? .config : .runtime,
                                 fingerprint: "fp\(i)")
            n.userInfo = ["i": "\(i)"]
            let last = i % 9 == 0 ? Occurrence(instant: t0, number: 1) : nil
            let alert: AlertState = i % 11 == 0 ? .ringing(since: t0, rings: 2) : (i % 13 == 0 ? .snoozed(until: t0 + .minutes(9)) : .idle)
            let pending = i % 17 == 0 ? PendingDelivery(occurrence: Occurrence(instant: t0, number: 1), due: t0, remaining: ["spy"]) : nil
            return StoredNotification(notification: n, last: last, alert: alert, cancelled: i % 19 == 0, pending: pending,
                                      base: i % 4 == 2 ? t0 : nil)
        }
    }

    /// Every chunk `loadSchedules` emits, in arrival order.
    static func load(_ store: StateStore, chunkSize: Int, parallelFrom: Int) throws -> [LoadedState] {
        let chunks = Mutex<[LoadedState]>([])
        try store.loadSchedules(chunkSize: chunkSize, parallelFrom: parallelFrom) { c in chunks.withLock { $0.append(c) } }
        return chunks.withLock { $0 }
    }

    @Test("a table scanned in two halves yields every row once, as one scan decodes it", arguments: [1, 7, 1000])
    func twoHalves(chunkSize: Int) throws {
        let dir = TemporaryDirectory()
        let store = try StateStore(directory: dir.path, zones: ZoneCache(directory: ZoneInfoDirectory()))
        let stored = try Self.rows(500)
        try store.transaction { () throws(StoreError) in for r in stored { try store.apply(.upsert(r)) } }

        let single = try Self.load(store, chunkSize: chunkSize, parallelFrom: .max)
        let split = try Self.load(store, chunkSize: chunkSize, parallelFrom: 10)
        for (name, chunks) in [("one scan", single), ("two halves", split)] {
            #expect(chunks.first?.totalRows == 500, "\(name): the first chunk carries the count")
            #expect(chunks.first?.rows.isEmpty == true, "\(name): the first chunk holds no rows")
            #expect(chunks.allSatisfy { $0.rows.count <= chunkSize }, "\(name): a chunk is at most \(chunkSize) rows")
            #expect(chunks.allSatisfy { $0.problems.isEmpty }, "\(name): no problems")
            let keys = chunks.flatMap { $0.rows.map(\.key) }
            #expect(keys.count == 500 && Set(keys).count == 500, "\(name): every row once")
        }
        let byKey = Dictionary(uniqueKeysWithValues: single.flatMap(\.rows).map { ($0.key, $0) })
        for row in split.flatMap(\.rows) { #expect(byKey[row.key] == row, "row \(row.key)") }
        // The decoder against what was written, for the rows whose trigger compares as written
        // (a calendar's zone rules are resolved on reading).
        for s in stored where !s.notification.trigger.isCalendar {
            #expect(byKey[s.notification.key] == RestoredRow(s), "row \(s.notification.key)")
        }
    }

    /// Rows of one app repeat their backend list; an explicitly empty one is zero bytes, which
    /// the comparison with the row before must handle.
    @Test("rows in a run with the same backend list, empty or not, each decode to it")
    func repeatedBackends() throws {
        let dir = TemporaryDirectory()
        let store = try StateStore(directory: dir.path, zones: ZoneCache(directory: ZoneInfoDirectory()))
        let lists: [[String]?] = [[], [], ["log"], ["log"], nil, nil, [], ["log", "spy"], ["log", "spy"], []]
        try store.transaction { () throws(StoreError) in
            for (i, list) in lists.enumerated() {
                try store.apply(.upsert(StoredNotification(notification: Notification(
                    key: "r\(i)", title: "t", trigger: .at(t0 + .seconds(60)), backends: list))))
            }
        }
        let rows = try Self.load(store, chunkSize: 4, parallelFrom: .max).flatMap(\.rows)
        #expect(rows.map(\.key) == lists.indices.map { "r\($0)" })
        for (row, list) in zip(rows, lists) { #expect(row.backends == list, "row \(row.key)") }
    }

    @Test("an empty table yields only the count")
    func empty() throws {
        let dir = TemporaryDirectory()
        let store = try StateStore(directory: dir.path, zones: ZoneCache(directory: ZoneInfoDirectory()))
        let chunks = try Self.load(store, chunkSize: 16, parallelFrom: 0)
        #expect(chunks.count == 1)
        #expect(chunks.first?.totalRows == 0)
    }
}

extension Trigger {
    fileprivate var isCalendar: Bool { if case .calendar = self { true } else { false } }
}
