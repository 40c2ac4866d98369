/// A notification's time as a person writes it, in systemd.time(7)'s timestamp forms, before the
/// notification's zone and the moment of scheduling make it an instant.
///
/// `tocsin schedule --at "2026-12-24 18:00"` and `--at 18:00` are what people type; only RFC 3339
/// with seconds and an offset was understood, and the answer (`expected ':'`) did not say why.
/// A form without a zone is read in the notification's zone (its `timezone`, else the daemon's),
/// which only the daemon knows, so the zone is applied when the notification is scheduled, as for
/// the config file's local date-times.
public enum WrittenTimestamp: Hashable, Sendable {
    /// With `Z`, an offset or ` UTC`, or `@<unix seconds>`.
    case instant(Instant)
    /// A date, and a time (midnight when left out), without a zone.
    case local(CivilDateTime)
    /// A time of the day of scheduling (`18:00`), or midnight of a day near it (`today`,
    /// `tomorrow`, `yesterday`): `days` after the day of scheduling, in the notification's zone.
    case day(days: Int, time: TimeOfDay)
}

/// A wall-clock time with no date. No `description`: a config notification's fingerprint is its
/// trigger as reflection prints it (`SpecResolver.triggerText`), field by field.
public struct TimeOfDay: Hashable, Sendable {
    public var hour: Int, minute: Int, second: Int, microsecond: Int
    public init(hour: Int = 0, minute: Int = 0, second: Int = 0, microsecond: Int = 0) {
        self.hour = hour; self.minute = minute; self.second = second; self.microsecond = microsecond
    }

    /// `HH:MM`, with `:SS` when there are seconds, as a person wrote it back in a message. Not
    /// `description`: a trigger's fingerprint is its reflection text, which must not change.
    public var clock: String {
        var text = "\(Timestamp.pad(hour, 2)):\(Timestamp.pad(minute, 2))"
        if second != 0 || microsecond != 0 { text += ":\(Timestamp.pad(second, 2))" }
        return text
    }
}

extension WrittenTimestamp {
    /// The instant meant, reading a form without a zone in `zone`, whose day `now` falls on is
    /// "today". For the CLI's own options (`tocsin history --since`, `tocsin next --from`),
    /// which it resolves itself; a notification's times are resolved by the daemon.
    public func instant(now: Instant, in zone: TimeZoneRules) -> Instant {
        switch self {
        case .instant(let i): return i
        case .local(let c): return Timestamp.instant(of: c, in: zone)
        case .day(let days, let time): return Timestamp.instant(days: days, at: time, from: now, in: zone)
        }
    }
}

extension Timestamp {
    /// A written form or `+<duration>` from `now`, as the instant it means in `zone`.
    public static func parse(_ text: String, now: Instant, zone: TimeZoneRules) throws(TimeSyntaxError) -> Instant {
        if text.hasPrefix("+") { return try parse(text, now: now) }
        return try parseWritten(text).instant(now: now, in: zone)
    }

    /// systemd's absolute forms, as `systemd-analyze timestamp` reads them:
    /// `[Weekday ]YYYY-MM-DD[ HH:MM[:SS[.frac]]][ UTC]` (the weekday must be the date's), a time
    /// alone (`HH:MM[:SS[.frac]]`, today), `today`, `tomorrow`, `yesterday`, `@<unix seconds>`;
    /// and RFC 3339 (`T` between date and time, `Z` or `+hh:mm` after it), seconds optional.
    /// Relative spans (`+15min`) are the caller's: they need no zone.
    public static func parseWritten(_ text: String) throws(TimeSyntaxError) -> WrittenTimestamp {
        var p = WrittenParser(Array(text.unicodeScalars))
        return try p.parse()
    }

