import Testing
import TocsinConfig
@testable import TocsinCore
import TocsinTime
import TocsinModel

/// The notification machine alone: inputs and chosen instants in, actions out. No clock, no
/// store, no tasks: every transition is asserted as the actions it returns.
@Suite("Notification machine")
struct MachineTests {
    static let alarm = RingPolicy(every: .seconds(60), maxRings: 3)

    func note(_ key: String, _ trigger: Trigger, missed: MissedPolicy = .fireOnce, backends: [String]? = nil,
              source: NotificationSource = .runtime) -> Notification {
        Notification(key: key, title: key, trigger: trigger, backends: backends, missed: missed, source: source)
    }

    func machine(_ backends: [BackendInfo] = [BackendInfo(name: "spy")]) -> NotificationMachine {
        var m = NotificationMachine()
        m.setBackends(backends)
        return m
    }

    func delivered(_ actions: [MachineAction]) -> [String] {
        actions.compactMap { if case .deliver(let d) = $0 { return "\(d.key)#\(d.occurrence.number):\(d.reason.rawValue)" } else { return nil } }
    }

    func persisted(_ actions: [MachineAction]) -> [StoreOp] {
        actions.compactMap { if case .persist(let op) = $0 { return op } else { return nil } }
    }

    func events(_ actions: [MachineAction]) -> [CenterEvent] {
        actions.compactMap { if case .emit(let e) = $0 { return e } else { return nil } }
    }

    func rings(_ actions: [MachineAction]) -> [UInt32] {
        actions.compactMap { if case .deliver(let d) = $0, d.reason == .ring { return d.ring } else { return nil } }
    }

    func withdrawals(_ actions: [MachineAction]) -> [String] {
        actions.compactMap { if case .withdraw(let k, let b, let r) = $0 { return "\(k)@\(b.joined(separator: ",")):\(r.rawValue)" } else { return nil } }
    }

    @discardableResult
    func schedule(_ m: inout NotificationMachine, _ n: Notification, now: Instant = t0) throws -> [MachineAction] {
        var out: [MachineAction] = []
        _ = try m.schedule(n, replace: true, now: now, maxPending: 100, into: &out)
        return out
    }

    func advance(_ m: inout NotificationMachine, to now: Instant) -> [MachineAction] {
        var out: [MachineAction] = []
        m.advance(to: now, into: &out)
        return out
    }

    @Test("schedule persists the row; a replace withdraws the old one; due order is (instant, key)")
    func scheduleAndOrder() throws {
        var m = machine()
        let first = try schedule(&m, note("b", .at(t0 + .seconds(20))))
        #expect(persisted(first) == [.upsert(StoredNotification(notification: note("b", .at(t0 + .seconds(20))), base: t0))])
        try schedule(&m, note("c", .at(t0 + .seconds(10))))
        let replaced = try schedule(&m, note("a", .at(t0 + .seconds(10))))
        #expect(withdrawals(replaced).isEmpty)
        let again = try schedule(&m, note("c", .at(t0 + .seconds(20))))
        #expect(withdrawals(again) == ["c@spy:replaced"])
        #expect(m.nextDeadline() == t0 + .seconds(10))
        #expect(advance(&m, to: t0 + .seconds(9)).isEmpty)
        let a = advance(&m, to: t0 + .seconds(10)) + advance(&m, to: t0 + .seconds(20))
        #expect(delivered(a) == ["a#1:scheduled", "b#1:scheduled", "c#1:scheduled"])
        #expect(m.inDelivery.keys.sorted() == ["a", "b", "c"])
        #expect(m.nextDeadline() == nil)
        #expect(m.activeCount == 0)
    }

    @Test("a finished delivery clears the claim and forgets a runtime notification, keeping its user_info")
    func finishAndCleanUp() throws {
        var m = machine([BackendInfo(name: "x"), BackendInfo(name: "y")])
        try schedule(&m, note("k", .at(t0 + .seconds(1))))
        let a = advance(&m, to: t0 + .seconds(1))
        guard case .deliver(let d)? = a.first(where: { if case .deliver = $0 { return true }; return false }) else {
            Issue.record("no delivery"); return
        }
        #expect(d.targets == ["x", "y"])
        var out: [MachineAction] = []
        m.deliveryFinished(key: "k", occurrence: d.occurrence, backend: "x", into: &out)
        #expect(persisted(out) == [.pending(key: "k", PendingDelivery(occurrence: d.occurrence, due: d.due, remaining: ["y"]))])
        out = []
        m.deliveryFinished(key: "k", occurrence: d.occurrence, backend: "y", into: &out)
        #expect(persisted(out) == [.pending(key: "k", nil), .delete(key: "k", keepUserInfo: true)])
        #expect(m.count == 0)
    }

