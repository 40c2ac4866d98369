/// How close together two consecutive occurrences of a trigger can come, so that a request which
/// would fire faster than the daemon's floor (`[daemon] min_period`) is refused before it is
/// scheduled. One answer per trigger kind, each cheap and never too optimistic: when it says
/// "no two occurrences closer than the floor", that holds for every occurrence, not a sample.
public enum RepeatFloor: Sendable {
    /// The two offsets of a `remind_before` list that lie closest together (1-based positions in
    /// the list as written), when they are closer than `floor`. Equal offsets are one instant and
    /// fire once, so they are not a pair.
    public struct OffsetPair: Hashable, Sendable {
        public var distance: TimeSpan
        public var first: Int
        public var second: Int
    }

    public static func closestOffsets(_ offsets: [TimeSpan], below floor: TimeSpan) -> OffsetPair? {
        let sorted = offsets.enumerated().sorted { $0.element < $1.element }
        var best: OffsetPair?
        for (a, b) in zip(sorted, sorted.dropFirst()) {
            let d = TimeSpan(microseconds: b.element.microseconds &- a.element.microseconds)
            guard d > .zero, d < floor, d < best?.distance ?? floor else { continue }
            best = OffsetPair(distance: d, first: min(a.offset, b.offset) + 1, second: max(a.offset, b.offset) + 1)
        }
        return best
    }
}

extension CalendarSpec {
    private static let usPerSecond: Int64 = 1_000_000
    private static let usPerMinute: Int64 = 60_000_000
    private static let usPerHour: Int64 = 3_600_000_000
    private static let usPerDay: Int64 = 86_400_000_000

    /// A distance below `floor` at which two consecutive elapses of this expression can follow
    /// each other, or nil when none can.
    ///
    /// The rule, in wall-clock time: an expression's times of day are the product of its hour,
    /// minute and second sets, the same on every day it matches. Two consecutive elapses on one
    /// day are neighbours in that product, so the smallest distance is the least of: neighbouring
    /// seconds; the last second of a minute to the first of the next matching minute; the last
    /// minute:second of an hour to the first of the next matching hour. Across midnight it is the
    /// last time of day to the first, one day later unless no two adjacent weekdays match (then
    /// two days). Every date field other than the weekdays is assumed to allow adjacent days, so
    /// the answer is a lower bound: it can only refuse too much, and only when the times of day
    /// come within `floor` of midnight on both sides. Seconds are walked in order and the walk
    /// stops at the first neighbours closer than `floor`; a set with more than 60 s / `floor`
    /// values must have such neighbours, so at most that many are visited.
    ///
    /// A change to daylight saving time can bring two elapses closer once (01:59:59 and 03:00:00
    /// are one second apart on a spring-forward night); the machine's coalescing covers that.
    public func closestElapses(below floor: TimeSpan) -> TimeSpan? {
        guard floor > .zero else { return nil }
        let f = floor.microseconds
        let hours = Self.values(hour, max: 23)
        let minutes = Self.values(minute, max: 59)
        let seconds = SecondsWalk(microsecond ?? [CalendarComponent(start: 0, stop: -1, step: 1)])
        var best = Int64.max
        func consider(_ d: Int64) { if d > 0, d < f, d < best { best = d } }

        consider(seconds.closestNeighbours(below: f, limit: 60 * Self.usPerSecond / f + 2))
        let secondSpan = seconds.last - seconds.first
        if let dm = Self.smallestStep(minutes) { consider(dm * Self.usPerMinute - secondSpan) }
        let minuteSpan = (minutes.last! - minutes.first!) * Self.usPerMinute + secondSpan
        if let dh = Self.smallestStep(hours) { consider(dh * Self.usPerHour - minuteSpan) }
        let daySpan = (hours.last! - hours.first!) * Self.usPerHour + minuteSpan
        consider(Int64(adjacentDaysPossible ? 1 : 2) * Self.usPerDay - daySpan)
        return best == .max ? nil : TimeSpan(microseconds: best)
    }

    /// Whether two consecutive days can both match: only the weekday set is looked at.
    private var adjacentDaysPossible: Bool {
        guard weekdays > 0 && weekdays < 127 else { return true }
        let bits = Int(weekdays)
        return (0..<7).contains { bits & (1 << $0) != 0 && bits & (1 << (($0 + 1) % 7)) != 0 }
    }

    /// The sorted distinct values of a small field (hours, minutes); nil means every value.
    private static func values(_ chain: [CalendarComponent]?, max: Int64) -> [Int64] {
        guard let chain else { return Array(0...max) }
        var set = Set<Int64>()
        for c in chain {
            let start = Int64(c.start)
            guard c.step > 0 else { set.insert(start); continue }
            let stop = c.stop >= 0 ? min(Int64(c.stop), max) : max
            var v = start
            while v <= stop { set.insert(v); v += Int64(c.step) }
        }
        return set.sorted()
    }

    private static func smallestStep(_ sorted: [Int64]) -> Int64? {
        zip(sorted, sorted.dropFirst()).map { $1 - $0 }.min()
    }
}

/// The seconds field (in microseconds) as the union of its components, walked in increasing
/// order without expanding it: `00/0.000001` has sixty million values.
private struct SecondsWalk {
    static let fieldMax: Int64 = 59_999_999
    let parts: [(start: Int64, stop: Int64, step: Int64)]
    let first: Int64
    let last: Int64

    init(_ chain: [CalendarComponent]) {
        parts = chain.map { c in
            let start = Int64(c.start), step = Int64(c.step)
            let bound = c.stop >= 0 ? min(Int64(c.stop), Self.fieldMax) : Self.fieldMax
            // Align the end on the last value the repetition reaches.
            let stop = step > 0 ? start + (bound - start) / step * step : start
            return (start, max(stop, start), step)
        }
        first = parts.map(\.start).min() ?? 0
        last = parts.map(\.stop).max() ?? 0
    }

    /// The smallest value above `v`, or nil.
    private func next(after v: Int64) -> Int64? {
        var best: Int64?
        for p in parts where p.stop > v {
            let candidate: Int64
            if p.start > v { candidate = p.start } else {
                candidate = p.start + ((v - p.start) / p.step + 1) * p.step
            }
            if candidate <= p.stop, candidate < best ?? .max { best = candidate }
        }
        return best
    }

    /// The first distance below `floor` between neighbouring values, after visiting at most
    /// `limit` values; `Int64.max` when there is none.
    func closestNeighbours(below floor: Int64, limit: Int64) -> Int64 {
        var current = first
        var visited: Int64 = 1
        while visited < limit, let n = next(after: current) {
            if n - current < floor { return n - current }
            current = n
            visited += 1
        }
        return .max
    }
}
