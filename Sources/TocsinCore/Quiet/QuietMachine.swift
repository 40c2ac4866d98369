public import TocsinModel
public import TocsinTime
import TocsinSystem

/// A quiet window with its zone resolved: quiet from each elapse of `spec` for `duration`.
public struct QuietWindow: Hashable, Sendable {
    public var spec: CalendarSpec
    public var zone: TimeZoneRules
    public var duration: TimeSpan
    public init(spec: CalendarSpec, zone: TimeZoneRules, duration: TimeSpan) {
        self.spec = spec; self.zone = zone; self.duration = duration
    }

    /// The start of the window that covers `t`, if any: the first elapse after `t - duration` is
    /// the only candidate, so this is one forward search.
    func start(covering t: Instant) -> Instant? {
        guard let e = spec.nextElapse(after: t - duration, in: zone), e <= t else { return nil }
        return e
    }

    /// The end of the latest window that has begun by `t` and still covers it.
    func end(covering t: Instant) -> Instant? {
        guard var e = start(covering: t) else { return nil }
        // Later elapses within the same span extend it (a window longer than its period).
        var steps = 0
        while steps < 10_000, let n = spec.nextElapse(after: e, in: zone), n <= t {
            e = n
            steps += 1
        }
        return e + duration
    }
}

/// A manual switch (`tocsin quiet on|off`), until an instant or until switched again.
public struct QuietOverride: Hashable, Sendable {
    public var on: Bool
    /// nil: until the next switch.
    public var until: Instant?
    public init(on: Bool, until: Instant?) { self.on = on; self.until = until }
}

/// A firing a backend holds while quiet: enough of it to deliver it later even when the
/// notification has finished, been cancelled or been replaced meanwhile.
public struct HeldFiring: Hashable, Sendable {
    /// Order of holding; assigned by the machine, durable as the row id.
    public var id: Int64
    public var backend: String
    public var firing: Firing
    public init(id: Int64, backend: String, firing: Firing) { self.id = id; self.backend = backend; self.firing = firing }
}

/// Whether it is quiet now, why, and until when (`tocsin quiet`, the `Quiet` property).
public struct QuietStatus: Hashable, Sendable {
    public var active: Bool
    /// `manual` (switched on or off by a person), `schedule` or `none`.
    public var source: String
    /// When the current state next changes by itself; nil: not by itself.
    public var until: Instant?
    /// How many firings are held.
    public var held: Int
    public init(active: Bool, source: String, until: Instant?, held: Int) {
        self.active = active; self.source = source; self.until = until; self.held = held
    }
}

/// `[quiet]` as the machine takes it: each window's zone resolved (`SpecResolver.quietRules`,
/// where zone names are checked), the modes the config gives by backend name.
public struct QuietRules: Hashable, Sendable {
    public var windows: [QuietWindow]
    public var modes: [String: QuietMode]
    public var criticalPasses: Bool
    public var alarmsPass: Bool
    public init(windows: [QuietWindow] = [], modes: [String: QuietMode] = [:], criticalPasses: Bool = true, alarmsPass: Bool = true) {
        self.windows = windows; self.modes = modes; self.criticalPasses = criticalPasses; self.alarmsPass = alarmsPass
    }
}

/// How one firing is routed while quiet: which of its backends deliver now, hold or drop it.
public struct QuietRouting: Hashable, Sendable {
    public var deliver: [String] = []
    public var hold: [String] = []
    public var drop: [String] = []
    public init(deliver: [String] = [], hold: [String] = [], drop: [String] = []) {
        self.deliver = deliver; self.hold = hold; self.drop = drop
    }
}

/// Quiet hours as a pure state machine, part of `NotificationMachine` (its `quiet`): it reads no
/// clock and does no I/O; every input takes the instant and appends `MachineAction`s, which the
/// center commits and performs with the rest of the batch (`.persist` of the quiet `StoreOp`s,
/// `.deliverHeld`, `.emit(.quietChanged)`). `NotificationMachine` records its inputs for rollback.
public struct QuietMachine: Sendable {
    /// More held firings than this for one backend are released as one summary instead of one
    /// by one (see docs/CONFIG.md, "Quiet hours", for why).
    public static let summaryThreshold = 3
    /// The key of the summary firing, so a popup server replaces an older summary in place.
    public static let summaryKey = "tocsin-quiet-summary"
    /// Titles listed in a summary's body; the rest are counted.
    public static let summaryLines = 10

