/// Recursive-descent parser mirroring systemd's `calendar_spec_from_string`, with positions for errors.
struct CalendarParser {
    let text: String
    let bytes: [UInt8]
    var p = 0
    var end: Int
    var spec = CalendarSpec()
    /// Byte offset of each parsed component, per field, for validation errors.
    var positions: [String: [Int]] = [:]

    init(text: String) {
        self.text = text
        bytes = Array(text.utf8)
        end = bytes.count
    }

    static let maxComponents = 240

    func error(_ message: String, at offset: Int) -> TimeSyntaxError {
        TimeSyntaxError(.invalidCalendar, message, column: column(at: offset))
    }

    /// Columns count Unicode scalars, offsets are UTF-8 bytes.
    func column(at offset: Int) -> Int {
        let prefix = bytes[0..<min(max(offset, 0), bytes.count)]
        return String(decoding: prefix, as: UTF8.self).unicodeScalars.count + 1
    }

    var current: UInt8 { p < end ? bytes[p] : 0 }

    func lower(_ b: UInt8) -> UInt8 { b >= 65 && b <= 90 ? b + 32 : b }

    func hasPrefixNoCase(_ s: String, at i: Int) -> Bool {
        let u = Array(s.utf8)
        guard i + u.count <= end else { return false }
        for k in 0..<u.count where lower(bytes[i + k]) != lower(u[k]) { return false }
        return true
    }

    mutating func parse(zoneExists: (String) -> Bool) throws(TimeSyntaxError) -> CalendarSpec {
        // Trailing zone: " UTC" in any case; else the last word when it names an installed zone
        // or could be an abbreviation of the local zone. Which of those two it is, systemd decides
        // against the process's zone; `resolvingZone` does so against the expression's.
        if end >= 4 && hasPrefixNoCase(" UTC", at: end - 4) {
            spec.utc = true
            end -= 4
        } else if let space = bytes.lastIndex(of: UInt8(ascii: " ")) {
            let name = String(decoding: bytes[(space + 1)...], as: UTF8.self)
            if ZoneInfoDirectory.isValidName(name) && (Self.couldBeAbbreviation(name) || zoneExists(name)) {
                spec.zone = name
                spec.zoneColumn.value = column(at: space + 1)
                end = space
            } else if name.contains("/"), name.utf8.first.map({ ($0 | 0x20) >= 97 && ($0 | 0x20) <= 122 }) == true,
                      ZoneInfoDirectory.isValidName(name) {
                // `Europe/Berlinn`: no zone, so the grammar would read it as part of the time and
                // fail at a column that says nothing of zones. Refused all the same (systemd
                // refuses it too); only the message names what is wrong, when the expression
                // parses without the word.
                var rest = CalendarParser(text: String(decoding: bytes[..<space], as: UTF8.self))
                if (try? rest.parseGrammar()) != nil {
                    throw TimeSyntaxError(.unknownTimeZone, "unknown time zone '\(name)'", column: column(at: space + 1))
                }
            }
        }
        try parseGrammar()
        return spec
    }

    private mutating func parseGrammar() throws(TimeSyntaxError) {
        if end == 0 { throw error("empty calendar expression", at: 0) }

        if !parseShorthand() {
            try parseWeekdays()
            let done = try parseDate()
            if !done { try parseTime() }
            if p < end { throw error("unexpected character", at: p) }
        }
        try normalizeAndValidate()
    }

    /// The shapes glibc gives `tzname`: letters (`CET`, `AEST`) or a signed hour offset (`+03`,
    /// `-0330`) for zones without an abbreviation. Nothing else can match a local zone's name.
    static func couldBeAbbreviation(_ word: String) -> Bool {
        let u = Array(word.utf8)
        func letter(_ c: UInt8) -> Bool { (c >= 65 && c <= 90) || (c >= 97 && c <= 122) }
        func digit(_ c: UInt8) -> Bool { c >= 48 && c <= 57 }
        if u.count >= 3 && u.allSatisfy(letter) { return true }
        if u.count >= 3, u[0] == UInt8(ascii: "+") || u[0] == UInt8(ascii: "-"), u.dropFirst().allSatisfy(digit) { return true }
        return false
    }

