import TocsinTime

extension TOMLParser {
    /// Exactly `n` digits at `pos`, consumed.
    private mutating func fixedDigits(_ n: Int) -> Int? {
        var v = 0
        for k in 0..<n {
            guard isDigit(pos + k) else { return nil }
            v = v * 10 + Int(buf[pos + k] - ASCII.zero)
        }
        pos += n
        return v
    }

    private mutating func expect(_ b: UInt8, in what: String, start: Int) throws(TOMLAbort) {
        guard cur == b, !atEnd else {
            throw fail("invalid \(what) '\(makeString(start, pos))': expected '\(Character(Unicode.Scalar(b)))', found \(describe(pos))", at: start)
        }
        pos += 1
    }

    mutating func parseDateValue() throws(TOMLAbort) -> TOMLValue {
        let start = pos
        let what = "date"
        guard let year = fixedDigits(4) else { throw fail("invalid date", at: start) }
        try expect(ASCII.minus, in: what, start: start)
        guard let month = fixedDigits(2) else { throw fail("invalid date '\(makeString(start, pos))': expected a two-digit month, found \(describe(pos))", at: start) }
        try expect(ASCII.minus, in: what, start: start)
        guard let day = fixedDigits(2) else { throw fail("invalid date '\(makeString(start, pos))': expected a two-digit day, found \(describe(pos))", at: start) }
        if !(1...12).contains(month) {
            report("invalid date '\(makeString(start, pos))': month must be 01 to 12", at: start)
        } else if day < 1 || day > CivilMath.daysInMonth(year, month) {
            report("invalid date '\(makeString(start, pos))': day must be 01 to \(CivilMath.daysInMonth(year, month))", at: start)
        }
        let date = TOMLLocalDate(year: year, month: month, day: day)
        let sep = cur
        let hasTime = !atEnd && (sep == UInt8(ascii: "T") || sep == UInt8(ascii: "t")
            || (sep == ASCII.space && isDigit(pos + 1) && isDigit(pos + 2) && byte(pos + 3) == ASCII.colon))
        guard hasTime else { return .dateTime(TOMLDateTime(date: date, time: nil, offsetMinutes: nil)) }
        pos += 1
        guard let time = try parseTimeFields(start: start) else { return .dateTime(TOMLDateTime(date: date, time: nil, offsetMinutes: nil)) }
        var offset: Int?
        let o = cur
        if !atEnd, o == UInt8(ascii: "Z") || o == UInt8(ascii: "z") {
            pos += 1
            offset = 0
        } else if !atEnd, o == ASCII.plus || o == ASCII.minus {
            pos += 1
            guard let h = fixedDigits(2) else { throw fail("invalid date-time '\(makeString(start, pos))': expected a two-digit offset hour, found \(describe(pos))", at: start) }
            try expect(ASCII.colon, in: "date-time", start: start)
            guard let m = fixedDigits(2) else { throw fail("invalid date-time '\(makeString(start, pos))': expected two-digit offset minutes, found \(describe(pos))", at: start) }
            if h > 23 || m > 59 {
                report("invalid date-time '\(makeString(start, pos))': offset must be at most 23:59", at: start)
                }
            offset = (h * 60 + m) * (o == ASCII.minus ? -1 : 1)
        }
        return .dateTime(TOMLDateTime(date: date, time: time, offsetMinutes: offset))
    }

    mutating func parseLocalTimeValue() throws(TOMLAbort) -> TOMLValue {
        let start = pos
        let time = try parseTimeFields(start: start)
        return .dateTime(TOMLDateTime(date: nil, time: time ?? TOMLLocalTime(hour: 0, minute: 0, second: 0), offsetMinutes: nil))
    }

    /// `HH:MM[:SS[.fraction]]` (seconds are optional from TOML 1.1); nanoseconds keep the first
    /// nine fraction digits. Returns nil after reporting an out-of-range field (the syntax was
    /// fine, so parsing continues).
    private mutating func parseTimeFields(start: Int) throws(TOMLAbort) -> TOMLLocalTime? {
        let what = "time"
        let timeStart = pos
        guard let hour = fixedDigits(2) else { throw fail("invalid date-time '\(makeString(start, pos))': expected a two-digit hour, found \(describe(pos))", at: start) }
        try expect(ASCII.colon, in: what, start: start)
        guard let minute = fixedDigits(2) else { throw fail("invalid time '\(makeString(start, pos))': expected two-digit minutes, found \(describe(pos))", at: start) }
        var second = 0
        var nanos = 0
        let hasSeconds = cur == ASCII.colon && !atEnd
        if hasSeconds {
            pos += 1
            guard let s = fixedDigits(2) else { throw fail("invalid time '\(makeString(start, pos))': expected two-digit seconds, found \(describe(pos))", at: start) }
            second = s
        } else {
            require(.timeWithoutSeconds, at: timeStart)
        }
        if hasSeconds, cur == ASCII.dot, !atEnd {
            pos += 1
            guard isDigit(pos) else {
                throw fail("invalid time '\(makeString(start, pos))': expected fractional seconds after '.', found \(describe(pos))", at: start)
            }
            var count = 0
            while isDigit(pos) {
                if count < 9 { nanos = nanos * 10 + Int(buf[pos] - ASCII.zero) }
                count += 1
                pos += 1
            }
            while count < 9 { nanos *= 10; count += 1 }
        }
        if hour > 23 || minute > 59 || second > 59 {
            let field = hour > 23 ? "hour must be 00 to 23" : minute > 59 ? "minute must be 00 to 59" : "second must be 00 to 59"
            report("invalid time '\(makeString(start, pos))': \(field)", at: start)
            return nil
        }
        return TOMLLocalTime(hour: hour, minute: minute, second: second, nanosecond: nanos)
    }
}
