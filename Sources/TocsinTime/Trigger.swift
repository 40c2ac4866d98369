/// A resolved trigger. `after` is resolved to `.at` when scheduled, so stored triggers never drift.
public enum Trigger: Hashable, Sendable {
    case at(Instant)
    /// Fires at `starting`, `starting + period`, ...; `count` caps the number, `until` the last instant (inclusive).
    case every(period: TimeSpan, starting: Instant, count: UInt32?, until: Instant?)
    /// `zone` is the expression's own zone if it names one, else the notification's.
    /// Indirect: the expression and its zone rules are ~280 bytes, which made every trigger, and
    /// every notification and row holding one, that large, though most are `at` and `every`.
    indirect case calendar(CalendarSpec, zone: TimeZoneRules)
    /// Fires at `event - offset` for each offset, earliest first.
    case remindBefore(event: Instant, offsets: [TimeSpan])

    /// The first occurrence strictly after `instant`, given the last one that fired (nil if none yet).
    /// Lazy: `every` and `calendar` are computed one step at a time and never expanded.
    public func next(after instant: Instant, previous: Occurrence?) -> Occurrence? {
        switch self {
        case .at(let t):
            guard previous == nil, t > instant else { return nil }
            return Occurrence(instant: t, number: 1)

        case let .every(period, starting, count, until):
            let p = period.microseconds
            guard p > 0 else { return nil }
            // k is the 0-based index of the firing: the first with starting + k*p > instant.
            var k: Int64 = 0
            if instant >= starting {
                let elapsed = instant.microseconds.subtractingReportingOverflow(starting.microseconds)
                if elapsed.overflow { return nil }
                k = elapsed.partialValue / p + 1
            }
            // Never repeat or go back behind a firing already made.
            if let previous { k = max(k, Int64(previous.number)) }
            if let count, k >= Int64(count) { return nil }
            guard k < Int64(UInt32.max) else { return nil }
            let offset = k.multipliedReportingOverflow(by: p)
            let at = starting.microseconds.addingReportingOverflow(offset.partialValue)
            if offset.overflow || at.overflow { return nil }
            let t = Instant(microseconds: at.partialValue)
            if let until, t > until { return nil }
            // A series ends at the latest instant Tocsin schedules, as if `until` said so.
            if t > TimeLimit.latest { return nil }
            return Occurrence(instant: t, number: UInt32(k + 1))

        case let .calendar(spec, zone):
            guard let t = spec.nextElapse(after: instant, in: zone) else { return nil }
            let n = previous.map { $0.number == .max ? $0.number : $0.number + 1 } ?? 1
            return Occurrence(instant: t, number: n)

        case let .remindBefore(event, offsets):
            var best: Instant?
            var bestIndex = 0
            for (i, o) in offsets.enumerated() {
                let t = event - o
                if t > instant, best.map({ t < $0 }) ?? true {
                    best = t
                    bestIndex = i
                }
            }
            guard let best else { return nil }
            return Occurrence(instant: best, number: UInt32(bestIndex + 1), offset: offsets[bestIndex])
        }
    }

    /// Human description for `list` (`every 15min, 6 times`, `Mon..Fri *-*-* 07:30:00 Europe/Berlin`, ...).
    public var summary: String {
        switch self {
        case .at(let t):
            return "at \(Timestamp.rfc3339UTC(t))"
        case let .every(period, starting, count, until):
            var s = "every \(period) from \(Timestamp.rfc3339UTC(starting))"
            if let count { s += count == 1 ? ", once" : ", \(count) times" }
            if let until { s += ", until \(Timestamp.rfc3339UTC(until))" }
            return s
        case let .calendar(spec, zone):
            // Name the zone unless the expression already does (a zone, UTC, or a local abbreviation).
            var s = spec.timeZoneName == nil && spec.dst < 0 ? "\(spec.normalized) \(zone.identifier)" : spec.normalized
            // The DST policies are shown only when they differ from systemd's.
            if spec.dstGap != .skip { s += ", dst_gap=\(spec.dstGap.rawValue)" }
            if spec.dstFold != .first { s += ", dst_fold=\(spec.dstFold.rawValue)" }
            return s
        case let .remindBefore(event, offsets):
            // Each offset once (a notification stored before equal offsets were merged may hold
            // one twice), and zero with its unit: "0 before" read as a missing number.
            let shown = Self.mergingEqualOffsets(offsets).map { $0 == .zero ? "0s" : $0.description }
            return "\(shown.joined(separator: ", ")) before \(Timestamp.rfc3339UTC(event))"
        }
    }

    /// `remind_before`'s offsets with each value once, in the order first written: equal offsets
    /// are one firing, so they are one reminder, numbered 1...n without gaps. Applied where a
    /// spec becomes a trigger (`SpecResolver.resolve`: D-Bus, the CLI, the config file and the
    /// fleet alike), never to a stored trigger, whose occurrence numbers index its own list.
    public static func mergingEqualOffsets(_ offsets: [TimeSpan]) -> [TimeSpan] {
        var seen = Set<TimeSpan>()
        return offsets.filter { seen.insert($0).inserted }
    }
}
