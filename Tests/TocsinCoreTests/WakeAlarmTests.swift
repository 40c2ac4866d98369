import Foundation
import Logging
import Synchronization
import Testing
import TocsinConfig
import TocsinCore
import TocsinTesting
import TocsinTime
import TocsinModel
import TocsinSystem

/// A wake alarm that records what it was armed for, in order.
final class RecordedWakeAlarm: WakeAlarm, Sendable {
    private let arms = Mutex<[Instant?]>([])
    func arm(at instant: Instant?) { arms.withLock { $0.append(instant) } }
    var status: WakeAlarmStatus { WakeAlarmStatus(availability: .available, armed: armed) }
    /// The latest arming (nil: disarmed or never armed).
    var armed: Instant? { arms.withLock { $0.last ?? nil } }
}

private func wakeSpec(_ key: String, _ trigger: TriggerSpec, wake: Bool = true) -> NotificationSpec {
    var s = spec(key, trigger)
    s.wake = wake
    return s
}

/// How early the wake alarm goes off before its firing (`TocsinCenter.wakeMargin`).
private let margin = TimeSpan.seconds(30)

@Suite("Wake alarms in the engine")
struct WakeAlarmTests {
    let logger = quietLogger

    func center(_ dir: TempDir, _ clock: VirtualClock, _ alarm: RecordedWakeAlarm, _ spy: RecordingBackend) async throws -> TocsinCenter {
        let c = try TocsinCenter(options: CenterOptions(defaultZone: .utc), stateDirectory: dir.path, clock: clock, timer: clock,
                                 wakeAlarm: alarm, logger: logger)
        try await c.start(backends: [spy])
        return c
    }

    @Test("once the margin has begun, the alarm is armed for the firing itself, so sleeping again before it still wakes for it")
    func withinTheMargin() async throws {
        let dir = TempDir(), clock = VirtualClock(now: t0), alarm = RecordedWakeAlarm(), spy = RecordingBackend(name: "spy")
        let c = try await center(dir, clock, alarm, spy)
        try await c.schedule(wakeSpec("late", at(100)))
        #expect(alarm.armed == t0 + .seconds(100) - margin)
        clock.advance(to: t0 + .seconds(80))
        await c.settle()
        #expect(alarm.armed == t0 + .seconds(100))
        await c.shutdown()
    }

    @Test("the wake alarm is armed for the earliest wake notification, and moves when it is scheduled earlier, cancelled or fired")
    func followsTheSchedule() async throws {
        let dir = TempDir(), clock = VirtualClock(now: t0), alarm = RecordedWakeAlarm(), spy = RecordingBackend(name: "spy")
        let c = try await center(dir, clock, alarm, spy)
        try await c.schedule(wakeSpec("plain", at(10), wake: false))
        #expect(alarm.armed == nil, "a notification without wake arms nothing")
        try await c.schedule(wakeSpec("late", at(100)))
        #expect(alarm.armed == t0 + .seconds(100) - margin, "the margin before the firing: resuming takes seconds")
        #expect(clock.armedAt == t0 + .seconds(10) - CenterOptions(defaultZone: .utc).claimAhead,
                "the ordinary timer still follows every notification (waking to claim it ahead)")
        try await c.schedule(wakeSpec("early", at(50)))
        #expect(alarm.armed == t0 + .seconds(50) - margin)
        #expect(await c.nextWake()?.key == "early")
        try await c.cancel("early")
        #expect(alarm.armed == t0 + .seconds(100) - margin, "cancelling the earliest moves the alarm to the next")
        try await c.schedule(wakeSpec("late", at(200), wake: false))
        #expect(alarm.armed == nil, "replacing it without wake disarms")
        try await c.schedule(wakeSpec("late", at(100)))
        clock.advance(by: .seconds(100))
        await c.tick()
        await c.waitForDeliveries()
        // Both fall due in this one tick; deliveries of different keys run side by side, in no set order.
        #expect(spy.deliveries.map(\.key).sorted() == ["late", "plain"], "wake notifications fire from the ordinary timer")
        #expect(alarm.armed == nil, "nothing left to wake for")
        await c.shutdown()
    }

    @Test("wake = true survives a restart in the SQLite state, and the alarm is armed again at start-up")
    func persists() async throws {
        let dir = TempDir(), clock = VirtualClock(now: t0)
        var c = try await center(dir, clock, RecordedWakeAlarm(), RecordingBackend(name: "spy"))
        try await c.schedule(wakeSpec("alarm", .every(.hours(24), count: nil, starting: .instant(t0 + .hours(1)), until: nil)))
        try await c.schedule(wakeSpec("quiet", at(60), wake: false))
        await c.shutdown()
        let alarm = RecordedWakeAlarm()
        c = try await center(dir, clock, alarm, RecordingBackend(name: "spy"))
        #expect(alarm.armed == t0 + .hours(1) - margin)
        let listed = await c.list()
        #expect(listed.map { "\($0.notification.key):\($0.wake)" } == ["quiet:false", "alarm:true"])
        await c.shutdown()
    }

    /// The notification table as schema version 2 wrote it (before the `wake` column).
    static let version2 = """
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
          pending_backends TEXT, pending_number INTEGER, pending_instant INTEGER, pending_offset INTEGER, pending_due INTEGER
        ) WITHOUT ROWID;
        INSERT INTO meta VALUES ('schema_version', '2');
        INSERT INTO notification(key, source, fingerprint, title, body, trigger_kind, trigger_a, zone, urgency, actions, user_info, missed)
          VALUES ('old', 0, '', 'From before', '', 1, \((t0 + .seconds(30)).microseconds), 'UTC', 'normal', '', '', 'fire-once');
        """

    @Test("a state database of the previous schema (2) opens, keeps its notifications and takes wake notifications")
    func migratesVersion2() async throws {
        let dir = TempDir()
        let made = try await TestProcess.run("sqlite3", [dir.path + "/state.sqlite3", Self.version2])
        #expect(made.status == .exited(0), "\(made.stderrText)")
        let clock = VirtualClock(now: t0), alarm = RecordedWakeAlarm()
        var c = try await center(dir, clock, alarm, RecordingBackend(name: "spy"))
        #expect(await c.lookup("old")?.notification.title == "From before")
        #expect(await c.lookup("old")?.wake == false)
        try await c.schedule(wakeSpec("new", at(60)))
        await c.shutdown()
        let version = try await TestProcess.run("sqlite3", [dir.path + "/state.sqlite3", "SELECT value FROM meta WHERE name='schema_version'"])
        #expect(version.stdoutText == "4\n")
        c = try await center(dir, clock, alarm, RecordingBackend(name: "spy"))
        #expect(await c.lookup("new")?.wake == true)
        #expect(alarm.armed == t0 + .seconds(60) - margin)
        await c.shutdown()
    }

    @Test("a batch whose commit fails rolls the wake queue back with the rest of the machine")
    func rollback() {
        var m = NotificationMachine()
        var out: [MachineAction] = []
        var n = Notification(key: "w", title: "t", trigger: .at(t0 + .seconds(30)))
        n.wake = true
        m.beginRecording()
        _ = try? m.schedule(n, replace: true, now: t0, maxPending: 10, into: &out)
        #expect(m.nextWake()?.key == "w")
        m.rollback()
        #expect(m.nextWake() == nil)
    }
}