    mutating func parseShorthand() -> Bool {
        let word = String(decoding: bytes[0..<end], as: UTF8.self).lowercased()
        let zero = [CalendarComponent.value(0)]
        let first = [CalendarComponent.value(1)]
        func midnight(_ s: inout CalendarSpec) { s.hour = zero; s.minute = zero; s.microsecond = zero }
        switch word {
        case "minutely":
            spec.microsecond = zero
        case "hourly":
            spec.minute = zero; spec.microsecond = zero
        case "daily":
            midnight(&spec)
        case "monthly":
            spec.day = first; midnight(&spec)
        case "annually", "yearly", "anually":
            spec.month = first; spec.day = first; midnight(&spec)
        case "weekly":
            spec.weekdays = 1; midnight(&spec)
        case "quarterly":
            spec.month = [1, 4, 7, 10].map(CalendarComponent.value); spec.day = first; midnight(&spec)
        case "biannually", "bi-annually", "semiannually", "semi-annually":
            spec.month = [1, 7].map(CalendarComponent.value); spec.day = first; midnight(&spec)
        default:
            return false
        }
        return true
    }

    static let dayTable: [(String, Int)] = [
        ("monday", 0), ("mon", 0), ("tuesday", 1), ("tue", 1), ("wednesday", 2), ("wed", 2),
        ("thursday", 3), ("thu", 3), ("friday", 4), ("fri", 4), ("saturday", 5), ("sat", 5),
        ("sunday", 6), ("sun", 6),
    ]

    mutating func skipSpaces() { while p < end && bytes[p] == UInt8(ascii: " ") { p += 1 } }

