import Foundation
import Testing
import TocsinConfig
import TocsinCore
import TocsinTesting
import TocsinTime
import TocsinModel

/// Two days of a busy schedule compressed through the virtual clock: an every-minute reminder,
/// calendar rules, an alarm that rings and is once acknowledged, a snooze, and a config reload at
/// noon. What fired is compared with a brute-force, minute-by-minute evaluation written here
/// from the rules' plain meaning, without the calendar or trigger code under test.
@Suite("A compressed day: the center against an independent minute-by-minute model")
struct DayOfFiringsTests {
    /// 2026-03-01T00:00:00Z, a Sunday: the weekday rule must skip the first day.
    static let start = Instant(seconds: 1_772_323_200)
    static let minutes = 2 * 24 * 60
    static let ring = RingPolicy(every: .minutes(5), maxRings: 3)

    struct Event: Hashable, Comparable, CustomStringConvertible {
        var key: String
        var minute: Int
        var reason: String
        static func < (a: Event, b: Event) -> Bool { (a.minute, a.key, a.reason) < (b.minute, b.key, b.reason) }
        var description: String { "\(key)@\(minute / 60):\(String(format: "%02d", minute % 60))+\(minute / 1440)d(\(reason))" }
    }

    /// The model: what each rule means, evaluated for every minute of the period.
    static func expected() -> (spy: [Event], alarm: [Event], unanswered: [Int]) {
        // Unanswered: minutes at which an alarm reached max_rings without a reaction.
        var spy: [Event] = [], alarm: [Event] = [], unanswered: [Int] = []
        let reloadMinute = 12 * 60
        let alarmFirings = Array(stride(from: 180, through: minutes, by: 180))
        let acknowledged = alarmFirings[1]  // acknowledged 7 minutes after its second firing
        let coffeeFirst = 30
        for m in 1...minutes {
            let minuteOfDay = m % 1440, hour = minuteOfDay / 60, minute = minuteOfDay % 60
            // 1970-01-01 was a Thursday; weekday 0 = Monday.
            let weekday = (Int((start.microseconds / 1_000_000) / 86_400) + m / 1440 + 3) % 7
            func add(_ key: String, _ reason: String = "scheduled") { spy.append(Event(key: key, minute: m, reason: reason)) }
            add("minute")
            if minute % 15 == 0 { add("quarter") }
            if weekday < 5 && hour == 9 && minute == 25 { add("standup") }
            if (hour == 12 || hour == 18) && minute == 30 { add("twice") }
            if (m - coffeeFirst) >= 0 && (m - coffeeFirst) % 120 == 0 { add("coffee") }
            if m == coffeeFirst + 11 { add("coffee", "snooze-ended") }
            // Config: 'cfg-a' at :00 until the reload at noon, at :30 after; 'cfg-b' at :45 throughout.
            if m <= reloadMinute ? minute == 0 : minute == 30 { add("cfg-a") }
            if minute == 45 { add("cfg-b") }
            for f in alarmFirings {
                if m == f { alarm.append(Event(key: "alarm", minute: m, reason: "scheduled")) }
                let stopsAt = f == acknowledged ? f + 7 : min(f + 15, alarmFirings.first { $0 > f } ?? Int.max)
                if (m == f + 5 || m == f + 10) && m < stopsAt { alarm.append(Event(key: "alarm", minute: m, reason: "ring")) }
                if m == f + 15 && f != acknowledged { unanswered.append(m) }
            }
        }
        return (spy, alarm, unanswered)
    }

    static func config(_ aExpression: String) throws -> [NotificationSpec] {
        var a = NotificationSpec()
        a.key = "cfg-a"; a.title = "A"; a.trigger = .onCalendar(try CalendarSpec.parse(aExpression))
        var b = NotificationSpec()
        b.key = "cfg-b"; b.title = "B"; b.trigger = .onCalendar(try CalendarSpec.parse("*-*-* *:45:00"))
        return [a, b]
    }

