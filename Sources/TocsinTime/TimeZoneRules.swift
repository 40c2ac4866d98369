/// The rules of one IANA time zone, read from TZif data; a value, so callers pass the zone explicitly.
///
/// Lookups follow glibc's `localtime` (which is what systemd uses): the transition table
/// for instants it covers, the first standard-time type before it, and the POSIX TZ footer
/// from the last transition on. Everything is parsed once here so that the per-instant cost
/// is one binary search and no allocation.
public struct TimeZoneRules: Hashable, Sendable {
    /// IANA name (`Europe/Berlin`) or `UTC`.
    public let identifier: String

    struct LocalTimeType: Hashable, Sendable {
        var utcOffset: Int
        var isDST: Bool
        var abbreviation: String
    }

    /// Transition instants in Unix seconds, ascending.
    let transitions: [Int64]
    /// For each transition, the index into `types` in force from it on.
    let transitionTypes: [UInt8]
    let types: [LocalTimeType]
    /// Index of the type glibc uses before the first transition (the first non-DST type).
    let initialType: Int
    let footer: PosixTZRule?

    public static var utc: TimeZoneRules {
        TimeZoneRules(identifier: "UTC", transitions: [], transitionTypes: [],
                      types: [LocalTimeType(utcOffset: 0, isDST: false, abbreviation: "UTC")],
                      initialType: 0, footer: nil)
    }

    init(identifier: String, transitions: [Int64], transitionTypes: [UInt8], types: [LocalTimeType],
         initialType: Int, footer: PosixTZRule?) {
        self.identifier = identifier
        self.transitions = transitions
        self.transitionTypes = transitionTypes
        self.types = types
        self.initialType = initialType
        self.footer = footer
    }

    /// Rules from a bare POSIX TZ string (`EST5EDT,M3.2.0,M11.1.0`), as glibc accepts in `$TZ`.
    init?(identifier: String, posixTZ: String) {
        guard let rule = PosixTZRule.parse(posixTZ) else { return nil }
        self.init(identifier: identifier, transitions: [], transitionTypes: [],
                  types: [LocalTimeType(utcOffset: rule.stdOffset, isDST: false, abbreviation: rule.stdName)],
                  initialType: 0, footer: rule)
    }

    /// Builds rules from the bytes of a TZif file (v1–v3, including the POSIX TZ footer for the far future).
    public init(identifier: String, tzif: [UInt8]) throws(TimeSyntaxError) {
        func bad(_ why: String) -> TimeSyntaxError {
            TimeSyntaxError(.unknownTimeZone, "\(identifier): malformed TZif data (\(why))", column: 1)
        }
        var reader = ByteReader(bytes: tzif)
        guard let h1 = reader.header() else { throw bad("no TZif header") }
        var header = h1
        var timeSize = 4
        if h1.version >= 2 {
            // Skip the 32-bit body: the 64-bit one that follows is authoritative.
            guard reader.skip(h1.bodySize(timeSize: 4)), let h2 = reader.header() else { throw bad("truncated v1 body") }
            header = h2
            timeSize = 8
        }
        var transitions: [Int64] = []
        transitions.reserveCapacity(header.timecnt)
        for _ in 0..<header.timecnt {
            guard let t = timeSize == 8 ? reader.int64() : reader.int32().map(Int64.init) else { throw bad("truncated transitions") }
            transitions.append(t)
        }
        var transitionTypes: [UInt8] = []
        for _ in 0..<header.timecnt {
            guard let i = reader.byte() else { throw bad("truncated transition types") }
            guard Int(i) < header.typecnt else { throw bad("transition type out of range") }
            transitionTypes.append(i)
        }
        var raw: [(Int, Bool, Int)] = []
        for _ in 0..<header.typecnt {
            guard let off = reader.int32(), let dst = reader.byte(), let idx = reader.byte() else { throw bad("truncated types") }
            raw.append((Int(off), dst != 0, Int(idx)))
        }
        guard let charSlice = reader.take(header.charcnt) else { throw bad("truncated abbreviations") }
        let chars = Array(charSlice)
        guard reader.skip(header.leapcnt * (timeSize + 4) + header.isstdcnt + header.isutcnt) else { throw bad("truncated trailer") }
        guard header.typecnt > 0 else { throw bad("no local time types") }
        let types = raw.map { (off, dst, idx) -> LocalTimeType in
            var end = idx
            while end < chars.count && chars[end] != 0 { end += 1 }
            let abbr = idx < chars.count ? String(decoding: chars[idx..<end], as: UTF8.self) : ""
            return LocalTimeType(utcOffset: off, isDST: dst, abbreviation: abbr)
        }
        var footer: PosixTZRule?
        if header.version >= 2, reader.byte() == UInt8(ascii: "\n") {
            var text: [UInt8] = []
            while let b = reader.byte(), b != UInt8(ascii: "\n") { text.append(b) }
            footer = PosixTZRule.parse(String(decoding: text, as: UTF8.self))
        }
        self.identifier = identifier
        self.transitions = transitions
        self.transitionTypes = transitionTypes
        self.types = types
        self.initialType = types.firstIndex { !$0.isDST } ?? 0
        self.footer = footer
    }

