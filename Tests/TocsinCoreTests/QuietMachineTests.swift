import Testing
import TocsinConfig
import TocsinCore
import TocsinTime
import TocsinModel

/// The pure quiet-hours machine: windows, the manual switch, routing and release, as actions.
@Suite("Quiet hours: the machine")
struct QuietMachineTests {
    /// t0 is Monday 2026-03-02 09:00 UTC.
    static func window(_ expr: String, _ duration: TimeSpan) -> QuietWindow {
        QuietWindow(spec: try! CalendarSpec.parse(expr), zone: .utc, duration: duration)
    }

    /// Weekday nights 22:00-07:00 and all of Sunday, in UTC.
    static func nights() -> QuietMachine {
        var m = QuietMachine()
        m.windows = [window("Mon..Fri 22:00", .hours(9)), window("Sun 00:00", .hours(24))]
        m.modes = ["popup": .hold, "log": .deliver, "bin": .drop]
        return m
    }

    static func firing(_ key: String, due: Instant, urgency: Urgency = .normal, alarm: Bool = false,
                       backends: [String] = ["popup", "log", "bin"]) -> Firing {
        var n = Notification(key: key, title: "title \(key)", trigger: .at(due))
        n.urgency = urgency
        var f = Firing(notification: n, occurrence: Occurrence(instant: due, number: 1), due: due, fired: due, reason: .scheduled)
        f.backends = backends
        f.isAlarm = alarm
        return f
    }

    struct Row: Sendable, CustomTestStringConvertible {
        var name: String
        var hoursAfterT0: Int64
        var quiet: Bool
        var testDescription: String { name }
    }

    static let rows: [Row] = [
        Row(name: "Mon 09:00 is not quiet", hoursAfterT0: 0, quiet: false),
        Row(name: "Mon 21:00 is not quiet", hoursAfterT0: 12, quiet: false),
        Row(name: "Mon 22:00 (start) is quiet", hoursAfterT0: 13, quiet: true),
        Row(name: "Tue 06:00 is quiet", hoursAfterT0: 21, quiet: true),
        Row(name: "Tue 07:00 (end) is not quiet", hoursAfterT0: 22, quiet: false),
        Row(name: "Sat 06:00 (Fri night) is quiet", hoursAfterT0: 4 * 24 + 21, quiet: true),
        Row(name: "Sat 12:00 is not quiet", hoursAfterT0: 5 * 24 + 3, quiet: false),
        Row(name: "Sun 12:00 is quiet", hoursAfterT0: 6 * 24 + 3, quiet: true),
        Row(name: "Sun 23:59 is quiet", hoursAfterT0: 6 * 24 + 14, quiet: true),
        Row(name: "Mon 08:00 after Sunday is not quiet", hoursAfterT0: 7 * 24 - 1, quiet: false),
    ]

    @Test("windows: on_calendar start plus duration", arguments: rows)
    func windows(_ row: Row) {
        #expect(Self.nights().isQuiet(at: t0 + .hours(row.hoursAfterT0)) == row.quiet, "row '\(row.name)'")
    }

    @Test("next change: the next start when off, the end of the covering window when on")
    func nextChange() {
        let m = Self.nights()
        #expect(m.nextChange(after: t0) == t0 + .hours(13))
        #expect(m.nextChange(after: t0 + .hours(14)) == t0 + .hours(22))
        // Saturday 22:00..Sunday: Sunday 00:00 + 24h, then Monday 00:00 is not quiet.
        #expect(m.nextChange(after: t0 + .hours(6 * 24)) == t0 + .hours(6 * 24 + 15))
    }

    @Test("touching windows are followed to the end of the last")
    func chainedWindows() {
        var m = QuietMachine()
        m.windows = [Self.window("Mon 22:00", .hours(2)), Self.window("Tue 00:00", .hours(7))]
        #expect(m.scheduleEnd(at: t0 + .hours(13)) == t0 + .hours(22))
    }

    @Test("routing while quiet: popup holds, log delivers, drop drops; critical and alarms pass by default")
    func routing() {
        var m = Self.nights()
        let night = t0 + .hours(14)
        let f = Self.firing("a", due: night)
        #expect(m.route(f, now: night) == QuietRouting(deliver: ["log"], hold: ["popup"], drop: ["bin"]))
        #expect(m.route(f, now: t0) == QuietRouting(deliver: ["popup", "log", "bin"]), "not quiet: all deliver")
        let critical = Self.firing("c", due: night, urgency: .critical)
        #expect(m.route(critical, now: night).deliver == ["popup", "log", "bin"])
        let alarm = Self.firing("w", due: night, alarm: true)
        #expect(m.route(alarm, now: night).deliver == ["popup", "log", "bin"])
        m.criticalPasses = false
        m.alarmsPass = false
        #expect(m.route(critical, now: night).hold == ["popup"])
        #expect(m.route(alarm, now: night).hold == ["popup"])
    }

    @Test("a later firing of the same key replaces the held one for that backend")
    func holdReplaces() {
        var m = Self.nights()
        var actions: [MachineAction] = []
        m.hold(Self.firing("hourly", due: t0), backend: "popup", into: &actions)
        m.hold(Self.firing("hourly", due: t0 + .hours(1)), backend: "popup", into: &actions)
        #expect(m.held.count == 1)
        #expect(m.held.first?.firing.due == t0 + .hours(1))
        #expect(actions.contains(.persist(.unhold([1]))), "the replaced row is deleted in the same write")
    }