    public var windows: [QuietWindow] = []
    /// Effective mode per backend instance while quiet (config over the backend's default):
    /// `refreshModes` derives it from `configured` and the backends.
    public var modes: [String: QuietMode] = [:]
    /// `[quiet] backends`: the config's word per backend name.
    public var configured: [String: QuietMode] = [:]
    public var criticalPasses = true
    public var alarmsPass = true
    public private(set) var override: QuietOverride?
    /// Whether it was quiet at the last evaluation: a change is what emits `QuietChanged`
    /// and what releases the held firings.
    public private(set) var active = false
    public private(set) var held: [HeldFiring] = []
    private var nextID: Int64 = 1

    public init() {}

    /// Start-up: what the store held.
    public mutating func restore(override: QuietOverride?, active: Bool, held: [HeldFiring]) {
        self.override = override
        self.active = active
        self.held = held.sorted { $0.id < $1.id }
        nextID = (self.held.last?.id ?? 0) + 1
    }

    /// `[quiet]` with its windows resolved (`SpecResolver.quietRules`), for `backends`.
    public mutating func configure(_ rules: QuietRules, backends: [BackendInfo]) {
        windows = rules.windows
        configured = rules.modes
        criticalPasses = rules.criticalPasses
        alarmsPass = rules.alarmsPass
        refreshModes(backends: backends)
    }

    /// Each backend's mode: the config's word, else the backend's own default.
    public mutating func refreshModes(backends: [BackendInfo]) {
        var out: [String: QuietMode] = [:]
        for b in backends { out[b.name] = configured[b.name] ?? b.quietMode }
        modes = out
    }

    // MARK: Reading

    func overrideInForce(at now: Instant) -> QuietOverride? {
        guard let o = override else { return nil }
        if let u = o.until, u <= now { return nil }
        return o
    }

    /// The end of the scheduled quiet that covers `now`, following windows that overlap or
    /// touch; nil when no window covers it.
    public func scheduleEnd(at now: Instant) -> Instant? {
        var end: Instant?
        var t = now
        for _ in 0..<64 {
            let ends = windows.compactMap { $0.end(covering: t) }
            guard let e = ends.max() else { break }
            end = e
            t = e
        }
        return end
    }

    public func scheduleActive(at now: Instant) -> Bool { windows.contains { $0.start(covering: now) != nil } }

    public func isQuiet(at now: Instant) -> Bool {
        if let o = overrideInForce(at: now) { return o.on }
        return scheduleActive(at: now)
    }

    /// When the quiet state may next change by itself: the wake-up the center arms for it.
    public func nextChange(after now: Instant) -> Instant? {
        if let o = overrideInForce(at: now) { return o.until }
        if let end = scheduleEnd(at: now) { return end }
        return windows.compactMap { $0.spec.nextElapse(after: now, in: $0.zone) }.min()
    }

    public func status(at now: Instant) -> QuietStatus {
        let o = overrideInForce(at: now)
        let active = isQuiet(at: now)
        let source = o != nil ? "manual" : (active ? "schedule" : "none")
        return QuietStatus(active: active, source: source, until: nextChange(after: now), held: held.count)
    }

    /// Which backends of `firing` deliver, hold or drop it at `now`.
    public func route(_ firing: Firing, now: Instant) -> QuietRouting { route(firing, quiet: isQuiet(at: now)) }

    /// The same with "is it quiet" worked out once for a whole batch.
    public func route(_ firing: Firing, quiet: Bool) -> QuietRouting {
        var r = QuietRouting()
        let passes = !quiet
            || (criticalPasses && firing.notification.urgency == .critical)
            || (alarmsPass && firing.isAlarm)
        for b in firing.backends {
            switch passes ? .deliver : (modes[b] ?? .deliver) {
            case .deliver: r.deliver.append(b)
            case .hold: r.hold.append(b)
            case .drop: r.drop.append(b)
            }
        }
        return r
    }