    @Test("every firing, ring, snooze end and unanswered alarm of two days matches the model, on time")
    func twoDays() async throws {
        let spyBackend = RecordingBackend(name: "spy")
        let alarmBackend = RecordingBackend(name: "alarm", ringPolicy: Self.ring)
        let h = try await Harness(backends: [spyBackend, alarmBackend], now: Self.start)
        let events = await h.center.events()
        // Counted, not timed: the stream is read on another task while the clock moves on.
        let unanswered = Task { () -> Int in
            var n = 0
            for await e in events { if case .unanswered(let key, let rings) = e, key == "alarm", rings == 3 { n += 1 } }
            return n
        }
        let c = h.center
        try await c.applyConfig(try Self.config("*-*-* *:00:00"))
        func calendar(_ text: String) throws -> TriggerSpec { .onCalendar(try CalendarSpec.parse(text)) }
        let s = Self.start
        try await c.schedule(spec("minute", .every(.minutes(1), count: nil, starting: .instant(s + .minutes(1)), until: nil)))
        try await c.schedule(spec("quarter", try calendar("*-*-* *:00/15:00")))
        try await c.schedule(spec("standup", try calendar("Mon..Fri 09:25")))
        try await c.schedule(spec("twice", try calendar("*-*-* 12,18:30")))
        try await c.schedule(spec("coffee", .every(.hours(2), count: nil, starting: .instant(s + .minutes(30)), until: nil)))
        try await c.schedule(spec("alarm", .every(.hours(3), count: nil, starting: .instant(s + .hours(3)), until: nil), backends: ["alarm"]))

        for m in 1...Self.minutes {
            h.clock.advance(to: s + .minutes(Int64(m)))
            await c.tick()
            // Settle each minute: thousands of deliveries queued at once would crowd the shared
            // executor and slow every other suite running alongside.
            await c.waitForDeliveries()
            if m == 31 { _ = try await c.snooze("coffee", for: .minutes(10)) }
            if m == 360 + 7 { #expect(try await c.acknowledge("alarm")) }
            if m == 12 * 60 {
                let report = try await c.applyConfig(try Self.config("*-*-* *:30:00"))
                #expect(report.changed == ["cfg-a"] && report.unchanged == ["cfg-b"], "\(report)")
            }
        }
        await c.waitForDeliveries()
        await c.shutdown()
        let model = Self.expected()

        func observed(_ b: RecordingBackend) -> [Event] {
            b.deliveries.map { f in
                Event(key: f.key, minute: Int((f.due - s).microseconds / 60_000_000), reason: f.reason.rawValue)
            }.sorted()
        }
        let spyEvents = observed(spyBackend), alarmEvents = observed(alarmBackend)
        #expect(spyBackend.deliveries.allSatisfy { $0.fired == $0.due }, "every firing was handled at its due minute")
        let missingSpy = Set(model.spy).subtracting(spyEvents).sorted(), extraSpy = Set(spyEvents).subtracting(model.spy).sorted()
        #expect(missingSpy.isEmpty, "expected but not delivered: \(missingSpy.prefix(10))")
        #expect(extraSpy.isEmpty, "delivered but not expected: \(extraSpy.prefix(10))")
        #expect(spyEvents.count == model.spy.count, "duplicates: \(spyEvents.count) delivered, \(model.spy.count) expected")
        #expect(alarmEvents == model.alarm.sorted(), "alarm: got \(alarmEvents.count), expected \(model.alarm.count); first difference: \(zip(alarmEvents, model.alarm.sorted()).first { $0 != $1 }.map { "\($0) vs \($1)" } ?? "in length")")
        let unansweredCount = await unanswered.value
        #expect(unansweredCount == model.unanswered.count, "\(unansweredCount) alarms unanswered, expected \(model.unanswered.count)")
        print("measured: two virtual days, \(spyEvents.count + alarmEvents.count) deliveries and \(unansweredCount) unanswered alarms, all as the model says")
    }
}
