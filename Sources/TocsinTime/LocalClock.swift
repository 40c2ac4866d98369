/// glibc's `localtime_r`/`mktime` pair (or `gmtime_r`/`timegm`), reproduced over `TimeZoneRules`.
///
/// systemd's calendar search is defined by what these two functions do with skipped and
/// repeated local times, including glibc's habit of starting each `mktime` from the offset the
/// previous call found. To match `systemd-analyze` exactly we replay the same probing algorithm
/// (behaviour studied from glibc's documentation and observed results; this is our own code)
/// and keep that "previous offset" as explicit per-search state instead of a process global.
struct LocalClock {
    let zone: TimeZoneRules
    let utc: Bool
    /// UTC seconds minus local seconds of the last `mktime` result (glibc's `localtime_offset`).
    var offsetGuess: Int64 = 0
    /// The last constant-offset span looked up: the search probes the same few hours over and over.
    private var spanStart: Int64 = .max
    private var spanEnd: Int64 = .min
    private var spanOffset = 0
    private var spanDST = false

    init(zone: TimeZoneRules, utc: Bool) {
        self.zone = zone
        self.utc = utc
    }

    /// `localtime_r`/`gmtime_r`.
    @inline(__always)
    mutating func breakDown(_ t: Int64) -> BrokenDownTime {
        if utc { return BrokenDownTime(localSeconds: t, isdst: 0) }
        let l = offsetAndDST(t)
        return BrokenDownTime(localSeconds: t + Int64(l.offset), isdst: l.isDST ? 1 : 0)
    }

    @inline(__always)
    private mutating func offsetAndDST(_ t: Int64) -> (offset: Int, isDST: Bool) {
        if t >= spanStart && t < spanEnd { return (spanOffset, spanDST) }
        if let span = zone.constantSpan(around: t) {
            spanStart = span.start; spanEnd = span.end; spanOffset = span.offset; spanDST = span.isDST
            return (span.offset, span.isDST)
        }
        return zone.offsetAndDST(t)
    }

    @inline(__always)
    private mutating func probe(_ t: Int64) -> (local: Int64, isdst: Int) {
        let l = offsetAndDST(t)
        return (t + Int64(l.offset), l.isDST ? 1 : 0)
    }

    /// `mktime`/`timegm`: normalises `tm` in place and returns Unix seconds, nil where glibc fails.
    mutating func makeTime(_ tm: inout BrokenDownTime) -> Int64? {
        if utc {
            var probe = tm
            probe.isdst = 0
            let t = probe.localSeconds
            tm = BrokenDownTime(localSeconds: t, isdst: 0)
            return t
        }
        let requestedSecond = tm.second
        var clamped = tm
        clamped.second = min(max(tm.second, 0), 59)
        let local = clamped.localSeconds
        let isdst = tm.isdst

        let t0 = local + offsetGuess
        var t = t0, t1 = t0, t2 = t0
        var previousWasDST = 0
        var probes = 6
        var found = probe(t)
        var matched = false
        while true {
            found = probe(t)
            let dt = local - found.local
            if dt == 0 { matched = true; break }
            // Oscillating between two instants: the requested time lies in a gap.
            if t == t1 && t != t2 && (isdst < 0 ? previousWasDST <= found.isdst : (isdst != 0) != (found.isdst != 0)) {
                break
            }
            probes -= 1
            if probes == 0 { return nil }
            t1 = t2; t2 = t; t += dt; previousWasDST = found.isdst
        }

        if matched && isdst >= 0 && (isdst != 0) != (found.isdst != 0) {
            // Wrong DST flag for the request: borrow the offset of the nearest instant with
            // the requested flag, probing outwards in steps shorter than any real DST period.
            let stride: Int64 = 601_200
            let bound: Int64 = 536_454_000 / 2 + stride
            var delta = stride
            var repaired = false
            search: while delta < bound {
                for direction: Int64 in [-1, 1] {
                    let ot = t + delta * direction
                    let other = probe(ot)
                    if (other.isdst != 0) == (isdst != 0) {
                        t = ot + (local - other.local)
                        repaired = true
                        break search
                    }
                }
                delta += stride
            }
            if !repaired { return nil }
        }

        offsetGuess = t - local
        if requestedSecond != clamped.second {
            t += Int64(requestedSecond - clamped.second)
        }
        tm = breakDown(t)
        return t
    }
}