    // MARK: Inputs

    /// Holds `firing` for `backend`. An older held firing of the same key for the same backend is
    /// replaced: a popup replaces it in place anyway, and an hourly reminder held all night is
    /// one thing to see in the morning, not eight.
    public mutating func hold(_ firing: Firing, backend: String, into out: inout [MachineAction]) {
        var f = firing
        f.backends = [backend]
        let replaced = held.filter { $0.backend == backend && $0.firing.key == firing.key }.map(\.id)
        if !replaced.isEmpty {
            held.removeAll { replaced.contains($0.id) }
            out.append(.persist(.unhold(replaced)))
        }
        let item = HeldFiring(id: nextID, backend: backend, firing: f)
        nextID += 1
        held.append(item)
        out.append(.persist(.hold(item)))
    }

    /// Undoes `hold` when it could not be made durable (the firing is delivered instead).
    public mutating func unhold(_ id: Int64) { held.removeAll { $0.id == id } }

    /// Forgets the held firings of the notifications `matching` says (one cancelled or
    /// replaced): nothing of theirs goes out when quiet ends.
    mutating func drop(matching: (String) -> Bool, into out: inout [MachineAction]) {
        let ids = held.filter { matching($0.firing.key) }.map(\.id)
        guard !ids.isEmpty else { return }
        let dropped = Set(ids)
        held.removeAll { dropped.contains($0.id) }
        out.append(.persist(.unhold(ids)))
    }

    /// `tocsin quiet on [--until T]`.
    public mutating func switchOn(until: Instant?, now: Instant, into out: inout [MachineAction]) {
        override = QuietOverride(on: true, until: until)
        out.append(.persist(.quietSwitch(override)))
        evaluate(now: now, into: &out)
    }

    /// `tocsin quiet off`: off now, and for the rest of a scheduled window that covers now (else
    /// the schedule would switch it straight back on); the next window is quiet again.
    public mutating func switchOff(now: Instant, into out: inout [MachineAction]) {
        if let end = scheduleEnd(at: now) {
            override = QuietOverride(on: false, until: end)
        } else {
            override = nil
        }
        out.append(.persist(.quietSwitch(override)))
        evaluate(now: now, into: &out)
    }

    /// Time passed (a wake-up, start-up): expires a manual switch, and on a change of state
    /// emits it and, when quiet ended, releases what was held.
    public mutating func evaluate(now: Instant, into out: inout [MachineAction]) {
        if let o = override, let u = o.until, u <= now {
            override = nil
            out.append(.persist(.quietSwitch(nil)))
        }
        let nowQuiet = isQuiet(at: now)
        guard nowQuiet != active else { return }
        active = nowQuiet
        out.append(.persist(.quietActive(nowQuiet)))
        if !nowQuiet { release(now: now, into: &out) }
        out.append(.emit(.quietChanged(status(at: now))))
    }

    /// Quiet ended: per backend, up to `summaryThreshold` held firings are delivered one by one,
    /// oldest first; more become one summary firing listing their titles oldest first.
    mutating func release(now: Instant, into out: inout [MachineAction]) {
        guard !held.isEmpty else { return }
        let items = held
        held = []
        out.append(.persist(.unhold(items.map(\.id))))
        var order: [String] = []
        var byBackend: [String: [HeldFiring]] = [:]
        for item in items {
            if byBackend[item.backend] == nil { order.append(item.backend) }
            byBackend[item.backend, default: []].append(item)
        }
        for backend in order {
            let list = (byBackend[backend] ?? []).sorted { ($0.firing.due, $0.id) < ($1.firing.due, $1.id) }
            if list.count <= Self.summaryThreshold {
                for item in list {
                    var f = item.firing
                    f.reason = .quietEnded
                    f.fired = now
                    f.backends = [backend]
                    out.append(.deliverHeld(f))
                }
            } else {
                out.append(.deliverHeld(Self.summary(list, now: now, backend: backend)))
            }
        }
    }

