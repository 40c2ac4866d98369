import Foundation
import Logging
import Testing
import TocsinConfig
import TocsinCore
import TocsinTesting
import TocsinTime
import TocsinModel
import TocsinSystem

@Suite("Durable state and missed firings")
struct DurabilityTests {
    @Test("a scheduled notification survives a restart and fires once at its time")
    func survivesRestart() async throws {
        let h = try await Harness()
        try await h.center.schedule(spec("tea", at(10)))
        try await h.restart(backends: [RecordingBackend(name: "spy")])
        #expect(await h.center.list().map(\.notification.key) == ["tea"])
        #expect(h.clock.armedAt == t0 + .seconds(10) - h.options.claimAhead)
        await h.advance(10)
        #expect(await h.settled().map(\.key) == ["tea"])
    }

    /// Regression: the first elapse of a calendar trigger was searched from the beginning of time
    /// after a restart, found nothing, and the notification silently became inactive.
    @Test("a calendar notification that has not fired yet survives a restart and fires at its elapse")
    func calendarBeforeFirstElapse() async throws {
        let h = try await Harness()
        try await h.center.schedule(spec("cal", .onCalendar(try CalendarSpec.parse("*-*-* 09:30:00"))))
        #expect(await h.center.lookup("cal")?.nextFire == t0 + .minutes(30))
        await h.advance(60)
        try await h.restart(backends: [RecordingBackend(name: "spy")])
        #expect(await h.center.list().map(\.notification.key) == ["cal"])
        #expect(await h.center.lookup("cal")?.nextFire == t0 + .minutes(30))
        await h.advance(29 * 60)
        let d = await h.settled()
        #expect(d.map(\.occurrence.number) == [1])
        #expect(d.first?.late == false)
        #expect(await h.center.lookup("cal")?.nextFire == t0 + .hours(24) + .minutes(30))
    }

    @Test("a first calendar elapse that passed while the daemon was down follows the missed policy")
    func calendarFirstElapseMissed() async throws {
        let h = try await Harness()
        try await h.center.schedule(spec("cal", .onCalendar(try CalendarSpec.parse("*-*-* 09:30:00")), missed: .fireOnce))
        h.clock.advance(by: .hours(1))
        try await h.restart(backends: [RecordingBackend(name: "spy")])
        let d = await h.settled()
        #expect(d.map(\.occurrence.instant) == [t0 + .minutes(30)])
        #expect(d.first?.late == true)
        #expect(await h.center.lookup("cal")?.nextFire == t0 + .hours(24) + .minutes(30))
    }

    /// What a restart must not bring back: occurrences that scheduling skipped as already past.
    struct SkippedRow: CustomTestStringConvertible, Sendable {
        let name: String
        let config: Bool
        let trigger: TriggerSpec
        /// Seconds after t0 of the first firing scheduling found (nil: none, the entry is skipped).
        let first: Int64?
        var testDescription: String { name }
    }

    static let skippedRows: [SkippedRow] = [
        SkippedRow(name: "config 'at' in the past", config: true, trigger: at(-3600), first: nil),
        SkippedRow(name: "config 'every' whose count ran out", config: true,
                   trigger: .every(.seconds(60), count: 3, starting: .instant(t0 - .hours(1)), until: nil), first: nil),
        SkippedRow(name: "config 'every' whose 'until' is past", config: true,
                   trigger: .every(.seconds(60), count: nil, starting: .instant(t0 - .hours(1)), until: .instant(t0 - .minutes(1))), first: nil),
        SkippedRow(name: "config 'remind_before' with every reminder past", config: true,
                   trigger: .remindBefore(event: .instant(t0 + .minutes(10)), offsets: [.hours(1), .minutes(30)]), first: nil),
        SkippedRow(name: "runtime 'remind_before' with its first reminder past", config: false,
                   trigger: .remindBefore(event: .instant(t0 + .seconds(30)), offsets: [.hours(1), .seconds(5)]), first: 25),
        SkippedRow(name: "runtime 'every' started long ago", config: false,
                   trigger: .every(.hours(1), count: nil, starting: .instant(t0 - .hours(1000) + .seconds(30)), until: nil), first: 30),
    ]

    /// Regression: a restored row that had not fired yet was counted from its trigger's first
    /// occurrence, so the next start delivered, as missed, what scheduling had skipped as past: a
    /// config `at` years old, a reminder before the schedule, a series' first occurrence.
    @Test("what scheduling skipped as past stays skipped after a restart", arguments: skippedRows)
    func skippedStaysSkipped(_ row: SkippedRow) async throws {
        let h = try await Harness()
        let s = spec("k", row.trigger, missed: .fireOnce)
        if row.config { try await h.center.applyConfig([s]) } else { try await h.center.schedule(s) }
        let scheduled = await h.center.lookup("k")?.nextFire
        #expect(scheduled == row.first.map { t0 + .seconds($0) }, "first firing when scheduled")
        try await h.restart(backends: [RecordingBackend(name: "spy")])
        #expect(await h.settled().isEmpty, "delivered at the restart")
        #expect(await h.center.lookup("k")?.nextFire == scheduled, "first firing after the restart")
        guard let first = row.first else { return }
        await h.advance(first)
        let d = await h.settled()
        #expect(d.count == 1, "deliveries at the first firing")
        #expect(d.first?.late == false, "the first firing is on time")
    }