    /// Which local time type glibc's `localtime` uses for `seconds`; nil when the footer rule decides.
    @inline(__always)
    private func typeIndex(_ seconds: Int64) -> Int? {
        let n = transitions.count
        if n == 0 { return footer == nil ? initialType : nil }
        if seconds < transitions[0] { return initialType }
        if seconds >= transitions[n - 1] { return footer == nil ? Int(transitionTypes[n - 1]) : nil }
        // Last transition <= seconds.
        var lo = 0, hi = n - 1
        while lo < hi {
            let mid = (lo + hi + 1) >> 1
            if transitions[mid] <= seconds { lo = mid } else { hi = mid - 1 }
        }
        return Int(transitionTypes[lo])
    }

    /// Offset and DST flag only: the calendar search probes this in its inner loop, so it
    /// avoids touching the abbreviation strings.
    @inline(__always)
    func offsetAndDST(_ seconds: Int64) -> (offset: Int, isDST: Bool) {
        if let i = typeIndex(seconds) { return (types[i].utcOffset, types[i].isDST) }
        return footer?.offsetAndDST(seconds) ?? (0, false)
    }

    /// The span of the transition table around `seconds` in which offset and DST flag are
    /// constant, or nil where the footer rule decides. Lets a search cache one lookup.
    func constantSpan(around seconds: Int64) -> (start: Int64, end: Int64, offset: Int, isDST: Bool)? {
        let n = transitions.count
        guard n > 0 else {
            if footer != nil { return nil }
            let t = types[initialType]
            return (.min, .max, t.utcOffset, t.isDST)
        }
        if seconds < transitions[0] {
            let t = types[initialType]
            return (.min, transitions[0], t.utcOffset, t.isDST)
        }
        if seconds >= transitions[n - 1] {
            if footer != nil { return nil }
            let t = types[Int(transitionTypes[n - 1])]
            return (transitions[n - 1], .max, t.utcOffset, t.isDST)
        }
        var lo = 0, hi = n - 1
        while lo < hi {
            let mid = (lo + hi + 1) >> 1
            if transitions[mid] <= seconds { lo = mid } else { hi = mid - 1 }
        }
        let t = types[Int(transitionTypes[lo])]
        return (transitions[lo], transitions[lo + 1], t.utcOffset, t.isDST)
    }

    /// What glibc's `localtime` reports for `seconds`: offset, DST flag and abbreviation.
    func lookup(_ seconds: Int64) -> (offset: Int, isDST: Bool, abbreviation: String) {
        if let i = typeIndex(seconds) { return (types[i].utcOffset, types[i].isDST, types[i].abbreviation) }
        guard let footer else { return (0, false, "UTC") }
        let r = footer.offsetAndDST(seconds)
        return (r.offset, r.isDST, r.isDST ? (footer.dst?.name ?? footer.stdName) : footer.stdName)
    }

    /// UTC offset in seconds in force at `instant`.
    public func utcOffset(at instant: Instant) -> Int { offsetAndDST(instant.seconds).offset }

    /// Abbreviation in force at `instant` (`CET`, `CEST`), as systemd-analyze prints it.
    public func abbreviation(at instant: Instant) -> String { lookup(instant.seconds).abbreviation }

    public func civil(_ instant: Instant) -> CivilDateTime {
        let s = instant.seconds
        let local = s + Int64(offsetAndDST(s).offset)
        let b = BrokenDownTime(localSeconds: local, isdst: 0)
        let us = Int(instant.microseconds - s * 1_000_000)
        return CivilDateTime(year: b.year, month: b.month + 1, day: b.mday, hour: b.hour, minute: b.minute,
                             second: b.second, microsecond: us)
    }