    @Test("quiet ending releases up to three held firings one by one, oldest first")
    func releaseOneByOne() {
        var m = Self.nights()
        var actions: [MachineAction] = []
        m.evaluate(now: t0 + .hours(13), into: &actions)
        #expect(m.active)
        for (key, h) in [("b", 15), ("a", 14), ("c", 16)] {
            m.hold(Self.firing(key, due: t0 + .hours(Int64(h))), backend: "popup", into: &actions)
        }
        actions = []
        m.evaluate(now: t0 + .hours(22), into: &actions)
        let delivered = actions.compactMap { a -> String? in if case .deliverHeld(let f) = a { return f.key }; return nil }
        #expect(delivered == ["a", "b", "c"])
        #expect(actions.allSatisfy { if case .deliverHeld(let f) = $0 { return f.reason == .quietEnded && f.fired == t0 + .hours(22) }; return true })
        #expect(actions.contains(.persist(.unhold([1, 2, 3]))))
        #expect(actions.contains(.persist(.quietActive(false))))
        #expect(m.held.isEmpty)
        guard case .emit(.quietChanged(let s))? = actions.last else { Issue.record("no change emitted"); return }
        #expect(!s.active)
    }

    @Test("more than three become one summary, titles oldest first")
    func releaseSummary() {
        var m = Self.nights()
        var actions: [MachineAction] = []
        m.evaluate(now: t0 + .hours(13), into: &actions)
        for i in (0..<5).reversed() {
            m.hold(Self.firing("k\(i)", due: t0 + .hours(14) + .minutes(Int64(i))), backend: "popup", into: &actions)
        }
        actions = []
        m.evaluate(now: t0 + .hours(22), into: &actions)
        let delivered = actions.compactMap { a -> Firing? in if case .deliverHeld(let f) = a { return f }; return nil }
        #expect(delivered.count == 1)
        #expect(delivered.first?.key == QuietMachine.summaryKey)
        #expect(delivered.first?.notification.title == "5 notifications during quiet hours")
        #expect(delivered.first?.notification.body == "title k0\ntitle k1\ntitle k2\ntitle k3\ntitle k4")
    }

    @Test("switching off inside a window lasts to its end; the next window is quiet again")
    func switchOffInsideWindow() {
        var m = Self.nights()
        var actions: [MachineAction] = []
        m.evaluate(now: t0 + .hours(14), into: &actions)
        #expect(m.active)
        actions = []
        m.switchOff(now: t0 + .hours(15), into: &actions)
        #expect(!m.active)
        #expect(actions.first == .persist(.quietSwitch(QuietOverride(on: false, until: t0 + .hours(22)))))
        #expect(!m.isQuiet(at: t0 + .hours(20)))
        #expect(m.isQuiet(at: t0 + .hours(37)), "Tuesday night is quiet again")
    }

    @Test("switching on for a while expires back to the schedule")
    func switchOnFor() {
        var m = Self.nights()
        var actions: [MachineAction] = []
        m.switchOn(until: t0 + .hours(1), now: t0, into: &actions)
        #expect(m.active)
        #expect(m.status(at: t0) == QuietStatus(active: true, source: "manual", until: t0 + .hours(1), held: 0))
        actions = []
        m.evaluate(now: t0 + .hours(1), into: &actions)
        #expect(!m.active)
        #expect(actions.first == .persist(.quietSwitch(nil)))
        #expect(m.status(at: t0 + .hours(1)).source == "none")
    }

    enum Outcome: Hashable, Sendable { case ok(Instant?), error(String) }

    struct UntilRow: Sendable, CustomTestStringConvertible {
        var name: String
        var forText: String
        var untilText: String
        var expected: Outcome
        var testDescription: String { name }
    }

    static let untilRows: [UntilRow] = [
        UntilRow(name: "neither: until switched off", forText: "", untilText: "", expected: .ok(nil)),
        UntilRow(name: "for 1h", forText: "1h", untilText: "", expected: .ok(t0 + .hours(1))),
        UntilRow(name: "until 07:00 is the next 07:00", forText: "", untilText: "07:00", expected: .ok(t0 + .hours(22))),
        UntilRow(name: "until a timestamp", forText: "", untilText: "@1772449200", expected: .ok(t0 + .hours(2))),
        UntilRow(name: "until tomorrow is the next midnight in the daemon's zone", forText: "", untilText: "tomorrow", expected: .ok(t0 + .hours(15))),
        UntilRow(name: "bad duration names 'for' and the column", forText: "1 parsecs", untilText: "",
                 expected: .error("for: unknown time unit 'parsecs' (expected us, ms, s, min, h, d, w, M, y) (column 3 of the value)")),
        UntilRow(name: "both is refused", forText: "1h", untilText: "07:00", expected: .error("for: give 'for' or 'until', not both")),
        UntilRow(name: "a past timestamp is refused", forText: "", untilText: "@1000", expected: .error("until: @1000 is not in the future")),
        UntilRow(name: "regression: a calendar expression that never elapses says so (was: expected a four-digit year)",
                 forText: "", untilText: "*-02-30", expected: .error("until: the calendar expression '*-02-30 00:00:00' never elapses again")),
        UntilRow(name: "regression: neither a calendar expression nor a timestamp gives both reasons (was: expected a four-digit year)",
                 forText: "", untilText: "25:00", expected: .error("until: as a time of day or calendar expression, hour value out of range (column 1 of the value); "
                                  + "as a timestamp, hour out of range (column 1 of the value)")),
    ]

    @Test("quiet on --for/--until as the CLI and D-Bus read it", arguments: untilRows)
    func until(_ row: UntilRow) {
        let got: Outcome
        do { got = .ok(try QuietRequest.until(for: row.forText, until: row.untilText, now: t0, zone: .utc)) } catch {
            got = .error("\(error.field ?? ""): \(error.message)")
        }
        #expect(got == row.expected, "row '\(row.name)'")
    }
}
