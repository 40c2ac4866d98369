/// The next-elapse search.
///
/// It follows systemd's `find_next` step by step (year, month, day, weekday, hour, minute,
/// second; each step normalising through `mktime` and backing off to the next larger unit when
/// a field has no match) because the exact answer around DST changes and impossible dates is
/// defined by that procedure, not by a cleaner one. The glibc parts it relies on are in `LocalClock`.
extension CalendarSpec {
    /// systemd gives up after this many rounds of the search (its "infinite loop" safety valve).
    static let maxIterations = 1000
    static let maxYear = 2199
    /// systemd refuses base times it could not print (`USEC_TIMESTAMP_FORMATTABLE_MAX`).
    static let maxBase: Int64 = 253_402_214_399_999_999

    /// The first elapse strictly after `instant`, exactly as systemd computes it, or nil when it never elapses again.
    /// `nextElapse` adds the DST policies on top of this.
    func systemdNextElapse(after instant: Instant, in zone: TimeZoneRules) -> Instant? {
        if case .found(let t) = systemdSearch(after: instant, in: zone) { return t }
        return nil
    }

    /// How systemd's search ended: an elapse, none left, or its safety valve (systemd reports
    /// "Infinite loop in calendar calculation" and schedules nothing), with the local wall time
    /// (seconds as if in UTC) of the candidate it was circling on.
    enum SearchEnd: Equatable { case found(Instant), never, gaveUp(wall: Int64) }

    func systemdSearch(after instant: Instant, in zone: TimeZoneRules) -> SearchEnd {
        guard instant.microseconds < Self.maxBase else { return .never }
        var clock = LocalClock(zone: zone, utc: utc)
        let base = instant.microseconds &+ 1
        let seconds = CivilMath.floorDiv(base, 1_000_000)
        var usec = Int(base - seconds * 1_000_000)
        var tm = clock.breakDown(seconds)
        switch findNext(&tm, &usec, &clock) {
        case .some(true):
            guard let t = clock.makeTime(&tm), t >= 0 else { return .never }
            return .found(Instant(microseconds: t * 1_000_000 + Int64(usec)))
        case .some(false): return .never
        case .none: return .gaveUp(wall: tm.localSeconds)
        }
    }

    /// Outcome of matching one field: no value left, unchanged, or moved forward.
    private enum Match { case none, same, changed }

    @inline(__always)
    private func match(_ chain: [CalendarComponent]?, isDay: Bool, _ tm: BrokenDownTime, _ value: inout Int,
                       _ clock: inout LocalClock) -> Match {
        guard let chain else { return .same }
        let eom = isDay && endOfMonth
        var best = Int.max
        for c in chain {
            var start = Int(c.start), stop = Int(c.stop)
            let rep = Int(c.step)
            if eom {
                start = endOfMonthDay(tm, Int(c.start), &clock)
                stop = endOfMonthDay(tm, Int(c.stop), &clock)
                if stop > 0 { swap(&start, &stop) }
            }
            if start >= value {
                if start < best { best = start }
            } else if rep > 0 {
                let k = start + rep * ((value - start + rep - 1) / rep)
                if k < best && (stop < 0 || k <= stop) { best = k }
            }
        }
        if best == Int.max { return .none }
        let changed = best != value
        value = best
        return changed ? .changed : .same
    }

    /// Day of month that is `back` days before the end of `tm`'s month (`~` dates), or -1.
    private func endOfMonthDay(_ tm: BrokenDownTime, _ back: Int, _ clock: inout LocalClock) -> Int {
        var t = tm
        t.month += 1
        t.mday = 1 - back
        guard clock.makeTime(&t) != nil, t.month == tm.month else { return -1 }
        return t.mday
    }

    /// systemd's `tm_within_bounds`: 1 when `tm` is already normal, 0 when `mktime` moved it
    /// forward (then `tm` holds the normalised time with the next smaller field reset, so a
    /// repetition that overflowed into the next unit starts that unit from its beginning),
    /// -1 when it is out of range or would move backwards.
    private func withinBounds(_ tm: inout BrokenDownTime, _ clock: inout LocalClock) -> Int {
        if tm.year > Self.maxYear { return -1 }
        var t = tm
        guard clock.makeTime(&t) != nil else { return -1 }
        func compare(_ a: Int, _ b: Int) -> Int { a < b ? -1 : (a > b ? 1 : 0) }
        var cmp = compare(t.year, tm.year)
        if cmp != 0 {
            t.month = 0
        } else if case let c = compare(t.month, tm.month), c != 0 {
            cmp = c; t.mday = 1
        } else if case let c = compare(t.mday, tm.mday), c != 0 {
            cmp = c; t.hour = 0
        } else if case let c = compare(t.hour, tm.hour), c != 0 {
            cmp = c; t.minute = 0
        } else if case let c = compare(t.minute, tm.minute), c != 0 {
            cmp = c; t.second = 0
        } else {
            cmp = compare(t.second, tm.second)
        }
        if cmp < 0 { return -1 }
        if cmp > 0 { tm = t; return 0 }
        return 1
    }