    static func summary(_ list: [HeldFiring], now: Instant, backend: String) -> Firing {
        var lines = list.prefix(summaryLines).map { $0.firing.notification.title }
        if list.count > summaryLines { lines.append("and \(list.count - summaryLines) more") }
        let n = Notification(key: summaryKey, title: "\(list.count) notifications during quiet hours",
                             body: lines.joined(separator: "\n"), trigger: .at(now))
        var f = Firing(notification: n, occurrence: Occurrence(instant: now, number: 1), due: list[0].firing.due,
                       fired: now, reason: .quietEnded)
        f.backends = [backend]
        return f
    }
}

/// The end of a `quiet on` request, shared by the CLI and D-Bus so both read it alike.
public enum QuietRequest: Sendable {
    /// `forText` is a duration (`1h`); `untilText` a time of day or calendar expression (`07:00`,
    /// its next elapse in `zone`) or a timestamp (RFC 3339, `@unix`). Both empty: until switched
    /// off. A mistake names the field (through `CenterError.field`, which a D-Bus error puts in
    /// front as `field 'for': `, so the text does not repeat it) and the column in the value.
    public static func until(for forText: String, until untilText: String, now: Instant,
                             zone: TimeZoneRules, zones: ZoneCache = ZoneCache()) throws(CenterError) -> Instant? {
        if !forText.isEmpty && !untilText.isEmpty {
            throw CenterError(.invalidArguments, "give 'for' or 'until', not both", field: "for")
        }
        if !forText.isEmpty {
            let span: TimeSpan
            do { span = try TimeSpan.parsePositive(forText) } catch {
                throw CenterError(.invalidArguments, "\(error.message) (column \(error.column) of the value)", field: "for")
            }
            guard let end = TimeLimit.adding(span, to: now) else {
                throw CenterError(.invalidArguments, TimeLimit.pastLatest(field: "for", value: forText), field: "for")
            }
            return end
        }
        guard !untilText.isEmpty else { return nil }
        // A time of day or calendar expression first ("07:00" is the next 07:00, not today's);
        // what is not one, or never elapses again, falls through to the timestamp forms. When
        // neither reads it, the text was meant as one of them: an expression's own problem (a
        // zone, no elapse left) is the answer, and so is the timestamp's for a form only a
        // timestamp has (`+1h`, `-1h`, `@unix`); otherwise only the writer knows, so both are.
        var calendarProblem = "", isCalendar = false
        let timestampOnly = untilText.first(where: { $0 != " " }).map { "+-@".contains($0) } ?? false
        do throws(TimeSyntaxError) {
            let spec = try CalendarSpec.parse(untilText)
            isCalendar = true
            let zoneRules = try spec.resolvingZone(local: zone, rules: zones.rules)
            if let t = zoneRules.spec.nextElapse(after: now, in: zoneRules.zone) { return t }
            calendarProblem = "the calendar expression '\(spec.normalized)' never elapses again"
        } catch {
            calendarProblem = "\(error.message) (column \(error.column) of the value)"
        }
        let t: Instant
        do { t = try Timestamp.parse(untilText, now: now, zone: zone) } catch {
            if isCalendar {
                throw CenterError(.invalidArguments, calendarProblem, field: "until")
            }
            if timestampOnly {
                throw CenterError(.invalidArguments, "\(error.message) (column \(error.column) of the value)", field: "until")
            }
            throw CenterError(.invalidArguments, "as a time of day or calendar expression, \(calendarProblem); "
                              + "as a timestamp, \(error.message) (column \(error.column) of the value)", field: "until")
        }
        guard t > now else { throw CenterError(.invalidArguments, "\(untilText) is not in the future", field: "until") }
        if let refusal = TimeLimit.refusal(of: t, field: "until", value: untilText) {
            throw CenterError(.invalidArguments, refusal, field: "until")
        }
        return t
    }
}