    /// Schema version 3: a calendar's base in `trigger_a`, none for the other triggers.
    static let version3 = """
        PRAGMA journal_mode=WAL;
        CREATE TABLE meta(name TEXT PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE notification(
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
          wake INTEGER NOT NULL DEFAULT 0
        ) WITHOUT ROWID;
        INSERT INTO meta VALUES ('schema_version', '3');
        INSERT INTO notification(key, source, fingerprint, title, body, trigger_kind, trigger_a, trigger_text, zone, urgency, actions, user_info, missed)
          VALUES ('cal', 0, '', 'Calendar', '', 3, \((t0 - .hours(2)).microseconds), '*-*-* 08:30:00', 'UTC', 'normal', '', '', 'fire-once');
        INSERT INTO notification(key, source, fingerprint, title, body, trigger_kind, trigger_a, zone, urgency, actions, user_info, missed)
          VALUES ('tea', 0, '', 'Tea', '', 1, \((t0 + .seconds(30)).microseconds), 'UTC', 'normal', '', '', 'fire-once');
        """

    @Test("a state database of schema 3 opens: a calendar keeps the base it had, other rows fire as before")
    func migratesVersion3() async throws {
        let dir = TempDir()
        let made = try await TestProcess.run("sqlite3", [dir.path + "/state.sqlite3", Self.version3])
        #expect(made.status == .exited(0), "\(made.stderrText)")
        let clock = VirtualClock(now: t0), spy = RecordingBackend(name: "spy")
        let c = try TocsinCenter(options: CenterOptions(defaultZone: .utc), stateDirectory: dir.path, clock: clock,
                                 timer: clock, logger: quietLogger)
        try await c.start(backends: [spy])
        await c.waitForDeliveries()
        // Counted from 07:00, the 08:30 elapse passed while stopped: missed, fired once, late.
        #expect(spy.deliveries.map(\.key) == ["cal"])
        #expect(spy.deliveries.first?.late == true)
        #expect(await c.lookup("tea")?.nextFire == t0 + .seconds(30))
        await c.shutdown()
        let read = try await TestProcess.run("sqlite3", [dir.path + "/state.sqlite3",
            "SELECT value FROM meta WHERE name='schema_version'; SELECT quote(trigger_a), quote(base) FROM notification ORDER BY key"])
        #expect(read.stdoutText == "4\nNULL|\((t0 - .hours(2)).microseconds)\n\((t0 + .seconds(30)).microseconds)|NULL\n")
    }

    @Test("a fired one-shot does not fire again after a restart")
    func noDoubleFire() async throws {
        let h = try await Harness()
        try await h.center.schedule(spec("tea", at(10)))
        await h.advance(10)
        #expect(await h.settled().count == 1)
        let fresh = RecordingBackend(name: "spy")
        try await h.restart(backends: [fresh])
        await h.advance(3600)
        #expect(await h.settled().isEmpty)
        #expect(await h.center.list().isEmpty)
    }

    @Test("a repeating trigger continues after its last recorded occurrence")
    func repeatingContinues() async throws {
        let h = try await Harness()
        try await h.center.schedule(spec("r", .every(.seconds(60), count: nil, starting: nil, until: nil)))
        await h.advance(60)
        _ = await h.settled()
        try await h.restart(backends: [RecordingBackend(name: "spy")])
        #expect(await h.center.lookup("r")?.nextFire == t0 + .seconds(120))
        await h.advance(60)
        #expect(await h.settled().map(\.occurrence.number) == [2])
    }

    @Test("a firing claimed but unconfirmed before a crash is not delivered again: it is closed and recorded as interrupted (at most once)")
    func closesInterruptedClaim() async throws {
        let hanging = RecordingBackend(name: "spy", behaviour: .hang)
        let h = try await Harness(backends: [hanging])
        try await h.center.schedule(spec("tea", at(10)))
        try await h.center.schedule(spec("later", at(100)))
        await h.advance(10)
        // The process dies here: the claim is recorded, the delivery never confirmed.
        let fresh = RecordingBackend(name: "spy")
        try await h.restart(backends: [fresh])
        #expect(await h.settled().isEmpty, "an unconfirmed claim was delivered again")
        let history = try await h.center.history(HistoryQuery(key: "tea"))
        let interrupted = history.filter { $0.kind == .interrupted }
        #expect(interrupted.count == 1, "\(history)")
        #expect(interrupted.first?.due == t0 + .seconds(10))
        #expect(interrupted.first?.occurrence == 1)
        #expect(interrupted.first?.backends == ["spy"])
        #expect(await h.center.lookup("tea") == nil, "the one-shot is done")
        // Closing is durable: a further restart reports nothing more, and the rest fires as usual.
        try await h.restart(backends: [RecordingBackend(name: "spy")])
        #expect(try await h.center.history(HistoryQuery(key: "tea")).filter { $0.kind == .interrupted }.count == 1)
        await h.advance(90)
        #expect(await h.settled().map(\.key) == ["later"])
    }