    @Test("an endless repeat is one queue entry, advanced one occurrence at a time")
    func lazyRepeat() throws {
        var m = machine()
        try schedule(&m, note("tick", .every(period: .seconds(1), starting: t0 + .seconds(1), count: nil, until: nil)))
        for i in 1...1000 {
            let a = advance(&m, to: t0 + .seconds(Int64(i)))
            #expect(delivered(a) == ["tick#\(i):scheduled"], "step \(i)")
            if delivered(a) != ["tick#\(i):scheduled"] { break }
        }
        #expect(m.nextDeadline() == t0 + .seconds(1001))
        #expect(m.count == 1)
    }

    /// One row per missed policy: what a month of downtime of a per-second trigger delivers.
    @Test("a catch-up after long downtime is bounded, follows the policy and continues from now",
          arguments: [(MissedPolicy.skip, 0), (.fireOnce, 1), (.fireAll, NotificationMachine.fireAllLimit)])
    func boundedCatchUp(policy: MissedPolicy, deliveries: Int) throws {
        var m = machine()
        try schedule(&m, note("tick", .every(period: .seconds(1), starting: t0 + .seconds(1), count: nil, until: nil), missed: policy))
        let now = t0 + .hours(24 * 30)
        let a = advance(&m, to: now)
        #expect(delivered(a).count == deliveries, "policy \(policy)")
        #expect(delivered(a).allSatisfy { $0.hasSuffix(":late") }, "policy \(policy)")
        let missed = events(a).compactMap { if case .missed(_, let due, let count) = $0 { return (due, count) } else { return nil } }
        #expect(missed.count == 1, "policy \(policy)")
        #expect(missed.first?.0 == t0 + .seconds(1), "policy \(policy)")
        #expect(missed.first?.1 == NotificationMachine.catchUpLimit - deliveries, "policy \(policy)")
        #expect(m.nextDeadline() == now + .seconds(1), "policy \(policy)")
    }

    @Test("cancel: a runtime notification is deleted, a config one marked cancelled; both withdraw and emit")
    func cancel() throws {
        var m = machine()
        try schedule(&m, note("r", .at(t0 + .seconds(10))))
        var out: [MachineAction] = []
        _ = m.applyConfig([(note("c", .at(t0 + .seconds(10)), source: .config), "f1")], now: t0, into: &out)
        out = []
        #expect(m.cancel("r", into: &out))
        #expect(m.cancel("c", into: &out))
        #expect(!m.cancel("r", into: &out))
        #expect(persisted(out) == [.delete(key: "r", keepUserInfo: false), .markCancelled(key: "c")])
        #expect(withdrawals(out) == ["r@spy:cancelled", "c@spy:cancelled"])
        #expect(events(out) == [.cancelled(key: "r"), .cancelled(key: "c")])
        #expect(m.activeCount == 0)
        #expect(m.nextDeadline() == nil)
        out = []
        let report = m.applyConfig([(note("c", .at(t0 + .seconds(10)), source: .config), "f1")], now: t0, into: &out)
        #expect(report.unchanged == ["c"], "an unchanged definition stays cancelled")
        #expect(!m.isActive("c"))
    }

