import Testing
import TocsinConfig
import TocsinCore
import TocsinTesting
import TocsinTime
import TocsinModel

/// Ring timing belongs to the center: tested here with the virtual clock and spies, instantly.
@Suite("Alarms: ringing until someone reacts")
struct AlarmTests {
    static let policy = RingPolicy(every: .seconds(3), maxRings: 4)

    func harness() async throws -> (Harness, RecordingBackend, RecordingBackend) {
        let alarm = RecordingBackend(name: "alarm", ringPolicy: Self.policy)
        let popup = RecordingBackend(name: "popup")
        let h = try await Harness(backends: [alarm, popup])
        try await h.center.schedule(spec("wake", at(10), backends: ["alarm", "popup"]))
        await h.advance(10)
        return (h, alarm, popup)
    }

    func rings(_ b: RecordingBackend) -> [UInt32] { b.deliveries.filter { $0.key == "wake" }.map(\.ring) }

    @Test("rings at 0, 3, 6, 9 s to the alarm only, then is reported unanswered")
    func ringsUntilMax() async throws {
        let (h, alarm, popup) = try await harness()
        let events = await h.center.events()
        for _ in 0..<5 { await h.advance(3) }
        await h.center.waitForDeliveries()
        #expect(rings(alarm) == [1, 2, 3, 4])
        #expect(alarm.deliveries.map(\.due) == [10, 13, 16, 19].map { t0 + .seconds($0) })
        #expect(rings(popup) == [1], "a popup must not be re-sent with every ring")
        #expect(alarm.deliveries.allSatisfy { $0.isAlarm })
        #expect(await h.center.lookup("wake")?.state == .unanswered(rings: 4))
        for await e in events { if case .unanswered(let key, let n) = e { #expect(key == "wake"); #expect(n == 4); break } }
        await h.advance(60)
        #expect(rings(alarm).count == 4, "rang after max_rings")
        #expect(try await h.center.acknowledge("wake"))
    }

    @Test("a backend that follows rings (a popup) gets each ring with the alarm; one that does not gets the firing alone; a follower alone never rings")
    func followersGetEachRing() async throws {
        let alarm = RecordingBackend(name: "alarm", ringPolicy: Self.policy)
        let popup = RecordingBackend(name: "popup", quietMode: .hold, followsRings: true)
        let log = RecordingBackend(name: "log")
        let h = try await Harness(backends: [alarm, popup, log])
        try await h.center.schedule(spec("wake", at(10), backends: ["popup", "alarm", "log"]))
        try await h.center.schedule(spec("plain", at(10), backends: ["popup"]))
        await h.advance(10)
        for _ in 0..<2 { await h.advance(3) }
        await h.center.waitForDeliveries()
        #expect(rings(alarm) == [1, 2, 3])
        #expect(rings(popup) == [1, 2, 3], "the popup is told of every ring, to show again a popup closed meanwhile")
        #expect(popup.deliveries.filter { $0.key == "wake" }.map(\.reason) == [.scheduled, .ring, .ring])
        #expect(rings(log) == [1])
        #expect(popup.deliveries.filter { $0.key == "plain" }.count == 1, "without an alarm backend nothing rings")
        #expect(try await h.center.acknowledge("wake"))
        #expect(await popup.wait { _, w in w.contains { $0.key == "wake" && $0.reason == .acknowledged } })
        for _ in 0..<3 { await h.advance(3) }
        await h.center.waitForDeliveries()
        #expect(rings(popup) == [1, 2, 3], "rang on after the acknowledge")
    }

    @Test("acknowledge mid-ring stops it: withdrawn at once, no further rings")
    func acknowledgeMidRing() async throws {
        let (h, alarm, _) = try await harness()
        await h.advance(3)
        await h.center.waitForDeliveries()
        #expect(rings(alarm) == [1, 2])
        #expect(try await h.center.acknowledge("wake"))
        #expect(await alarm.wait { _, w in w.contains { $0.key == "wake" && $0.reason == .acknowledged } })
        for _ in 0..<10 { await h.advance(3) }
        await h.center.waitForDeliveries()
        #expect(rings(alarm) == [1, 2])
        #expect(h.clock.armedAt == nil)
    }

    /// Regression: a one-shot alarm acknowledged twice (a popup's Dismiss and `tocsin ack`) made
    /// the second fail with NotFound, while a repeating one answered false.
    @Test("acknowledging again answers false, also once a one-shot is done; a key never known is NotFound")
    func acknowledgeTwice() async throws {
        let (h, _, _) = try await harness()
        #expect(try await h.center.acknowledge("wake"))
        #expect(await h.center.lookup("wake") == nil, "a one-shot acknowledged is done")
        #expect(try await h.center.acknowledge("wake") == false)
        try await h.restart()
        #expect(try await h.center.acknowledge("wake") == false, "after a restart too (the history is durable)")
        await #expect(throws: CenterError.self) { try await h.center.acknowledge("never-scheduled") }
        do {
            _ = try await h.center.acknowledge("never-scheduled")
        } catch {
            #expect(error.code == .notFound)
        }
    }

    /// Regression: an alarm ringing when a reload removed its sound backend stayed `ringing` for
    /// good: no ring, no `Unanswered`, nothing but an acknowledge ended it.
    @Test("a reload that removes the ringing backend ends the ringing; the notification is then done")
    func reloadRemovingTheRinger() async throws {
        let (h, alarm, popup) = try await harness()
        #expect(await h.center.lookup("wake")?.state == .ringing(since: t0 + .seconds(10), rings: 1))
        try await h.center.reload(backends: [popup], specs: [], quiet: QuietSettings())
        for _ in 0..<5 { await h.advance(3) }
        await h.center.waitForDeliveries()
        #expect(rings(alarm) == [1])
        let left = await h.center.lookup("wake")
        #expect(left == nil, "still listed: \(String(describing: left?.state))")
        #expect(h.clock.armedAt == nil)
    }

    @Test("snooze defers, then rings again with the count restarted")
    func snoozeRestartsCount() async throws {
        let (h, alarm, popup) = try await harness()
        await h.advance(3)
        _ = try await h.center.snooze("wake", for: .minutes(5))
        await h.advance(3)
        await h.center.waitForDeliveries()
        #expect(rings(alarm) == [1, 2], "rang while snoozed")
        h.clock.advance(to: t0 + .seconds(13) + .minutes(5))
        await h.center.tick()
        await h.advance(3)
        await h.center.waitForDeliveries()
        #expect(rings(alarm) == [1, 2, 1, 2])
        #expect(popup.deliveries.map(\.reason) == [.scheduled, .snoozeEnded])
    }

    @Test("a restart mid-ring resumes ringing within max_rings")
    func restartResumes() async throws {
        let (h, alarm, _) = try await harness()
        await h.advance(3)
        await h.center.waitForDeliveries()
        #expect(rings(alarm) == [1, 2])
        let alarm2 = RecordingBackend(name: "alarm", ringPolicy: Self.policy)
        try await h.restart(backends: [alarm2, RecordingBackend(name: "popup")])
        #expect(await h.center.lookup("wake")?.state == .ringing(since: t0 + .seconds(10), rings: 2))
        await h.advance(3)
        await h.advance(3)
        await h.advance(3)
        await h.center.waitForDeliveries()
        #expect(rings(alarm2) == [3, 4])
        #expect(await h.center.lookup("wake")?.state == .unanswered(rings: 4))
    }

    /// Regression: rings were counted from the first one by the clock, so a 15 s suspend after
    /// the first ring left the alarm unanswered at resume without a sound, and a 7 s one played
    /// two rings 0.7 s apart (the second cut the first) and counted one that never played.
    @Test("time asleep or down uses no rings: a late ring plays at once and the cadence goes on from it", arguments: [
        AwayRow(name: "asleep 15 s", away: 15, restart: false, maxLate: nil,
                rings: [1, 2, 3, 4], fired: [10, 25, 28, 31], due: [10, 13, 28, 31], unansweredAt: 34, rang: 4),
        AwayRow(name: "asleep 7 s", away: 7, restart: false, maxLate: nil,
                rings: [1, 2, 3, 4], fired: [10, 17, 20, 23], due: [10, 13, 20, 23], unansweredAt: 26, rang: 4),
        AwayRow(name: "down 15 s, restarted", away: 15, restart: true, maxLate: nil,
                rings: [1, 2, 3, 4], fired: [10, 25, 28, 31], due: [10, 13, 28, 31], unansweredAt: 34, rang: 4),
        AwayRow(name: "asleep 3 days", away: 3 * 86_400, restart: false, maxLate: nil,
                rings: [1, 2, 3, 4], fired: [10, 259_210, 259_213, 259_216], due: [10, 13, 259_213, 259_216],
                unansweredAt: 259_219, rang: 4),
        AwayRow(name: "asleep past max_late", away: 60, restart: false, maxLate: 30,
                rings: [1], fired: [10], due: [10], unansweredAt: 70, rang: 1),
        AwayRow(name: "asleep within max_late", away: 20, restart: false, maxLate: 30,
                rings: [1, 2, 3, 4], fired: [10, 30, 33, 36], due: [10, 13, 33, 36], unansweredAt: 39, rang: 4),
    ])
    func awayUsesNoRings(_ row: AwayRow) async throws {
        let alarm = RecordingBackend(name: "alarm", ringPolicy: Self.policy)
        let h = try await Harness(backends: [alarm, RecordingBackend(name: "popup")])
        try await h.center.schedule(spec("wake", at(10), backends: ["alarm", "popup"],
                                         maxLate: row.maxLate.map { .seconds($0) }))
        await h.advance(10)
        var ringer = alarm
        if row.restart {
            ringer = RecordingBackend(name: "alarm", ringPolicy: Self.policy)
            h.clock.advance(by: .seconds(row.away))
            try await h.restart(backends: [ringer, RecordingBackend(name: "popup")])
        } else {
            await h.advance(row.away)
        }
        while h.clock.now() < t0 + .seconds(row.unansweredAt) {
            _ = try await h.wake()
        }
        await h.center.waitForDeliveries()
        let wake = (ringer === alarm ? alarm.deliveries : alarm.deliveries + ringer.deliveries).filter { $0.key == "wake" }
        #expect(wake.map(\.ring) == row.rings, "\(row.name)")
        #expect(wake.map(\.fired) == row.fired.map { t0 + .seconds($0) }, "\(row.name)")
        #expect(wake.map(\.due) == row.due.map { t0 + .seconds($0) }, "\(row.name)")
        #expect(h.clock.now() == t0 + .seconds(row.unansweredAt), "\(row.name)")
        #expect(await h.center.lookup("wake")?.state == .unanswered(rings: row.rang), "\(row.name)")
    }

    struct AwayRow: Sendable, CustomTestStringConvertible {
        var name: String
        var away: Int64
        var restart: Bool
        var maxLate: Int64?
        var rings: [UInt32]
        var fired: [Int64]
        var due: [Int64]
        var unansweredAt: Int64
        var rang: UInt32
        var testDescription: String { name }
    }

    @Test("ringing is opt-in: a notification without backends goes to every backend except alarms")
    func alarmsAreOptIn() async throws {
        let alarm = RecordingBackend(name: "alarm", ringPolicy: Self.policy)
        let popup = RecordingBackend(name: "popup")
        let h = try await Harness(backends: [alarm, popup])
        try await h.center.schedule(spec("plain", at(10)))
        await h.advance(10)
        await h.center.waitForDeliveries()
        #expect(popup.deliveredKeys == ["plain"])
        #expect(alarm.deliveries.isEmpty)
        #expect(await h.center.lookup("plain") == nil, "a plain reminder must not be left ringing")
    }

    @Test("several alarms ringing at once keep their own schedules")
    func independentAlarms() async throws {
        let alarm = RecordingBackend(name: "alarm", ringPolicy: Self.policy)
        let h = try await Harness(backends: [alarm])
        try await h.center.schedule(spec("a", at(10), backends: ["alarm"]))
        try await h.center.schedule(spec("b", at(11), backends: ["alarm"]))
        h.clock.advance(to: t0 + .seconds(9))
        for _ in 0..<9 { await h.advance(1) }
        await h.center.waitForDeliveries()
        let a = alarm.deliveries.filter { $0.key == "a" }.map(\.due)
        let b = alarm.deliveries.filter { $0.key == "b" }.map(\.due)
        #expect(a == [10, 13, 16].map { t0 + .seconds($0) })
        #expect(b == [11, 14, 17].map { t0 + .seconds($0) })
    }
}
