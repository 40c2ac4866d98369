/// One element of a calendar field: `start`, `start..stop`, `start/repeat`, `start..stop/repeat`.
///
/// `stop == -1` means "no upper bound", `repeat == 0` "no repetition"; the microsecond field
/// stores seconds times 10⁶. Int32 keeps a parsed spec small: a daemon holds one per pending
/// calendar notification.
struct CalendarComponent: Hashable, Sendable {
    var start: Int32
    var stop: Int32
    var step: Int32

    static func value(_ v: Int) -> CalendarComponent { CalendarComponent(start: Int32(v), stop: -1, step: 0) }
}

/// A systemd.time(7) calendar event expression.
///
/// Parsing, normalization and the next-elapse search reproduce systemd 252 as shipped
/// (Debian 252.x, which carries the stable backports), verified against `systemd-analyze
/// calendar`. That includes its quirks: a repetition that overflows a field restarts the next
/// field from its beginning, a nonexistent local time resolves the way glibc's `mktime` does,
/// and a search that cannot settle gives up after 1000 rounds (nil) exactly where systemd does.
public struct CalendarSpec: Hashable, Sendable, CustomStringConvertible {
    /// Bit 0 = Monday ... bit 6 = Sunday; -1 when every weekday matches.
    var weekdays: Int8 = -1
    var endOfMonth = false
    var utc = false
    /// The trailing word as written (`Europe/Berlin`, `CET`, `CEST`) until `resolvingZone` gives it
    /// its meaning: a zone file, or an abbreviation of the local zone. nil once it is an abbreviation.
    var zone: String?
    /// Where `zone` starts in the text (1-based column), for the error when it names nothing.
    /// Not part of the value: two specs that differ only in spacing are the same schedule.
    var zoneColumn = Uncompared(value: 0)
    /// DST forced by a trailing abbreviation of the local zone (`... CEST`): 0 or 1, -1 when free.
    var dst: Int8 = -1
    /// That abbreviation as the local zone spells it, for the normalized form.
    var dstName: String?
    // nil means `*` (any value).
    var year: [CalendarComponent]?
    var month: [CalendarComponent]?
    var day: [CalendarComponent]?
    var hour: [CalendarComponent]?
    var minute: [CalendarComponent]?
    var microsecond: [CalendarComponent]?
    /// What a local time skipped by a DST change does (`dst_gap`); systemd's `skip` by default.
    public var dstGap: DSTGapPolicy = .skip
    /// Which occurrences of a local time repeated by a DST change fire (`dst_fold`); systemd's `first` by default.
    public var dstFold: DSTFoldPolicy = .first

    init() {}

    /// Parses with systemd's grammar; errors carry the column of the problem.
    ///
    /// A trailing word is kept for `resolvingZone` when `/usr/share/zoneinfo` has it or when it
    /// could be a zone abbreviation (`CET`, `EDT`, `+03`): which of the two it is depends on the
    /// zone the expression is evaluated in, which the caller may only know later.
    public static func parse(_ text: String) throws(TimeSyntaxError) -> CalendarSpec {
        let directory = ZoneInfoDirectory()
        return try parse(text, zoneExists: { directory.hasZone(named: $0) })
    }

    /// Parses with an explicit answer to "is this trailing word a time zone?", keeping parsing free of I/O.
    public static func parse(_ text: String, zoneExists: (String) -> Bool) throws(TimeSyntaxError) -> CalendarSpec {
        var parser = CalendarParser(text: text)
        return try parser.parse(zoneExists: zoneExists)
    }

    /// Parses as systemd does when `localZone` is the process's zone: a trailing abbreviation
    /// of that zone (`daily CET` in Europe/Berlin) then means "local time with DST forced off/on",
    /// and the expression must be evaluated in `localZone`. Same as `parse` then `resolvingZone`.
    public static func parse(_ text: String, localZone: TimeZoneRules) throws(TimeSyntaxError) -> CalendarSpec {
        let directory = ZoneInfoDirectory()
        return try parse(text).resolvingZone(local: localZone, rules: directory.rules(named:)).spec
    }

    /// The zone word inside the expression as written (`... Europe/Berlin`, `... UTC`, `... CET`), if any.
    /// Which zone the expression runs in is `resolvingZone`'s answer, not this word.
    public var timeZoneName: String? { utc ? "UTC" : zone }

    public var description: String { normalized }

    /// systemd's "Normalized form".
    public var normalized: String {
        var out = ""
        if weekdays > 0 && weekdays < 127 {
            out += Self.formatWeekdays(Int(weekdays))
            out += " "
        }
        Self.formatChain(year, width: 4, usec: false, into: &out)
        out += "-"
        Self.formatChain(month, width: 2, usec: false, into: &out)
        out += endOfMonth ? "~" : "-"
        Self.formatChain(day, width: 2, usec: false, into: &out)
        out += " "
        Self.formatChain(hour, width: 2, usec: false, into: &out)
        out += ":"
        Self.formatChain(minute, width: 2, usec: false, into: &out)
        out += ":"
        Self.formatChain(microsecond, width: 2, usec: true, into: &out)
        if utc {
            out += " UTC"
        } else if let zone {
            out += " " + zone
        } else if let dstName, !dstName.isEmpty {
            out += " " + dstName
        }
        return out
    }

    private static let dayNames = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]

    /// Runs of three or more days print as ranges, pairs as lists, like systemd.
    private static func formatWeekdays(_ bits: Int) -> String {
        var out = ""
        var runStart = -1
        var needComma = false
        func close(_ x: Int) {
            if x > runStart + 1 {
                out += x > runStart + 2 ? ".." : ","
                out += dayNames[x - 1]
            }
        }
        for x in 0..<7 {
            if bits & (1 << x) != 0 {
                if runStart < 0 {
                    if needComma { out += "," } else { needComma = true }
                    out += dayNames[x]
                    runStart = x
                }
            } else if runStart >= 0 {
                close(x)
                runStart = -1
            }
        }
        if runStart >= 0 { close(7) }
        return out
    }

    private static func pad(_ v: Int, _ width: Int) -> String {
        let s = String(v)
        return s.count >= width ? s : String(repeating: "0", count: width - s.count) + s
    }

    private static func formatChain(_ chain: [CalendarComponent]?, width: Int, usec: Bool, into out: inout String) {
        guard let chain, !chain.isEmpty else { out += "*"; return }
        let d = usec ? 1_000_000 : 1
        // A seconds component that repeats every second from 0 covers the field whatever else is
        // listed, and systemd prints the field as `*` then (`*:4,30:0/1,3,5` is `*:04,30:*`).
        if usec && chain.contains(where: { $0.start == 0 && $0.stop < 0 && $0.step == 1_000_000 }) {
            out += "*"
            return
        }
        for (i, c) in chain.enumerated() {
            if i > 0 { out += "," }
            let start = Int(c.start), stop = Int(c.stop), rep = Int(c.step)
            out += pad(start / d, width)
            if start % d > 0 { out += "." + pad(start % d, 6) }
            if stop > 0 { out += ".." + pad(stop / d, width) }
            if stop > 0 && stop % d > 0 { out += "." + pad(stop % d, 6) }
            if rep > 0 && !(stop > 0 && rep == d) { out += "/" + String(rep / d) }
            if rep % d > 0 { out += "." + pad(rep % d, 6) }
        }
    }
}

/// A stored value that equality and hashing ignore (positions kept only for error messages).
struct Uncompared<Value: Sendable>: Hashable, Sendable {
    var value: Value
    static func == (a: Self, b: Self) -> Bool { true }
    func hash(into hasher: inout Hasher) {}
}