    /// The instant of `days` after the day `now` falls on in `zone`, at `time`, resolved as a
    /// local date-time is (a time a DST change skips moves forward; a repeated one is the first).
    public static func instant(days: Int, at time: TimeOfDay, from now: Instant, in zone: TimeZoneRules) -> Instant {
        let localSeconds = now.seconds + Int64(zone.utcOffset(at: now))
        let today = Int(CivilMath.floorDiv(localSeconds, 86_400))
        let d = CivilMath.civil(days: today + days)
        return instant(of: CivilDateTime(year: d.year, month: d.month, day: d.day, hour: time.hour, minute: time.minute,
                                         second: time.second, microsecond: time.microsecond), in: zone)
    }
}

/// One pass over the scalars; every failure names the column (1-based) it stopped at.
private struct WrittenParser {
    let s: [Unicode.Scalar]
    var i = 0

    init(_ s: [Unicode.Scalar]) { self.s = s }

    static let days: [(word: String, days: Int)] = [("today", 0), ("tomorrow", 1), ("yesterday", -1)]
    /// tm_wday order (0 = Sunday), as `CivilMath.weekday`.
    static let weekdays = ["sunday", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday"]
    static let shown = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"]

    func fail(_ message: String, _ at: Int) -> TimeSyntaxError {
        TimeSyntaxError(.invalidTimestamp, message, column: at + 1)
    }

    static let expectation = "expected a date (2026-12-24), a date and time (2026-12-24 18:00), a time (18:00), "
        + "today, tomorrow, yesterday, @<unix seconds> or +<duration>"

    mutating func parse() throws(TimeSyntaxError) -> WrittenTimestamp {
        guard let first = s.first else { throw fail("empty timestamp", 0) }
        if first == "@" { return .instant(try Timestamp.parseEpoch(s) { fail($0, $1) }) }
        let text = String(String.UnicodeScalarView(s))
        if let hit = Self.days.first(where: { $0.word == text }) { return .day(days: hit.days, time: TimeOfDay()) }
        if isDigit(first) {
            // A time alone has its ':' third (`9:30` is not systemd's either); a date its '-' fifth.
            if s.count > 2, s[2] == ":" {
                let time = try timeOfDay()
                if i < s.count { throw fail("unexpected character: a time alone is read in the notification's zone, with no zone of its own", i) }
                return .day(days: 0, time: time)
            }
            return try dated(weekday: nil)
        }
        // A weekday, then a date.
        let wordStart = i
        while i < s.count, isLetter(s[i]) { i += 1 }
        let word = String(String.UnicodeScalarView(s[wordStart..<i])).lowercased()
        guard !word.isEmpty, let wday = Self.weekdays.firstIndex(where: { $0 == word || (word.count == 3 && $0.hasPrefix(word)) }) else {
            throw fail(Self.expectation, wordStart)
        }
        guard i < s.count, s[i] == " " else { throw fail("expected a date after the weekday", i) }
        i += 1
        return try dated(weekday: (wday, wordStart))
    }

    mutating func dated(weekday: (day: Int, at: Int)?) throws(TimeSyntaxError) -> WrittenTimestamp {
        guard isDigit(s[safe: i]) else { throw fail(Self.expectation, i) }
        let year = try digits(4, "a four-digit year")
        try expect("-")
        let monthAt = i
        let month = try digits(2, "a two-digit month")
        try expect("-")
        let dayAt = i
        let day = try digits(2, "a two-digit day")
        guard (1...12).contains(month) else { throw fail("month out of range", monthAt) }
        guard (1...CivilMath.daysInMonth(year, month)).contains(day) else { throw fail("day out of range", dayAt) }
        let dayNumber = CivilMath.days(year: year, month: month, day: day)
        if let weekday, CivilMath.weekday(days: dayNumber) != weekday.day {
            let date = "\(Timestamp.pad(year, 4))-\(Timestamp.pad(month, 2))-\(Timestamp.pad(day, 2))"
            throw fail("\(date) is a \(Self.shown[CivilMath.weekday(days: dayNumber)]), not a \(Self.shown[weekday.day])", weekday.at)
        }
        var time = TimeOfDay()
        var rfc3339 = false, timed = false
        if i < s.count, s[i] == "T" || s[i] == "t" || (s[i] == " " && isDigit(s[safe: i + 1])) {
            rfc3339 = s[i] != " "
            timed = true
            i += 1
            time = try timeOfDay()
        }
        let civil = CivilDateTime(year: year, month: month, day: day, hour: time.hour, minute: time.minute,
                                  second: time.second, microsecond: time.microsecond)
        guard i < s.count else { return .local(civil) }
        // The zone: RFC 3339's `Z` or offset right after the time, or systemd's ` UTC`.
        let offset: Int
        let zoneAt = i
        if s[i] == "Z" || s[i] == "z" {
            offset = 0
            i += 1
        } else if s[i] == "+" || s[i] == "-" {
            let sign = s[i] == "-" ? -1 : 1
            i += 1
            let oh = try digits(2, "offset hours")
            try expect(":")
            let om = try digits(2, "offset minutes")
            guard oh <= 23, om <= 59 else { throw fail("offset out of range", zoneAt + 1) }
            offset = sign * (oh * 3600 + om * 60)
        } else if !rfc3339, String(String.UnicodeScalarView(s[i...])) == " UTC" {
            offset = 0
            i = s.count
        } else {
            throw fail("unexpected character: after the \(timed ? "time" : "date") only 'Z', an offset (+01:00) or ' UTC' "
                       + "may follow; for another zone, give the notification's timezone", i)
        }
        if i != s.count { throw fail("unexpected character", i) }
        let secs = Int64(dayNumber) * 86_400 + Int64(time.hour * 3600 + time.minute * 60 + time.second - offset)
        return .instant(Instant(microseconds: secs * 1_000_000 + Int64(time.microsecond)))
    }

    /// `HH:MM[:SS[.frac]]`.
    mutating func timeOfDay() throws(TimeSyntaxError) -> TimeOfDay {
        let hourAt = i
        let hour = try digits(2, "a two-digit hour")
        try expect(":")
        let minuteAt = i
        let minute = try digits(2, "two-digit minutes")
        var second = 0, micro = 0, secondAt = i
        if i < s.count, s[i] == ":" {
            i += 1
            secondAt = i
            second = try digits(2, "two-digit seconds")
            if i < s.count, s[i] == "." {
                i += 1
                var scale = 100_000
                let fracStart = i
                while i < s.count, isDigit(s[i]) {
                    micro += Int(s[i].value - 48) * scale
                    scale /= 10
                    i += 1
                }
                if i == fracStart { throw fail("expected digits after '.'", i) }
            }
        }
        guard hour <= 23 else { throw fail("hour out of range", hourAt) }
        guard minute <= 59 else { throw fail("minutes out of range", minuteAt) }
        guard second <= 59 else { throw fail("seconds out of range", secondAt) }
        return TimeOfDay(hour: hour, minute: minute, second: second, microsecond: micro)
    }

    mutating func digits(_ n: Int, _ what: String) throws(TimeSyntaxError) -> Int {
        var v = 0
        for _ in 0..<n {
            guard isDigit(s[safe: i]) else { throw fail("expected \(what)", i) }
            v = v * 10 + Int(s[i].value - 48)
            i += 1
        }
        return v
    }

    mutating func expect(_ c: Unicode.Scalar) throws(TimeSyntaxError) {
        guard i < s.count, s[i] == c else { throw fail("expected '\(c)'", i) }
        i += 1
    }

    func isDigit(_ c: Unicode.Scalar?) -> Bool { c.map { $0 >= "0" && $0 <= "9" } ?? false }
    func isLetter(_ c: Unicode.Scalar) -> Bool { (c >= "a" && c <= "z") || (c >= "A" && c <= "Z") }
}

extension Array {
    fileprivate subscript(safe index: Int) -> Element? { indices.contains(index) ? self[index] : nil }
}
