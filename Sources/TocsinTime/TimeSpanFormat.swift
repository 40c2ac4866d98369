extension TimeSpan: CustomStringConvertible {
    static let perMillisecond: Int64 = 1_000
    static let perSecond: Int64 = 1_000_000
    static let perMinute: Int64 = 60 * perSecond
    static let perHour: Int64 = 60 * perMinute
    static let perDay: Int64 = 24 * perHour
    static let perWeek: Int64 = 7 * perDay
    /// systemd's month and year: 30.44 and 365.25 days, so `1y` is twelve `1M`.
    static let perMonth: Int64 = 2_629_800 * perSecond
    static let perYear: Int64 = 31_557_600 * perSecond

    /// Unit names in systemd's matching order: the first prefix that matches wins,
    /// which is why `months` precedes `m` and `ms` precedes `m`.
    private static let units: [(String, Int64)] = [
        ("seconds", perSecond), ("second", perSecond), ("sec", perSecond), ("s", perSecond),
        ("minutes", perMinute), ("minute", perMinute), ("min", perMinute),
        ("months", perMonth), ("month", perMonth), ("M", perMonth),
        ("msec", perMillisecond), ("ms", perMillisecond), ("m", perMinute),
        ("hours", perHour), ("hour", perHour), ("hr", perHour), ("h", perHour),
        ("days", perDay), ("day", perDay), ("d", perDay),
        ("weeks", perWeek), ("week", perWeek), ("w", perWeek),
        ("years", perYear), ("year", perYear), ("y", perYear),
        ("usec", 1), ("us", 1), ("μs", 1), ("µs", 1),
    ].map { ($0.0, $0.1) }

    /// Parses systemd.time(7) time spans: `90s`, `15min`, `1h 30min`, `2d`, `1w`, `500ms`, `5` (seconds).
    public static func parse(_ text: String) throws(TimeSyntaxError) -> TimeSpan {
        try parse(text, columnOffset: 0)
    }

    static func parse(_ text: String, columnOffset: Int) throws(TimeSyntaxError) -> TimeSpan {
        let s = Array(text.unicodeScalars)
        var i = 0
        func fail(_ message: String, _ at: Int) -> TimeSyntaxError {
            TimeSyntaxError(.invalidDuration, message, column: columnOffset + at + 1)
        }
        func isSpace(_ c: Unicode.Scalar) -> Bool { c == " " || c == "\t" || c == "\n" || c == "\r" }
        func isDigit(_ c: Unicode.Scalar) -> Bool { c >= "0" && c <= "9" }
        var total: Int64 = 0
        var any = false
        while true {
            while i < s.count && isSpace(s[i]) { i += 1 }
            if i >= s.count {
                if !any { throw fail("empty duration", i) }
                break
            }
            let numberAt = i
            if s[i] == "-" { throw fail("durations cannot be negative", i) }
            if s[i] == "+" { i += 1 }
            var whole: Int64 = 0
            var digits = 0
            while i < s.count && isDigit(s[i]) {
                let (m, o1) = whole.multipliedReportingOverflow(by: 10)
                let (a, o2) = m.addingReportingOverflow(Int64(s[i].value - 48))
                if o1 || o2 { throw fail("duration out of range", numberAt) }
                whole = a; digits += 1; i += 1
            }
            var fraction: [Int64] = []
            if i < s.count && s[i] == "." {
                let dot = i
                i += 1
                while i < s.count && isDigit(s[i]) { fraction.append(Int64(s[i].value - 48)); i += 1 }
                // systemd refuses `5.`, `3.s`, `3. 1s`: a decimal point needs a digit after it.
                if fraction.isEmpty { throw fail("expected a digit after the decimal point", dot + 1 < s.count ? dot + 1 : dot) }
            } else if digits == 0 {
                if Self.startsWord(s, i) {
                    let word = Self.word(s, i)
                    if word == "infinity" {
                        throw fail("'infinity' is not a time span here: give a finite span such as '1y'", i)
                    }
                    throw fail("expected a number before '\(word)'", i)
                }
                throw fail("expected a number", numberAt)
            }
            var j = i
            while j < s.count && isSpace(s[j]) { j += 1 }
            var multiplier = perSecond
            if Self.startsWord(s, j) {
                // systemd matches unit prefixes, but a letter after a unit can never parse
                // (`5 mins`, `5 parsecs`), so the whole word must be a unit.
                let word = Self.word(s, j)
                guard let unit = units.first(where: { $0.0 == word }) else {
                    throw fail("unknown time unit '\(word)' (expected us, ms, s, min, h, d, w, M, y)", j)
                }
                multiplier = unit.1
                j += word.unicodeScalars.count
            } else {
                // A bare number is seconds; it must be followed by a separator or the end.
                if j == i && j < s.count { throw fail("unexpected '\(s[j])' after a number", j) }
                j = i
            }
            let (m, o1) = whole.multipliedReportingOverflow(by: multiplier)
            var part = m
            var overflow = o1
            var k = multiplier / 10
            for d in fraction where k > 0 {
                // The fraction can carry a whole that is just in range over the top.
                let (p, o) = part.addingReportingOverflow(d * k)
                part = p
                overflow = overflow || o
                k /= 10
            }
            let (sum, o2) = total.addingReportingOverflow(part)
            if overflow || o2 { throw fail("duration out of range", numberAt) }
            total = sum
            any = true
            i = j
        }
        return TimeSpan(microseconds: total)
    }

    /// A unit name or a stray word starts here: letters, or the two micro signs.
    private static func startsWord(_ s: [Unicode.Scalar], _ i: Int) -> Bool {
        guard i < s.count else { return false }
        return isWordScalar(s[i])
    }

    private static func isWordScalar(_ c: Unicode.Scalar) -> Bool {
        (c >= "a" && c <= "z") || (c >= "A" && c <= "Z") || c == "μ" || c == "µ"
    }

    private static func word(_ s: [Unicode.Scalar], _ i: Int) -> String {
        var out = String.UnicodeScalarView()
        var k = i
        while k < s.count && isWordScalar(s[k]) { out.append(s[k]); k += 1 }
        return String(out)
    }

    /// Parses a span that must be strictly positive (periods, snoozes): zero and negative are refused.
    public static func parsePositive(_ text: String) throws(TimeSyntaxError) -> TimeSpan {
        let span = try parse(text)
        if span.microseconds <= 0 {
            let first = text.unicodeScalars.firstIndex { $0 != " " && $0 != "\t" }
            let column = first.map { text.unicodeScalars.distance(from: text.unicodeScalars.startIndex, to: $0) + 1 } ?? 1
            throw TimeSyntaxError(.nonPositiveInterval, "the interval must be longer than zero", column: column)
        }
        return span
    }

    /// systemd's rendering, e.g. `1h 30min`, `500ms`, `0`.
    public var description: String {
        if microseconds == 0 { return "0" }
        if microseconds < 0 {
            // Only intermediate results are negative; show the sign rather than systemd's "0".
            return "-" + TimeSpan(microseconds: microseconds == .min ? .max : -microseconds).description
        }
        let table: [(String, Int64)] = [
            ("y", Self.perYear), ("month", Self.perMonth), ("w", Self.perWeek), ("d", Self.perDay),
            ("h", Self.perHour), ("min", Self.perMinute), ("s", Self.perSecond), ("ms", Self.perMillisecond), ("us", 1),
        ]
        var t = microseconds
        var out = ""
        for (suffix, unit) in table {
            if t <= 0 { break }
            if t < unit { continue }
            let a = t / unit, b = t % unit
            let sep = out.isEmpty ? "" : " "
            // Below a minute, a remainder is shown as a decimal fraction of the unit.
            if t < Self.perMinute && b > 0 {
                var width = 0
                var u = unit
                while u > 1 { width += 1; u /= 10 }
                if width > 0 {
                    let frac = String(b)
                    out += "\(sep)\(a).\(String(repeating: "0", count: max(0, width - frac.count)) + frac)\(suffix)"
                    t = 0
                    break
                }
            }
            out += "\(sep)\(a)\(suffix)"
            t = b
        }
        return out
    }
}
