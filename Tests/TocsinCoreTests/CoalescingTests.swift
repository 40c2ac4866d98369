import Testing
import TocsinConfig
@testable import TocsinCore
import TocsinTime

/// The second line behind `[daemon] min_period`: a notification whose trigger would still fire
/// faster than the floor (a row stored under a lower floor, two calendar elapses brought together
/// by a DST change) fires at most once per `minPeriod`, driven on the pure machine.
@Suite("Machine: coalescing under min_period")
struct CoalescingTests {
    func machine(_ floor: TimeSpan) -> NotificationMachine {
        var m = NotificationMachine()
        m.setBackends([BackendInfo(name: "spy")])
        m.minPeriod = floor
        return m
    }

    func note(_ key: String, _ trigger: Trigger) -> Notification {
        Notification(key: key, title: key, trigger: trigger, source: .runtime)
    }

    /// (due, occurrence number) of every delivery.
    func firings(_ actions: [MachineAction]) -> [(Instant, UInt32)] {
        actions.compactMap { if case .deliver(let d) = $0 { return (d.due, d.occurrence.number) } else { return nil } }
    }

    /// Advances in `step`s from `from` to `to`, collecting every firing.
    func run(_ m: inout NotificationMachine, from: Instant, to: Instant, step: TimeSpan) -> [(Instant, UInt32)] {
        var out: [(Instant, UInt32)] = []
        var now = from
        while now <= to {
            var actions: [MachineAction] = []
            m.advance(to: now, into: &actions)
            out += firings(actions)
            now = now + step
        }
        return out
    }

    @Test("a per-microsecond repeat fires once a second, on the occurrence that falls there")
    func microsecondRepeatFiresOncePerSecond() throws {
        var m = machine(.seconds(1))
        var out: [MachineAction] = []
        let n = note("flood", .every(period: TimeSpan(microseconds: 1), starting: t0 + .seconds(1), count: nil, until: nil))
        _ = try m.schedule(n, replace: true, now: t0, maxPending: 10, into: &out)
        let fired = run(&m, from: t0, to: t0 + .seconds(5), step: TimeSpan(microseconds: 100_000))
        #expect(fired.map(\.0) == (1...5).map { t0 + .seconds(Int64($0)) }, "one firing per second: \(fired.map(\.0))")
        #expect(fired.map(\.1) == [1, 1_000_001, 2_000_001, 3_000_001, 4_000_001])
    }

    @Test("without a floor the same trigger fires every time it is due (the floor is what stops it)")
    func noFloorNoCoalescing() throws {
        var m = machine(.zero)
        var out: [MachineAction] = []
        let n = note("flood", .every(period: .seconds(0) + TimeSpan(microseconds: 100_000), starting: t0 + .seconds(1), count: nil, until: nil))
        _ = try m.schedule(n, replace: true, now: t0, maxPending: 10, into: &out)
        let fired = run(&m, from: t0, to: t0 + .seconds(2), step: TimeSpan(microseconds: 100_000))
        #expect(fired.count == 11, "every 100 ms from 1 s to 2 s: \(fired.count)")
    }

    @Test("remind_before offsets closer than the floor: the second is delayed to the end of the window, the last still fires")
    func remindBeforeDelayed() throws {
        var m = machine(.seconds(1))
        var out: [MachineAction] = []
        let event = t0 + .hours(2)
        let offsets: [TimeSpan] = [.hours(1), .hours(1) + TimeSpan(microseconds: -500_000), .zero]
        _ = try m.schedule(note("r", .remindBefore(event: event, offsets: offsets)), replace: true, now: t0, maxPending: 10, into: &out)
        let fired = run(&m, from: event - .hours(1) - .seconds(1), to: event - .hours(1) + .seconds(3), step: TimeSpan(microseconds: 250_000))
            + run(&m, from: event, to: event, step: .seconds(1))
        #expect(fired.map(\.0) == [event - .hours(1), event - .hours(1) + .seconds(1), event], "\(fired.map(\.0))")
        #expect(fired.map(\.1) == [1, 2, 3])
    }

    @Test("a DST change bringing two calendar elapses 0.5 s together: the second comes 1 s after the first")
    func springForwardCoalesced() throws {
        let berlin = try ZoneInfoDirectory().rules(named: "Europe/Berlin")
        // 01:59:59.5 CET and 03:00:00 CEST are 0.5 s apart on 2026-03-29; any other night an hour.
        let spec = try CalendarSpec.parse("*-*-* 01,03:59,00:59.5,00")
        #expect(spec.closestElapses(below: .seconds(1)) == nil, "accepted at Schedule: 59.5 s apart in wall-clock time")
        var m = machine(.seconds(1))
        var out: [MachineAction] = []
        let before = Instant(seconds: 1_774_745_000)  // 2026-03-29 00:43:20 UTC, 01:43:20 CET
        _ = try m.schedule(note("dst", .calendar(spec, zone: berlin)), replace: true, now: before, maxPending: 10, into: &out)
        let lastCET = Instant(microseconds: 1_774_745_999_500_000)  // 00:59:59.5 UTC
        let fired = run(&m, from: lastCET - .seconds(60), to: lastCET + .seconds(3), step: TimeSpan(microseconds: 100_000))
        #expect(fired.map(\.0) == [lastCET - TimeSpan(microseconds: 59_500_000), lastCET, lastCET + .seconds(1)],
                "\(fired.map { Timestamp.rfc3339UTC($0.0) })")
    }

    @Test("a restart recomputes the same coalesced next firing from the last one")
    func restoreKeepsTheWindow() throws {
        var m = machine(.seconds(1))
        var out: [MachineAction] = []
        let n = note("flood", .every(period: TimeSpan(microseconds: 3), starting: t0 + .seconds(1), count: nil, until: nil))
        _ = try m.schedule(n, replace: true, now: t0, maxPending: 10, into: &out)
        m.advance(to: t0 + .seconds(1), into: &out)
        let next = m.nextDeadline()
        // No occurrence falls exactly on the window's end (1 s is not a multiple of 3 µs): the
        // occurrences within it become one firing at its end.
        #expect(next == t0 + .seconds(2), "the end of the window: \(String(describing: next))")
        var restarted = machine(.seconds(1))
        restarted.restore(RestoredRow(StoredNotification(notification: n, last: Occurrence(instant: t0 + .seconds(1), number: 1))), now: t0 + .seconds(1))
        #expect(restarted.nextDeadline() == next)
    }
}