    @Test("an alarm rings every period until acknowledged; acknowledge withdraws and forgets it")
    func ringAndAcknowledge() throws {
        var m = machine([BackendInfo(name: "popup"), BackendInfo(name: "alarm", ringPolicy: Self.alarm)])
        try schedule(&m, note("wake", .at(t0 + .seconds(10)), backends: ["popup", "alarm"]))
        let fired = advance(&m, to: t0 + .seconds(10))
        #expect(delivered(fired) == ["wake#1:scheduled"])
        #expect(m.summary("wake")?.state == .ringing(since: t0 + .seconds(10), rings: 1))
        let ring = advance(&m, to: t0 + .seconds(70))
        #expect(delivered(ring) == ["wake#1:ring"])
        if case .deliver(let d)? = ring.first { #expect(d.targets == ["alarm"]); #expect(d.ring == 2) }
        var out: [MachineAction] = []
        m.deliveryFinished(key: "wake", occurrence: Occurrence(instant: t0 + .seconds(10), number: 1), backend: "popup", into: &out)
        m.deliveryFinished(key: "wake", occurrence: Occurrence(instant: t0 + .seconds(10), number: 1), backend: "alarm", into: &out)
        out = []
        #expect(try m.acknowledge("wake", into: &out))
        #expect(persisted(out) == [.alert(key: "wake", .idle), .delete(key: "wake", keepUserInfo: true)])
        #expect(withdrawals(out) == ["wake@popup,alarm:acknowledged"])
        #expect(events(out) == [.acknowledged(key: "wake")])
        #expect(throws: CenterError.self) { try m.acknowledge("wake", into: &out) }
    }

    @Test("an alarm nobody answers stops after its last ring")
    func unanswered() throws {
        var m = machine([BackendInfo(name: "alarm", ringPolicy: Self.alarm)])
        try schedule(&m, note("wake", .at(t0 + .seconds(10)), backends: ["alarm"]))
        _ = advance(&m, to: t0 + .seconds(10))
        let second = advance(&m, to: t0 + .seconds(10 + 60))
        let third = advance(&m, to: t0 + .seconds(10 + 60 * 2))
        #expect(rings(second) == [2])
        #expect(rings(third) == [3])
        #expect(m.summary("wake")?.state == .ringing(since: t0 + .seconds(10), rings: 3))
        let late = advance(&m, to: t0 + .seconds(10 + 60 * 3))
        #expect(events(late) == [.unanswered(key: "wake", rings: 3)])
        #expect(withdrawals(late) == ["wake@alarm:unanswered"])
        #expect(m.summary("wake")?.state == .unanswered(rings: 3))
    }

    /// The machine's side of `AlarmTests/awayUsesNoRings`: rings were counted by the clock from
    /// the first, so a jump of three minutes left this alarm unanswered having rung once.
    @Test("a clock jump over several rings plays the next ring once and goes on from it")
    func ringAfterJump() throws {
        var m = machine([BackendInfo(name: "alarm", ringPolicy: Self.alarm)])
        try schedule(&m, note("wake", .at(t0 + .seconds(10)), backends: ["alarm"]))
        _ = advance(&m, to: t0 + .seconds(10))
        let resumed = advance(&m, to: t0 + .seconds(10 + 60 * 3))
        #expect(rings(resumed) == [2])
        #expect(events(resumed).isEmpty)
        #expect(m.summary("wake")?.nextFire == t0 + .seconds(10 + 60 * 4))
        #expect(rings(advance(&m, to: t0 + .seconds(10 + 60 * 4))) == [3])
        #expect(events(advance(&m, to: t0 + .seconds(10 + 60 * 5))) == [.unanswered(key: "wake", rings: 3)])
    }

    /// Regression (review of the merged change): after downtime over both a ring and the next
    /// occurrence of a repeating alarm, the old occurrence's ring played and was cut at once by
    /// the new firing.
    @Test("a newer occurrence due with a late ring supersedes it: only the new firing rings")
    func newOccurrenceSupersedesLateRing() throws {
        var m = machine([BackendInfo(name: "alarm", ringPolicy: Self.alarm)])
        try schedule(&m, note("wake", .every(period: .seconds(600), starting: t0 + .seconds(10), count: nil, until: nil),
                              backends: ["alarm"]))
        _ = advance(&m, to: t0 + .seconds(10))
        let resumed = advance(&m, to: t0 + .seconds(10 + 600 + 5))
        #expect(delivered(resumed) == ["wake#2:late"], "\(delivered(resumed))")
        #expect(rings(resumed).isEmpty)
        #expect(m.summary("wake")?.state == .ringing(since: t0 + .seconds(615), rings: 1))
        // With the newer occurrence skipped by its policy, the old one rings on.
        var s = machine([BackendInfo(name: "alarm", ringPolicy: Self.alarm)])
        try schedule(&s, note("wake", .every(period: .seconds(600), starting: t0 + .seconds(10), count: nil, until: nil),
                              missed: .skip, backends: ["alarm"]))
        _ = advance(&s, to: t0 + .seconds(10))
        let skipped = advance(&s, to: t0 + .seconds(10 + 600 + 5))
        #expect(rings(skipped) == [2], "\(delivered(skipped))")
    }

    @Test("snooze silences now and re-delivers the last occurrence when it ends")
    func snooze() throws {
        var m = machine()
        try schedule(&m, note("w", .every(period: .hours(24), starting: t0 + .seconds(10), count: nil, until: nil)))
        var out: [MachineAction] = []
        #expect(throws: CenterError.self) { try m.snooze("w", for: .minutes(5), now: t0, into: &out) }
        _ = advance(&m, to: t0 + .seconds(10))
        let until = try m.snooze("w", for: .seconds(300), now: t0 + .seconds(20), into: &out)
        #expect(until == t0 + .seconds(320))
        #expect(persisted(out) == [.alert(key: "w", .snoozed(until: until))])
        #expect(m.nextDeadline() == until)
        let a = advance(&m, to: until)
        #expect(delivered(a) == ["w#1:snooze-ended"])
        #expect(m.summary("w")?.state == .idle)
    }

    @Test("regression: a newer occurrence ends the snooze of a repeating notification; none is delivered twice")
    func snoozeSupersededByTheNextOccurrence() throws {
        var m = machine()
        try schedule(&m, note("rep", .every(period: .seconds(2), starting: t0 + .seconds(2), count: nil, until: nil)))
        _ = advance(&m, to: t0 + .seconds(2))
        var out: [MachineAction] = []
        let until = try m.snooze("rep", for: .seconds(10), now: t0 + .seconds(3), into: &out)
        var seen: [String] = []
        for s in stride(from: Int64(4), through: 16, by: 1) {
            seen += delivered(advance(&m, to: t0 + .seconds(s)))
            if s == 4 { #expect(m.summary("rep")?.state == .idle, "occurrence 2 ends the snooze") }
        }
        // Before: 2..6 on time, then occurrence 6 again at `until` (snooze-ended).
        #expect(seen == (2...8).map { "rep#\($0):scheduled" }, "until \(until): \(seen)")
    }

    @Test("the quota refuses a new key at the limit and changes nothing; a replace still passes")
    func quota() throws {
        var m = machine()
        var out: [MachineAction] = []
        _ = try m.schedule(note("a", .at(t0 + .seconds(5))), replace: true, now: t0, maxPending: 1, into: &out)
        out = []
        #expect(throws: CenterError.self) {
            _ = try m.schedule(note("b", .at(t0 + .seconds(5))), replace: true, now: t0, maxPending: 1, into: &out)
        }
        #expect(out.isEmpty)
        _ = try m.schedule(note("a", .at(t0 + .seconds(9))), replace: true, now: t0, maxPending: 1, into: &out)
        #expect(m.summary("a")?.nextFire == t0 + .seconds(9))
    }

    @Test("rollback restores exactly the state before the recorded batch")
    func rollback() throws {
        var m = machine()
        try schedule(&m, note("keep", .at(t0 + .seconds(10))))
        try schedule(&m, note("gone", .at(t0 + .seconds(30))))
        m.beginRecording()
        try schedule(&m, note("keep", .at(t0 + .seconds(99))))
        try schedule(&m, note("new", .at(t0 + .seconds(5))))
        var out: [MachineAction] = []
        _ = m.cancel("gone", into: &out)
        m.setBackends([])
        m.rollback()
        #expect(m.backendNames == ["spy"])
        #expect(m.activeSummaries().map(\.key) == ["keep", "gone"])
        #expect(m.summary("keep")?.nextFire == t0 + .seconds(10))
        #expect(m.nextDeadline() == t0 + .seconds(10))
        let fired = advance(&m, to: t0 + .seconds(10)) + advance(&m, to: t0 + .seconds(30))
        #expect(delivered(fired) == ["keep#1:scheduled", "gone#1:scheduled"])
    }

    @Test("a post delivers now and stays ringing for an alarm")
    func post() throws {
        var m = machine([BackendInfo(name: "alarm", ringPolicy: Self.alarm)])
        var out: [MachineAction] = []
        _ = try m.post(note("now", .at(t0), backends: ["alarm"]), now: t0, into: &out)
        #expect(delivered(out) == ["now#1:post-now"])
        #expect(m.summary("now")?.state == .ringing(since: t0, rings: 1))
        #expect(m.nextDeadline() == t0 + .seconds(60))
    }

    @Test("a post with replace false keeps a pending notification of its key and delivers nothing; with replace, or once nothing is pending, it posts (regression: replace was ignored and the scheduled one silently gone)")
    func postWithoutReplace() throws {
        var m = machine()
        var out: [MachineAction] = []
        _ = try m.schedule(note("pn", .at(t0 + .hours(1))), replace: true, now: t0, maxPending: 100, into: &out)
        out = []
        #expect(try m.post(note("pn", .at(t0)), replace: false, now: t0, into: &out) == "pn")
        #expect(out.isEmpty, "a post that keeps the pending one must change nothing")
        #expect(m.summary("pn")?.nextFire == t0 + .hours(1))
        _ = try m.post(note("pn", .at(t0)), replace: true, now: t0, into: &out)
        #expect(delivered(out) == ["pn#1:post-now"])
        out = []
        _ = try m.post(note("fresh", .at(t0)), replace: false, now: t0, into: &out)
        #expect(delivered(out) == ["fresh#1:post-now"])
    }

    @Test("per-client quota: counted by the machine, a replace of one's own passes, a client with nothing pending is forgotten")
    func perClientQuota() throws {
        var m = machine()
        let a = NotificationMachine.Client(name: ":1.7", limit: 2)
        let b = NotificationMachine.Client(name: ":1.8", limit: 2)
        var out: [MachineAction] = []
        func add(_ key: String, _ c: NotificationMachine.Client, at s: Int64 = 10) throws(CenterError) {
            _ = try m.schedule(note(key, .at(t0 + .seconds(s))), replace: true, now: t0, maxPending: 100, client: c, into: &out)
        }
        try add("a1", a)
        try add("a2", a)
        #expect(throws: CenterError.self) { try add("a3", a) }
        try add("a1", a, at: 20)
        try add("b1", b)
        #expect(m.pending(of: ":1.7") == 2)
        #expect(m.clientCount == 2)
        _ = m.cancel("a2", into: &out)
        try add("a3", a)
        // Firing frees the slot: a one-shot that fired is no longer pending.
        _ = advance(&m, to: t0 + .seconds(10))
        #expect(m.pending(of: ":1.7") == 1, "a3 fired, a1 (moved to +20 s) is still pending")
        #expect(m.pending(of: ":1.8") == 0)
        #expect(m.clientCount == 1, "a client with nothing pending is forgotten")
        do throws(CenterError) {
            try add("b9", b, at: -5)
            Issue.record("a past time was accepted")
        } catch {
            #expect(error.code == .invalidTrigger)
        }
        do throws(CenterError) {
            try add("a4", a)
            try add("a5", a)
            Issue.record("a third pending notification was accepted")
        } catch {
            #expect(error.code == .quotaExceeded)
            #expect(error.message.contains("max_pending_per_client"))
        }
    }

    @Test("dropping a claim made ahead, before its instant, says so (cancel, replace, reload, PostNow), and a Schedule without replace keeps it; one whose instant has come does not")
    func unclaimedBeforeTheInstant() throws {
        func unclaimed(_ actions: [MachineAction]) -> [String] {
            actions.compactMap { if case .unclaimed(let k, let o, let due) = $0 { return "\(k)#\(o.number)@\(due == t0 + .seconds(10))" } else { return nil } }
        }
        var m = machine()
        let early = t0 + .seconds(10) - TimeSpan(microseconds: 20_000)
        for key in ["cancel", "replace", "late", "posted", "kept"] { try schedule(&m, note(key, .at(t0 + .seconds(10)))) }
        try schedule(&m, note("late-tick", .every(period: .minutes(1), starting: t0 + .seconds(10), count: nil, until: nil)))
        let cfg: [(notification: Notification, fingerprint: String)] = [(note("gone", .at(t0 + .seconds(10)), source: .config), "g"), (note("edited", .at(t0 + .seconds(10)), source: .config), "e")]
        var out: [MachineAction] = []
        _ = m.applyConfig(cfg, now: t0, into: &out)
        out = []
        #expect(m.claimAhead(until: t0 + .seconds(10), limit: 100, into: &out) == 8)
        #expect(unclaimed(out).isEmpty, "claiming drops nothing")
        out = []
        #expect(m.cancel("cancel", now: early, into: &out))
        #expect(unclaimed(out) == ["cancel#1@true"])
        #expect(unclaimed(try schedule(&m, note("replace", .at(t0 + .seconds(30))), now: early)) == ["replace#1@true"])
        out = []
        _ = m.applyConfig([(note("edited", .at(t0 + .seconds(40)), source: .config), "e2")], now: early, into: &out)
        #expect(unclaimed(out).sorted() == ["edited#1@true", "gone#1@true"])
        // A Schedule that must not replace finds the claimed one-shot still pending, as Cancel does.
        out = []
        #expect(try m.schedule(note("kept", .at(t0 + .seconds(50))), replace: false, now: early, maxPending: 100, into: &out) == "kept")
        #expect(out.isEmpty, "kept as it is: \(out)")
        #expect(m.inDelivery["kept"] != nil)
        // PostNow on the key delivers the new content now; the claimed firing never goes out.
        out = []
        _ = try m.post(note("posted", .at(t0 + .seconds(10))), now: early, into: &out)
        #expect(unclaimed(out) == ["posted#1@true"])
        // At the instant the firing may be out: the claim is dropped and its entry stays.
        out = []
        #expect(m.cancel("late-tick", now: t0 + .seconds(10), into: &out))
        #expect(!m.cancel("late", now: t0 + .seconds(10), into: &out), "a one-shot whose instant has come is no longer pending")
        #expect(unclaimed(out).isEmpty)
        #expect(m.inDelivery["late-tick"] == nil)
    }
}