    /// glibc's `tzname[0]`/`tzname[1]` for this zone (standard and DST abbreviation): the footer
    /// rule's names, else those of the latest transitions of each kind.
    var tzNames: (String, String) {
        if let footer { return (footer.stdName, footer.dst?.name ?? footer.stdName) }
        var names: [String?] = [nil, nil]
        for i in transitionTypes.indices.reversed() {
            let t = types[Int(transitionTypes[i])]
            let k = t.isDST ? 1 : 0
            if names[k] == nil { names[k] = t.abbreviation }
            if names[0] != nil && names[1] != nil { break }
        }
        let std = names[0] ?? types[initialType].abbreviation
        return (std, names[1] ?? std)
    }

    /// True when the zone's current rules are UTC+0 without DST (glibc's `timezone == 0 &&
    /// daylight == 0`): systemd-analyze then prints no separate "(in UTC)" line.
    public var isUTCEquivalent: Bool {
        if let footer { return footer.stdOffset == 0 && footer.dst == nil }
        guard let last = transitionTypes.last else { return types[initialType].utcOffset == 0 }
        let t = types[Int(last)]
        return t.utcOffset == 0 && !t.isDST
    }
}

/// Sequential big-endian reader over TZif bytes; every accessor fails soft on truncation.
private struct ByteReader {
    let bytes: [UInt8]
    var pos = 0

    struct Header {
        var version: Int
        var isutcnt, isstdcnt, leapcnt, timecnt, typecnt, charcnt: Int
        func bodySize(timeSize: Int) -> Int {
            timecnt * timeSize + timecnt + typecnt * 6 + charcnt + leapcnt * (timeSize + 4) + isstdcnt + isutcnt
        }
    }

    mutating func byte() -> UInt8? {
        guard pos < bytes.count else { return nil }
        defer { pos += 1 }
        return bytes[pos]
    }
    mutating func take(_ n: Int) -> ArraySlice<UInt8>? {
        guard n >= 0, pos + n <= bytes.count else { return nil }
        defer { pos += n }
        return bytes[pos..<(pos + n)]
    }
    mutating func skip(_ n: Int) -> Bool { take(n) != nil }
    mutating func uint32() -> UInt32? {
        guard let s = take(4) else { return nil }
        return s.reduce(0) { $0 << 8 | UInt32($1) }
    }
    mutating func int32() -> Int32? { uint32().map { Int32(bitPattern: $0) } }
    mutating func int64() -> Int64? {
        guard let s = take(8) else { return nil }
        return Int64(bitPattern: s.reduce(0) { $0 << 8 | UInt64($1) })
    }
    mutating func header() -> Header? {
        guard let magic = take(4), Array(magic) == Array("TZif".utf8), let v = byte(), skip(15) else { return nil }
        var counts: [Int] = []
        for _ in 0..<6 {
            guard let c = uint32(), c < 1 << 24 else { return nil }
            counts.append(Int(c))
        }
        let version = v == 0 ? 1 : Int(v) - Int(UInt8(ascii: "0"))
        return Header(version: version, isutcnt: counts[0], isstdcnt: counts[1], leapcnt: counts[2],
                      timecnt: counts[3], typecnt: counts[4], charcnt: counts[5])
    }
}

/// A POSIX TZ rule (`CET-1CEST,M3.5.0,M10.5.0/3`), with glibc's evaluation semantics.
struct PosixTZRule: Hashable, Sendable {
    enum DateRule: Hashable, Sendable {
        case julian1(Int)            // Jn: 1...365, February 29 never counted
        case julian0(Int)            // n: 0...365
        case monthWeekDay(Int, Int, Int)  // Mm.w.d
    }
    struct DST: Hashable, Sendable {
        var name: String
        var offset: Int
        var start: DateRule, startTime: Int
        var end: DateRule, endTime: Int
    }
    var stdName: String
    /// Seconds east of UTC (the negation of the POSIX notation).
    var stdOffset: Int
    var dst: DST?

    func offsetAndDST(_ t: Int64) -> (offset: Int, isDST: Bool) {
        guard let dst else { return (stdOffset, false) }
        // glibc evaluates both changes in the UTC year of the instant.
        let days = CivilMath.floorDiv(t, 86_400)
        let year = CivilMath.civil(days: Int(days)).year
        let startChange = Self.change(dst.start, year: year) + Int64(dst.startTime - stdOffset)
        let endChange = Self.change(dst.end, year: year) + Int64(dst.endTime - dst.offset)
        let isDST = startChange > endChange ? (t < endChange || t >= startChange) : (t >= startChange && t < endChange)
        return isDST ? (dst.offset, true) : (stdOffset, false)
    }

