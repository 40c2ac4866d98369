/// Parsing and printing of instants on the CLI and the D-Bus API.
public enum Timestamp: Sendable {
    /// An instant with its zone: RFC 3339 (`2026-12-01T18:00:00+01:00`, `Z`, fractional seconds;
    /// the seconds may be left out), systemd's `2026-12-01 18:00 UTC`, `@<unix seconds>` (fraction
    /// allowed), or `+<duration>` relative to `now`.
    public static func parse(_ text: String, now: Instant) throws(TimeSyntaxError) -> Instant {
        let s = Array(text.unicodeScalars)
        func fail(_ message: String, _ at: Int) -> TimeSyntaxError {
            TimeSyntaxError(.invalidTimestamp, message, column: at + 1)
        }
        guard let first = s.first else { throw fail("empty timestamp", 0) }
        if first == "+" {
            let rest = String(String.UnicodeScalarView(s.dropFirst()))
            let span = try TimeSpan.parse(rest, columnOffset: 1)
            let (sum, overflow) = now.microseconds.addingReportingOverflow(span.microseconds)
            if overflow { throw fail("timestamp out of range", 1) }
            return Instant(microseconds: sum)
        }
        if first == "@" { return try parseEpoch(s, fail) }
        // RFC 3339 and systemd's forms with a zone (`Timestamp.parseWritten`); one without a zone
        // would need one, and this caller has none to give.
        switch try parseWritten(text) {
        case .instant(let i): return i
        case .local, .day: throw fail("missing zone: this time is read without one ('Z', '+hh:mm' or ' UTC' after it)", s.count)
        }
    }

    static func parseEpoch(_ s: [Unicode.Scalar], _ fail: (String, Int) -> TimeSyntaxError) throws(TimeSyntaxError) -> Instant {
        var i = 1
        var negative = false
        if i < s.count && s[i] == "-" { negative = true; i += 1 }
        var whole: Int64 = 0
        let start = i
        while i < s.count, s[i] >= "0", s[i] <= "9" {
            if whole > (Int64.max / 1_000_000 - 9) / 10 { throw fail("timestamp out of range", start) }
            whole = whole * 10 + Int64(s[i].value - 48)
            i += 1
        }
        if i == start { throw fail("expected seconds after '@'", i) }
        var micro: Int64 = 0
        if i < s.count && s[i] == "." {
            i += 1
            var scale: Int64 = 100_000
            let fracStart = i
            while i < s.count, s[i] >= "0", s[i] <= "9" {
                micro += Int64(s[i].value - 48) * scale
                scale /= 10
                i += 1
            }
            if i == fracStart { throw fail("expected digits after '.'", i) }
        }
        if i != s.count { throw fail("unexpected character", i) }
        let us = whole * 1_000_000 + micro
        return Instant(microseconds: negative ? -us : us)
    }

    /// RFC 3339 in UTC with `Z`, fractional seconds only when non-zero.
    public static func rfc3339UTC(_ instant: Instant) -> String {
        format(instant, offset: 0)
    }

    /// RFC 3339 with the zone's offset at that instant.
    public static func rfc3339(_ instant: Instant, in zone: TimeZoneRules) -> String {
        format(instant, offset: zone.utcOffset(at: instant))
    }

    static func pad(_ v: Int, _ width: Int) -> String {
        let s = String(v)
        return s.count >= width ? s : String(repeating: "0", count: width - s.count) + s
    }

    private static func format(_ instant: Instant, offset: Int) -> String {
        let secs = instant.seconds
        let micro = Int(instant.microseconds - secs * 1_000_000)
        let b = BrokenDownTime(localSeconds: secs + Int64(offset), isdst: 0)
        var out = "\(pad(b.year, 4))-\(pad(b.month + 1, 2))-\(pad(b.mday, 2))T\(pad(b.hour, 2)):\(pad(b.minute, 2)):\(pad(b.second, 2))"
        if micro != 0 {
            var frac = pad(micro, 6)
            while frac.hasSuffix("0") { frac.removeLast() }
            out += "." + frac
        }
        if offset == 0 {
            out += "Z"
        } else {
            let a = abs(offset)
            out += (offset < 0 ? "-" : "+") + "\(pad(a / 3600, 2)):\(pad(a / 60 % 60, 2))"
        }
        return out
    }

    /// Resolves a local civil time in `zone` the way systemd/mktime does (a skipped time moves forward, a repeated time takes the first).
    public static func instant(of civil: CivilDateTime, in zone: TimeZoneRules) -> Instant {
        let local = Int64(CivilMath.days(year: civil.year, month: civil.month, day: civil.day)) * 86_400
            + Int64(civil.hour * 3600 + civil.minute * 60 + civil.second)
        // Every offset that could apply lies among those in force within ±14 h of the local reading.
        let before = zone.offsetAndDST(local - 50_400).offset
        var best: Int64?
        for o in [before, zone.offsetAndDST(local).offset, zone.offsetAndDST(local + 50_400).offset] {
            let t = local - Int64(o)
            if zone.offsetAndDST(t).offset == o, best.map({ t < $0 }) ?? true { best = t }
        }
        // In a gap, keep the offset from before the change: the reading lands after the gap.
        let t = best ?? (local - Int64(before))
        return Instant(microseconds: t * 1_000_000 + Int64(civil.microsecond))
    }
}