    mutating func parseWeekdays() throws(TimeSyntaxError) {
        var rangeStart = -1
        var first = true
        var bits = 0
        defer { if bits != 0 { spec.weekdays = Int8(truncatingIfNeeded: bits) } }
        while true {
            guard let (name, nr) = Self.dayTable.first(where: { hasPrefixNoCase($0.0, at: p) }) else {
                if first { return }
                throw error("expected a weekday", at: p)
            }
            let after = p + name.utf8.count
            let next: UInt8 = after < end ? bytes[after] : 0
            guard [0, UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: ","), UInt8(ascii: " ")].contains(next) else {
                throw error("invalid weekday", at: p)
            }
            bits |= 1 << nr
            if rangeStart >= 0 {
                if rangeStart > nr { throw error("weekday range runs backwards", at: p) }
                for j in (rangeStart + 1)..<max(nr, rangeStart + 1) { bits |= 1 << j }
            }
            p = after
            if p >= end { return }
            if current == UInt8(ascii: " ") { skipSpaces(); return }
            if current == UInt8(ascii: ".") {
                if rangeStart >= 0 { throw error("weekday range may not be chained", at: p) }
                guard p + 1 < end, bytes[p + 1] == UInt8(ascii: ".") else { throw error("expected '..'", at: p) }
                rangeStart = nr
                p += 2
            } else if current == UInt8(ascii: "-") {
                if rangeStart >= 0 { throw error("weekday range may not be chained", at: p) }
                rangeStart = nr
                p += 1
            } else if current == UInt8(ascii: ",") {
                rangeStart = -1
                p += 1
            }
            if p >= end || current == UInt8(ascii: " ") {
                skipSpaces()
                if rangeStart >= 0 { throw error("open weekday range", at: p) }
                return
            }
            first = false
        }
    }

    /// Returns true when the date form already fixed the time (`@timestamp`).
    mutating func parseDate() throws(TimeSyntaxError) -> Bool {
        if p >= end { return false }
        if current == UInt8(ascii: "@") {
            let numberAt = p + 1
            p += 1
            guard let v = number(), v <= Int(Int32.max) * 1_000_000 else { throw error("invalid timestamp", at: numberAt) }
            let b = BrokenDownTime(localSeconds: Int64(v), isdst: 0)
            spec.utc = true
            spec.year = [.value(b.year)]; spec.month = [.value(b.month + 1)]; spec.day = [.value(b.mday)]
            spec.hour = [.value(b.hour)]; spec.minute = [.value(b.minute)]; spec.microsecond = [.value(b.second * 1_000_000)]
            for f in ["year", "month", "day", "hour", "minute", "second"] { positions[f] = [numberAt] }
            return true
        }
        let begin = p
        let first = try parseChain(usec: false)
        if p >= end || current == UInt8(ascii: ":") {
            p = begin
            return false
        }
        if current == UInt8(ascii: "~") {
            spec.endOfMonth = true
        } else if current != UInt8(ascii: "-") {
            throw error("expected '-' or '~' in date", at: p)
        }
        p += 1
        let second = try parseChain(usec: false)
        if p >= end || current == UInt8(ascii: " ") {
            skipSpaces()
            spec.month = first.chain; positions["month"] = first.positions
            spec.day = second.chain; positions["day"] = second.positions
            return false
        } else if spec.endOfMonth {
            throw error("'~' must separate month and day", at: p)
        }
        if current == UInt8(ascii: "~") {
            spec.endOfMonth = true
        } else if current != UInt8(ascii: "-") {
            throw error("expected '-' or '~' in date", at: p)
        }
        p += 1
        let third = try parseChain(usec: false)
        if p < end && current != UInt8(ascii: " ") { throw error("unexpected character after date", at: p) }
        skipSpaces()
        spec.year = first.chain; positions["year"] = first.positions
        spec.month = second.chain; positions["month"] = second.positions
        spec.day = third.chain; positions["day"] = third.positions
        return false
    }

    mutating func parseTime() throws(TimeSyntaxError) {
        if p >= end {
            spec.hour = [.value(0)]; spec.minute = [.value(0)]; spec.microsecond = [.value(0)]
            return
        }
        let h = try parseChain(usec: false)
        guard current == UInt8(ascii: ":") else { throw error("expected ':' in time", at: p) }
        p += 1
        let m = try parseChain(usec: false)
        spec.hour = h.chain; positions["hour"] = h.positions
        spec.minute = m.chain; positions["minute"] = m.positions
        if p >= end {
            spec.microsecond = [.value(0)]
            return
        }
        guard current == UInt8(ascii: ":") else { throw error("expected ':' in time", at: p) }
        p += 1
        let s = try parseChain(usec: true)
        spec.microsecond = s.chain; positions["second"] = s.positions
        if p < end { throw error("unexpected character after time", at: p) }
    }

    /// Digits as an unsigned value; nil without a digit or on overflow past Int32 range handling by callers.
    mutating func number() -> Int? {
        var v = 0, n = 0
        while p < end, bytes[p] >= 48, bytes[p] <= 57 {
            if v > (Int.max - 9) / 10 { v = Int.max / 2 } else { v = v * 10 + Int(bytes[p] - 48) }
            p += 1; n += 1
        }
        return n > 0 ? v : nil
    }

    mutating func decimal(usec: Bool) throws(TimeSyntaxError) -> Int {
        let at = p
        guard p < end, bytes[p] >= 48, bytes[p] <= 57, var v = number() else { throw error("expected a number", at: at) }
        if usec {
            guard v <= Int(Int32.max) else { throw error("number out of range", at: at) }
            v *= 1_000_000
            if p + 1 <= end && current == UInt8(ascii: ".") && !(p + 1 < end && bytes[p + 1] == UInt8(ascii: ".")) {
                p += 1
                var frac = 0, digits = 0
                while digits < 6 {
                    guard p < end, bytes[p] >= 48, bytes[p] <= 57 else {
                        if digits == 0 { throw error("expected digits after '.'", at: p) }
                        while digits < 6 { frac *= 10; digits += 1 }
                        break
                    }
                    frac = frac * 10 + Int(bytes[p] - 48)
                    digits += 1
                    p += 1
                }
                // A seventh digit rounds, the rest is ignored, like systemd.
                if p < end, bytes[p] >= UInt8(ascii: "5"), bytes[p] <= UInt8(ascii: "9") { frac += 1 }
                while p < end, bytes[p] >= 48, bytes[p] <= 57 { p += 1 }
                v += frac
            }
        }
        guard v <= Int(Int32.max) else { throw error("number out of range", at: at) }
        return v
    }

    mutating func parseChain(usec: Bool) throws(TimeSyntaxError) -> (chain: [CalendarComponent]?, positions: [Int]) {
        if current == UInt8(ascii: "*") {
            let at = p
            p += 1
            return usec ? ([CalendarComponent(start: 0, stop: -1, step: 1_000_000)], [at]) : (nil, [])
        }
        var chain: [CalendarComponent] = []
        var pos: [Int] = []
        while true {
            // Checked before reading one more, so exactly `maxComponents` are accepted (systemd
            // takes one more than its documented 240; we keep to the number we document).
            if chain.count >= Self.maxComponents { throw error("too many components (at most \(Self.maxComponents) in one field)", at: p) }
            let at = p
            let start = try decimal(usec: usec)
            var stop = -1, rep = 0
            if current == UInt8(ascii: "."), p + 1 < end, bytes[p + 1] == UInt8(ascii: ".") {
                p += 2
                stop = try decimal(usec: usec)
                rep = usec ? 1_000_000 : 1
            }
            if current == UInt8(ascii: "/") {
                p += 1
                let repAt = p
                rep = try decimal(usec: usec)
                if rep == 0 { throw error("repetition must be positive", at: repAt) }
            } else {
                if start > Int(Int32.max) - rep { throw error("number out of range", at: at) }
                if usec && stop >= 0 && start + rep > stop { throw error("range shorter than one second", at: at) }
            }
            guard [0, UInt8(ascii: " "), UInt8(ascii: ","), UInt8(ascii: "-"), UInt8(ascii: "~"), UInt8(ascii: ":")].contains(current) else {
                throw error("unexpected character", at: p)
            }
            chain.append(CalendarComponent(start: Int32(start), stop: Int32(stop), step: Int32(rep)))
            pos.append(at)
            if current == UInt8(ascii: ",") { p += 1 } else { break }
        }
        return (chain, pos)
    }

    mutating func normalizeAndValidate() throws(TimeSyntaxError) {
        if spec.weekdays <= 0 || spec.weekdays >= 127 { spec.weekdays = -1 }
        if spec.endOfMonth && spec.day == nil { spec.endOfMonth = false }
        try fix(&spec.year, "year", from: 1970, to: 2199, years: true, eom: false)
        try fix(&spec.month, "month", from: 1, to: 12, years: false, eom: false)
        try fix(&spec.day, "day", from: 1, to: 31, years: false, eom: spec.endOfMonth)
        try fix(&spec.hour, "hour", from: 0, to: 23, years: false, eom: false)
        try fix(&spec.minute, "minute", from: 0, to: 59, years: false, eom: false)
        try fix(&spec.microsecond, "second", from: 0, to: 60 * 1_000_000 - 1, years: false, eom: false)
    }

    /// Two-digit years, stop alignment, dropping useless repetitions, range checks, then sort and dedupe.
    func fix(_ chain: inout [CalendarComponent]?, _ field: String, from: Int, to toIn: Int, years: Bool, eom: Bool) throws(TimeSyntaxError) {
        guard var c = chain else { return }
        let pos = positions[field] ?? []
        let to = eom ? toIn - 3 : toIn
        for i in c.indices {
            var start = Int(c[i].start), stop = Int(c[i].stop), rep = Int(c[i].step)
            if years {
                if start >= 0 && start < 70 { start += 2000 } else if start >= 70 && start < 100 { start += 1900 }
                if stop >= 0 && stop < 70 { stop += 2000 } else if stop >= 70 && stop < 100 { stop += 1900 }
            }
            if stop > start && rep > 0 { stop -= (stop - start) % rep }
            if (stop > start && rep > 0 && start + rep > stop) || start == stop { rep = 0; stop = -1 }
            let at = i < pos.count ? pos[i] : 0
            let what = field == "second" ? "seconds" : field
            if start < from || start > to { throw error("\(what) value out of range", at: at) }
            if rep > to - from { throw error("\(what) repetition too large", at: at) }
            if stop >= 0 {
                if stop < from || stop > to { throw error("\(what) range end out of range", at: at) }
                if start + rep > stop { throw error("\(what) range is empty", at: at) }
            } else if eom ? start - rep < from : start + rep > to {
                throw error("\(what) repetition never fires", at: at)
            }
            c[i] = CalendarComponent(start: Int32(start), stop: Int32(stop), step: Int32(rep))
        }
        c.sort { ($0.start, $0.stop, $0.step) < ($1.start, $1.stop, $1.step) }
        var out: [CalendarComponent] = []
        out.reserveCapacity(c.count)
        for x in c where out.last != x { out.append(x) }
        chain = out
    }
}