    private func matchesWeekday(_ tm: BrokenDownTime, _ clock: inout LocalClock) -> Bool {
        if weekdays < 0 || weekdays >= 127 { return true }
        var t = tm
        guard clock.makeTime(&t) != nil else { return false }
        let k = t.wday == 0 ? 6 : t.wday - 1
        return Int(weekdays) & (1 << k) != 0
    }

    private static func isBefore(_ a: BrokenDownTime, _ aUsec: Int, _ b: BrokenDownTime, _ bUsec: Int) -> Bool {
        let x = (a.year, a.month, a.mday, a.hour, a.minute, a.second)
        let y = (b.year, b.month, b.mday, b.hour, b.minute, b.second)
        return x < y || (x == y && aUsec < bUsec)
    }

    /// One function (over the ~80-line limit) on purpose: it is systemd's `find_next` transcribed
    /// step for step, so the two can be read side by side, and each step's back-off `continue`s
    /// the one search loop; split into per-field functions, every step would have to return a
    /// "restart" code and the loop re-dispatch on it, on the calendar search's benchmarked path.
    /// True: `tm` and `usec` hold the elapse; false: none is left; nil: the safety valve, with
    /// `tm` the candidate it stopped on.
    private func findNext(_ tm: inout BrokenDownTime, _ usec: inout Int, _ clock: inout LocalClock) -> Bool? {
        var c = tm
        var us = usec
        let start = tm, startUsec = usec
        // Once a DST gap has thrown the search back before its start, systemd stops forcing
        // "DST unknown" and keeps the flag mktime reports, then retries an hour later.
        var keepDST = false
        for _ in 0..<Self.maxIterations {
            _ = clock.makeTime(&c)
            if !keepDST { c.isdst = Int(dst) }

            var v = c.year
            var r = match(year, isDay: false, c, &v, &clock)
            c.year = v
            if r == .changed { c.month = 0; c.mday = 1; c.hour = 0; c.minute = 0; c.second = 0; us = 0 }
            if r == .none { return false }
            if withinBounds(&c, &clock) <= 0 { return false }

            v = c.month + 1
            r = match(month, isDay: false, c, &v, &clock)
            c.month = v - 1
            if r == .changed { c.mday = 1; c.hour = 0; c.minute = 0; c.second = 0; us = 0 }
            var b: Int
            b = r == .none ? -1 : withinBounds(&c, &clock)
            if b < 0 {
                c.year += 1; c.month = 0; c.mday = 1; c.hour = 0; c.minute = 0; c.second = 0; us = 0
                continue
            }
            if b == 0 { continue }

            v = c.mday
            r = match(day, isDay: true, c, &v, &clock)
            c.mday = v
            if r == .changed { c.hour = 0; c.minute = 0; c.second = 0; us = 0 }
            b = r == .none ? -1 : withinBounds(&c, &clock)
            if b < 0 {
                c.month += 1; c.mday = 1; c.hour = 0; c.minute = 0; c.second = 0; us = 0
                continue
            }
            if b == 0 { continue }

            if !matchesWeekday(c, &clock) {
                c.mday += 1; c.hour = 0; c.minute = 0; c.second = 0; us = 0
                continue
            }

            v = c.hour
            r = match(hour, isDay: false, c, &v, &clock)
            c.hour = v
            if r == .changed { c.minute = 0; c.second = 0; us = 0 }
            b = r == .none ? -1 : withinBounds(&c, &clock)
            if b < 0 {
                c.mday += 1; c.hour = 0; c.minute = 0; c.second = 0; us = 0
                continue
            }
            if b == 0 { continue }

            v = c.minute
            r = match(minute, isDay: false, c, &v, &clock)
            c.minute = v
            if r == .changed { c.second = 0; us = 0 }
            b = r == .none ? -1 : withinBounds(&c, &clock)
            if b < 0 {
                c.hour += 1; c.minute = 0; c.second = 0; us = 0
                continue
            }
            if b == 0 { continue }

            v = c.second * 1_000_000 + us
            r = match(microsecond, isDay: false, c, &v, &clock)
            us = v % 1_000_000
            c.second = v / 1_000_000
            b = r == .none ? -1 : withinBounds(&c, &clock)
            if b < 0 {
                c.minute += 1; c.second = 0; us = 0
                continue
            }
            if b == 0 { continue }

            if Self.isBefore(c, us, start, startUsec) {
                keepDST = true
                c.hour += 1
                continue
            }
            tm = c
            usec = us
            return true
        }
        tm = c
        return nil
    }
}
