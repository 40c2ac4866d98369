import Testing
import TocsinConfig
@testable import TocsinCore
import TocsinTime

/// The state machine alone: chosen instants in, actions out. No clock, no store, no tasks.
@Suite("Scheduler state machine")
struct SchedulerTests {
    func entry(_ key: String, _ trigger: Trigger, missed: MissedPolicy = .fireOnce) -> Scheduler.Entry {
        let n = Notification(key: key, title: key, trigger: trigger, missed: missed)
        return Scheduler.Entry(notification: n, next: trigger.next(after: t0, previous: nil))
    }

    func delivered(_ actions: [Scheduler.Action]) -> [String] {
        actions.compactMap { if case .deliver(let f) = $0 { return "\(f.key)#\(f.occurrence.number)" } else { return nil } }
    }

    @Test("fires in due order and reports progress for each")
    func dueOrder() {
        var s = Scheduler()
        s.put(entry("b", .at(t0 + .seconds(20))))
        s.put(entry("a", .at(t0 + .seconds(10))))
        #expect(s.nextDeadline() == t0 + .seconds(10))
        #expect(s.advance(to: t0 + .seconds(9)).isEmpty)
        let actions = s.advance(to: t0 + .seconds(20))
        #expect(delivered(actions) == ["a#1", "b#1"])
        #expect(actions.filter { if case .progress = $0 { return true }; return false }.count == 2)
        #expect(s.nextDeadline() == nil)
        #expect(s.activeCount == 0)
    }

    @Test("an endless repeat is one queue entry, advanced one occurrence at a time")
    func lazyRepeat() {
        var s = Scheduler()
        s.put(entry("tick", .every(period: .seconds(1), starting: t0 + .seconds(1), count: nil, until: nil)))
        for i in 1...1000 {
            let a = s.advance(to: t0 + .seconds(Int64(i)))
            #expect(delivered(a) == ["tick#\(i)"], "step \(i)")
            if delivered(a) != ["tick#\(i)"] { break }
        }
        #expect(s.nextDeadline() == t0 + .seconds(1001))
        #expect(s.count == 1)
    }

    @Test("a catch-up after very long downtime is bounded and continues from now")
    func boundedCatchUp() {
        var s = Scheduler()
        s.put(entry("tick", .every(period: .seconds(1), starting: t0 + .seconds(1), count: nil, until: nil), missed: .skip))
        let now = t0 + .hours(24 * 30)
        let a = s.advance(to: now)
        #expect(delivered(a).isEmpty)
        let missed = a.compactMap { if case .missed(_, let due, let count) = $0 { return (due, count) } else { return nil } }
        #expect(missed.count == 1)
        #expect(missed.first?.0 == t0 + .seconds(1))
        #expect(missed.first?.1 == Scheduler.catchUpLimit)
        #expect(s.nextDeadline() == now + .seconds(1))
    }

    @Test("removing and replacing leaves no stale wake-ups")
    func staleItems() {
        var s = Scheduler()
        s.put(entry("a", .at(t0 + .seconds(10))))
        s.put(entry("a", .at(t0 + .seconds(30))))
        s.put(entry("b", .at(t0 + .seconds(20))))
        s.remove("b")
        #expect(s.nextDeadline() == t0 + .seconds(30))
        #expect(delivered(s.advance(to: t0 + .seconds(30))) == ["a#1"])
    }

    @Test("snooze end re-delivers the last occurrence")
    func snoozeEnd() {
        var s = Scheduler()
        var e = entry("w", .at(t0 + .seconds(10)))
        e.last = e.next
        e.next = nil
        e.alert = .snoozed(until: t0 + .seconds(300))
        s.put(e)
        #expect(s.activeCount == 1)
        #expect(s.nextDeadline() == t0 + .seconds(300))
        let a = s.advance(to: t0 + .seconds(300))
        guard case .deliver(let f)? = a.first else { Issue.record("no delivery: \(a)"); return }
        #expect(f.reason == .snoozeEnded)
        #expect(f.occurrence.number == 1)
    }
}