    /// Unix seconds of 00:00 UTC on the rule's day in `year`.
    static func change(_ rule: DateRule, year: Int) -> Int64 {
        let jan1 = CivilMath.days(year: year, month: 1, day: 1)
        var day: Int
        switch rule {
        case .julian1(let n):
            day = jan1 + n - 1 + (CivilMath.isLeap(year) && n >= 60 ? 1 : 0)
        case .julian0(let n):
            day = jan1 + n
        case .monthWeekDay(let m, let w, let d):
            let first = CivilMath.days(year: year, month: m, day: 1)
            let firstW = CivilMath.weekday(days: first)
            var mday = 1 + (d - firstW + 7) % 7 + (w - 1) * 7
            let dim = CivilMath.daysInMonth(year, m)
            while mday > dim { mday -= 7 }
            day = first + mday - 1
        }
        return Int64(day) * 86_400
    }

    static func parse(_ text: String) -> PosixTZRule? {
        var p = PosixParser(s: Array(text.utf8))
        guard let stdName = p.name(), let stdPosix = p.offset() else { return nil }
        let stdOffset = -stdPosix
        if p.atEnd { return PosixTZRule(stdName: stdName, stdOffset: stdOffset, dst: nil) }
        guard let dstName = p.name() else { return nil }
        var dstOffset = stdOffset + 3600
        if let c = p.peek, c != UInt8(ascii: ",") {
            guard let o = p.offset() else { return nil }
            dstOffset = -o
        }
        var start = DateRule.monthWeekDay(3, 2, 0), startTime = 7200
        var end = DateRule.monthWeekDay(11, 1, 0), endTime = 7200
        if !p.atEnd {
            guard p.eat(","), let s = p.dateRule() else { return nil }
            start = s
            if p.eat("/") { guard let t = p.offset() else { return nil }; startTime = t }
            guard p.eat(","), let e = p.dateRule() else { return nil }
            end = e
            if p.eat("/") { guard let t = p.offset() else { return nil }; endTime = t }
            guard p.atEnd else { return nil }
        }
        return PosixTZRule(stdName: stdName, stdOffset: stdOffset,
                           dst: DST(name: dstName, offset: dstOffset, start: start, startTime: startTime, end: end, endTime: endTime))
    }
}

private struct PosixParser {
    let s: [UInt8]
    var i = 0
    var atEnd: Bool { i >= s.count }
    var peek: UInt8? { i < s.count ? s[i] : nil }
    mutating func eat(_ c: Character) -> Bool {
        if let p = peek, let a = c.asciiValue, p == a { i += 1; return true }
        return false
    }
    mutating func number() -> Int? {
        var v = 0, n = 0
        while let c = peek, c >= 48, c <= 57, n < 9 { v = v * 10 + Int(c - 48); i += 1; n += 1 }
        return n > 0 ? v : nil
    }
    mutating func name() -> String? {
        if eat("<") {
            let start = i
            while let c = peek, c != UInt8(ascii: ">") { i += 1 }
            guard !atEnd, i - start >= 1 else { return nil }
            let n = String(decoding: s[start..<i], as: UTF8.self)
            i += 1
            return n
        }
        let start = i
        while let c = peek, (c >= 65 && c <= 90) || (c >= 97 && c <= 122) { i += 1 }
        guard i - start >= 3 else { return nil }
        return String(decoding: s[start..<i], as: UTF8.self)
    }
    /// `[+-]hh[:mm[:ss]]` in POSIX sign convention; returns seconds.
    mutating func offset() -> Int? {
        var sign = 1
        if eat("-") { sign = -1 } else { _ = eat("+") }
        guard let h = number() else { return nil }
        var v = h * 3600
        if eat(":") {
            guard let m = number() else { return nil }
            v += m * 60
            if eat(":") { guard let sec = number() else { return nil }; v += sec }
        }
        return sign * v
    }
    mutating func dateRule() -> PosixTZRule.DateRule? {
        if eat("J") {
            guard let n = number(), (1...365).contains(n) else { return nil }
            return .julian1(n)
        }
        if eat("M") {
            guard let m = number(), eat("."), let w = number(), eat("."), let d = number(),
                  (1...12).contains(m), (1...5).contains(w), (0...6).contains(d) else { return nil }
            return .monthWeekDay(m, w, d)
        }
        guard let n = number(), (0...365).contains(n) else { return nil }
        return .julian0(n)
    }
}
