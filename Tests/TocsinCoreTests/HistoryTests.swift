import Testing
import TocsinConfig
@testable import TocsinCore
import TocsinTesting
import TocsinTime
import TocsinModel

/// History: what `HistoryLog` adds to a transaction (as operations), and what the center and the
/// SQLite store make of it (virtual clock, spy backends, a real state file).
@Suite("History")
struct HistoryTests {
    static func planned(_ key: String, ring: UInt32 = 1) -> PlannedDelivery {
        PlannedDelivery(key: key, occurrence: Occurrence(instant: t0, number: 3), due: t0, fired: t0 + .seconds(1),
                        reason: .scheduled, targets: ["log"], isAlarm: ring > 1, ring: ring)
    }

    @Test("a firing's entry shares the claim's transaction; later rings of an alarm add none")
    func firingEntries() throws {
        let log = HistoryLog(retention: HistoryRetention())
        let claim = StoreOp.progress(key: "tea", last: nil, alert: .idle, pending: nil)
        let ops = log.ops([.persist(claim), .deliver(Self.planned("tea")), .deliver(Self.planned("wake", ring: 2))], now: t0)
        try #require(ops.count == 3, "\(ops)")
        #expect(ops[0] == claim)
        #expect(ops[1] == .record(HistoryEvent(kind: .fired, time: t0 + .seconds(1), key: "tea", backends: ["log"], due: t0,
                                               occurrence: 3, late: false)))
        #expect(ops[2] == .pruneHistory(olderThan: t0 - .hours(30 * 24), keep: 10_000, batch: 1 + HistoryLog.pruneBatch))
    }

    /// Regression: snoozing the reminder that had just popped up answered "no notification with
    /// key", as for a key never used: the engine forgets a one-shot once it is done.
    @Test("snoozing a key that is done says what became of it, from the history; an unknown key is still unknown")
    func snoozeSaysWhatBecameOfIt() async throws {
        let h = try await Harness()
        try await h.center.schedule(spec("tea", at(10)))
        try await h.center.schedule(spec("cake", at(60)))
        await h.advance(10)
        await h.center.waitForDeliveries()
        #expect(try await h.center.cancel("cake"))
        let rows: [(key: String, message: String)] = [
            ("tea", "notification 'tea' fired at 2026-03-02T09:00:10Z and is done: only a pending or ringing one can be snoozed; to be reminded again, schedule it again"),
            ("cake", "notification 'cake' was cancelled at 2026-03-02T09:00:10Z: only a pending or ringing one can be snoozed; to be reminded again, schedule it again"),
            ("nope", "no notification with key 'nope'"),
        ]
        for row in rows {
            do {
                _ = try await h.center.snooze(row.key, for: .minutes(10))
                Issue.record("\(row.key): snoozed")
            } catch {
                #expect(error.code == .notFound, "\(row.key)")
                #expect(error.message == row.message, "\(row.key)")
                #expect(error.field == "key", "\(row.key)")
            }
        }
    }

    @Test("a cancellation's entry goes before the delete, so the store can still read the title")
    func cancelBeforeDelete() {
        let log = HistoryLog(retention: HistoryRetention())
        let ops = log.ops([.persist(.delete(key: "tea", keepUserInfo: false)),
                           .withdraw(key: "tea", backends: ["popup"], reason: .cancelled),
                           .emit(.cancelled(key: "tea"))], now: t0)
        #expect(ops.first == .record(HistoryEvent(kind: .cancelled, time: t0, key: "tea", backends: ["popup"])), "\(ops)")
        #expect(ops.dropFirst().first == .delete(key: "tea", keepUserInfo: false))
    }

    @Test("every kind of event is recorded; action clicks and delivery failures are not")
    func kinds() {
        let log = HistoryLog(retention: HistoryRetention())
        let events: [CenterEvent] = [.acknowledged(key: "a"), .snoozed(key: "a", until: t0 + .minutes(5)),
                                     .missed(key: "a", due: t0, count: 2), .unanswered(key: "a", rings: 4),
                                     .actionInvoked(key: "a", action: "x", userInfo: [:]),
                                     .deliveryFailed(key: "a", backend: "log", message: "no")]
        let kinds = log.ops(events.map { .emit($0) }, now: t0).compactMap { op -> HistoryEvent.Kind? in
            if case .record(let e) = op { return e.kind }
            return nil
        }
        #expect(kinds == [.acknowledged, .snoozed, .missed, .unanswered])
    }

    @Test("a claim dropped before its instant takes its firing's entry back, in the same transaction, even with recording off")
    func unclaimed() {
        let drop = MachineAction.unclaimed(key: "tea", occurrence: Occurrence(instant: t0, number: 3), due: t0)
        let back = StoreOp.unrecordFired(key: "tea", occurrence: 3, due: t0)
        let on = HistoryLog(retention: HistoryRetention()).ops([.persist(.delete(key: "tea", keepUserInfo: false)), drop], now: t0)
        #expect(on == [.delete(key: "tea", keepUserInfo: false), back], "no entry of its own, so no pruning either")
        #expect(HistoryLog(retention: HistoryRetention(maxEntries: 0)).ops([drop], now: t0) == [back])
    }

    @Test("history_max_entries = 0 records nothing")
    func disabled() {
        let log = HistoryLog(retention: HistoryRetention(maxEntries: 0))
        let ops = log.ops([.deliver(Self.planned("tea")), .emit(.acknowledged(key: "tea"))], now: t0)
        #expect(ops.isEmpty, "\(ops)")
    }

    @Test("firing, snooze, acknowledge and cancel land in the state file with title and backends, newest first, and survive a restart")
    func endToEnd() async throws {
        let alarm = RecordingBackend(name: "alarm", ringPolicy: RingPolicy(every: .seconds(3), maxRings: 4))
        let h = try await Harness(backends: [alarm, RecordingBackend(name: "popup")])
        try await h.center.schedule(spec("wake", at(10), title: "Wake up", backends: ["alarm", "popup"]))
        try await h.center.schedule(spec("tea", at(100), title: "Tea"))
        await h.advance(10)
        await h.advance(3)  // a second ring: not a new firing
        _ = try await h.center.snooze("wake", for: .minutes(5))
        #expect(try await h.center.acknowledge("wake"))
        #expect(try await h.center.cancel("tea"))
        // A new process on the same file, as after kill -9.
        try await h.restart(backends: [alarm, RecordingBackend(name: "popup")])
        let all = try await h.center.history(HistoryQuery())
        try #require(all.map(\.kind) == [.cancelled, .acknowledged, .snoozed, .fired], "\(all)")
        #expect(all.map(\.key) == ["tea", "wake", "wake", "wake"])
        #expect(all.map(\.title) == ["Tea", "Wake up", "Wake up", "Wake up"], "the title was not copied from the row")
        #expect(all[3].backends == ["alarm", "popup"])
        #expect(all[3].due == t0 + .seconds(10))
        #expect(all[3].occurrence == 1)
        #expect(all[3].late == false)
        #expect(all[2].until == t0 + .seconds(13) + .minutes(5))
        #expect(try await h.center.history(HistoryQuery(key: "tea")).map(\.kind) == [.cancelled])
        #expect(try await h.center.history(HistoryQuery(limit: 2)).map(\.kind) == [.cancelled, .acknowledged])
        #expect(try await h.center.history(HistoryQuery(since: t0 + .seconds(11))).count == 3)
    }

    @Test("missed firings are recorded with the first due time and how many")
    func missed() async throws {
        let h = try await Harness()
        try await h.center.schedule(spec("every", .every(.seconds(60), count: nil, starting: nil, until: nil), title: "Tick", missed: .skip))
        h.clock.advance(by: .seconds(60 * 5 + 10))
        try await h.restart()
        await h.center.waitForDeliveries()
        let entries = try await h.center.history(HistoryQuery())
        let missed = try #require(entries.first { $0.kind == .missed }, "\(entries)")
        #expect(missed.key == "every")
        #expect(missed.title == "Tick")
        #expect(missed.due == t0 + .seconds(60))
        #expect(missed.count == 5)
    }

    @Test("pruning keeps the newest history_max_entries and drops entries older than history_max_age")
    func pruning() async throws {
        let h = try await Harness { $0.history = HistoryRetention(maxEntries: 3, maxAge: .hours(1)) }
        for i in 1...5 { try await h.center.schedule(spec("n\(i)", at(Int64(i)))) }
        await h.advance(5)
        await h.center.waitForDeliveries()
        #expect(try await h.center.history(HistoryQuery()).map(\.key).sorted() == ["n3", "n4", "n5"])
        try await h.center.schedule(spec("late", at(7200)))
        await h.advance(7200)
        await h.center.waitForDeliveries()
        #expect(try await h.center.history(HistoryQuery()).map(\.key) == ["late"], "entries older than an hour were kept")
    }
}