    struct MissedRow: Sendable, CustomTestStringConvertible {
        var policy: MissedPolicy
        var maxLate: TimeSpan?
        var delivered: [UInt32]
        var testDescription: String { "\(policy.rawValue) max_late=\(maxLate.map { "\($0.microseconds / 1_000_000)s" } ?? "none")" }
    }

    /// An every-minute notification, daemon down from 0:30 to 10:30: occurrences 1..10 fell due meanwhile.
    @Test("missed policy after downtime", arguments: [
        MissedRow(policy: .skip, maxLate: nil, delivered: []),
        MissedRow(policy: .fireOnce, maxLate: nil, delivered: [10]),
        MissedRow(policy: .fireAll, maxLate: nil, delivered: Array(1...10)),
        MissedRow(policy: .fireAll, maxLate: .seconds(200), delivered: [8, 9, 10]),
        MissedRow(policy: .fireOnce, maxLate: .seconds(10), delivered: []),
    ])
    func missedAfterDowntime(_ row: MissedRow) async throws {
        let h = try await Harness()
        try await h.center.schedule(spec("m", .every(.minutes(1), count: nil, starting: nil, until: nil),
                                         missed: row.policy, maxLate: row.maxLate))
        await h.advance(30)
        h.clock.advance(by: .seconds(600))
        let fresh = RecordingBackend(name: "spy")
        h.backends = [fresh]
        try await h.restart()
        let d = await h.settled()
        #expect(d.map(\.occurrence.number) == row.delivered, "\(row.testDescription)")
        #expect(d.allSatisfy { $0.late }, "\(row.testDescription): late firings must say so")
        // Repeating triggers continue from now, not from the past.
        #expect(await h.center.lookup("m")?.nextFire == t0 + .seconds(660), "\(row.testDescription)")
    }

    @Test("a forward clock jump applies the missed policy; a backward jump never repeats a firing")
    func clockJumps() async throws {
        let h = try await Harness()
        let events = await h.center.events()
        try await h.center.schedule(spec("h", .every(.hours(1), count: nil, starting: nil, until: nil), missed: .skip))
        h.clock.jump(to: t0 + .hours(5) + .seconds(30))
        await h.center.tick(.clockChanged)
        #expect(await h.settled().isEmpty)
        var missed: (Instant, Int)?
        for await e in events { if case .missed(_, let due, let count) = e { missed = (due, count); break } }
        #expect(missed?.0 == t0 + .hours(1))
        #expect(missed?.1 == 5)
        #expect(await h.center.lookup("h")?.nextFire == t0 + .hours(6))
        // Back by two hours: the hour already handled must not come again.
        h.clock.jump(to: t0 + .hours(3))
        await h.center.tick(.clockChanged)
        #expect(await h.center.lookup("h")?.nextFire == t0 + .hours(6))
        h.clock.jump(to: t0 + .hours(6))
        await h.center.tick(.clockChanged)
        #expect(await h.settled().map(\.occurrence.number) == [6])
    }

    @Test("a damaged database is reported, never silently replaced")
    func corruptDatabase() async throws {
        let dir = TempDir()
        let path = dir.path + "/state.sqlite3"
        _ = FileManager.default.createFile(atPath: path, contents: Data(repeating: 0x42, count: 8192),
                                       attributes: [.posixPermissions: 0o600])
        do {
            _ = try TocsinCenter(options: CenterOptions(defaultZone: .utc), stateDirectory: dir.path,
                                 clock: VirtualClock(now: t0), timer: nil, logger: .init(label: "t"))
            Issue.record("a damaged database was accepted")
        } catch {
            #expect(error.code == .storage)
            #expect(error.message.contains(path))
        }
        let after = try Data(contentsOf: URL(fileURLWithPath: path))
        #expect(after == Data(repeating: 0x42, count: 8192), "the damaged file was modified")
    }

    @Test("a state directory writable by others is refused")
    func unsafeDirectory() async throws {
        let dir = TempDir()
        chmod(dir.path, 0o777)
        do {
            _ = try TocsinCenter(options: CenterOptions(defaultZone: .utc), stateDirectory: dir.path,
                                 clock: VirtualClock(now: t0), timer: nil, logger: .init(label: "t"))
            Issue.record("a world-writable state directory was accepted")
        } catch {
            #expect(error.message.contains("chmod 700"))
        }
    }

    @Test("state files are private")
    func filePermissions() async throws {
        let h = try await Harness()
        try await h.center.schedule(spec("a", at(10)))
        let attrs = try FileManager.default.attributesOfItem(atPath: h.dir.path + "/state.sqlite3")
        #expect((attrs[.posixPermissions] as? Int) == 0o600)
    }
}
