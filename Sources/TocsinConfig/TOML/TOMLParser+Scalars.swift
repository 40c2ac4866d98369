extension TOMLParser {
    // MARK: Strings
    //
    // Errors inside a string (bad escape, control character) are reported and scanning goes on to
    // the closing delimiter, so the rest of the document is still checked with the right context.
    // Only a missing delimiter aborts the statement.

    mutating func parseBasicString() throws(TOMLAbort) -> String {
        let open = pos
        pos += 1
        let start = pos
        while pos < end {
            let b = buf[pos]
            if b == ASCII.quote {
                let s = makeString(start, pos)
                pos += 1
                return s
            }
            if b == ASCII.backslash || (b < 0x20 && b != ASCII.tab) || b == 0x7F { break }
            pos += 1
        }
        if pos < end, buf[pos] == ASCII.backslash, let s = decodeEscapes(from: start) { return s }
        var out = [UInt8](UnsafeBufferPointer(rebasing: buf[start..<pos]))
        while true {
            guard pos < end else {
                throw fail("unterminated string (opened at \(location(open))): expected '\"', found end of file", at: pos)
            }
            let b = buf[pos]
            switch b {
            case ASCII.quote:
                pos += 1
                return String(decoding: out, as: UTF8.self)
            case ASCII.backslash:
                parseEscape(into: &out)
            case ASCII.lf, ASCII.cr:
                throw fail("unterminated string: expected '\"' before the end of the line, found \(describe(pos))", at: pos)
            case ASCII.tab:
                out.append(b)
                pos += 1
            case 0..<0x20, 0x7F:
                report("control character \(tomlUnicodeName(UInt32(b))) must be escaped in a string", at: pos)
                pos += 1
            default:
                out.append(b)
                pos += 1
            }
        }
    }

    /// The common case of a well-formed single-line string with escapes, decoded straight into
    /// the `String`'s storage (escapes only shrink text, so the raw length bounds the result).
    /// Returns nil, with `pos` unchanged, on anything unusual: the general path then reports it.
    private mutating func decodeEscapes(from start: Int) -> String? {
        var p = pos
        while p < end {
            let b = buf[p]
            if b == ASCII.quote { break }
            if b == ASCII.backslash { p += 2; continue }
            if (b < 0x20 && b != ASCII.tab) || b == 0x7F { return nil }
            p += 1
        }
        guard p < end, buf[p] == ASCII.quote else { return nil }
        let close = p
        var ok = true
        let buf = self.buf
        let s = String(unsafeUninitializedCapacity: close - start) { out in
            var w = 0, r = start
            while r < close {
                let b = buf[r]
                if b != ASCII.backslash {
                    out[w] = b
                    w += 1
                    r += 1
                    continue
                }
                let e = buf[r + 1]
                var simple: UInt8 = 0
                switch e {
                case UInt8(ascii: "n"): simple = 0x0A
                case UInt8(ascii: "t"): simple = 0x09
                case ASCII.quote: simple = ASCII.quote
                case ASCII.backslash: simple = ASCII.backslash
                case UInt8(ascii: "r"): simple = 0x0D
                case UInt8(ascii: "b"): simple = 0x08
                case UInt8(ascii: "f"): simple = 0x0C
                case UInt8(ascii: "u"), UInt8(ascii: "U"):
                    let n = e == UInt8(ascii: "u") ? 4 : 8
                    guard r + 2 + n <= close else { ok = false; return 0 }
                    var v: UInt32 = 0
                    for k in 0..<n {
                        guard let d = hexValue(buf[r + 2 + k]) else { ok = false; return 0 }
                        v = v << 4 | UInt32(d)
                    }
                    guard let scalar = Unicode.Scalar(v) else { ok = false; return 0 }
                    for byte in UTF8.encode(scalar) ?? UTF8.EncodedScalar() {
                        out[w] = byte
                        w += 1
                    }
                    r += 2 + n
                    continue
                default:
                    ok = false
                    return 0
                }
                out[w] = simple
                w += 1
                r += 2
            }
            return w
        }
        guard ok else { return nil }
        pos = close + 1
        return s
    }

    /// `pos` is at a backslash that does not end a line.
    mutating func parseEscape(into out: inout [UInt8]) {
        let at = pos
        let e = byte(pos + 1)
        var replacement: UInt8 = 0
        switch e {
        case UInt8(ascii: "b"): replacement = 0x08
        case UInt8(ascii: "t"): replacement = 0x09
        case UInt8(ascii: "n"): replacement = 0x0A
        case UInt8(ascii: "f"): replacement = 0x0C
        case UInt8(ascii: "r"): replacement = 0x0D
        case ASCII.quote: replacement = ASCII.quote
        case ASCII.backslash: replacement = ASCII.backslash
        case UInt8(ascii: "u"), UInt8(ascii: "U"):
            let digits = e == UInt8(ascii: "u") ? 4 : 8
            var value: UInt32 = 0
            var i = 0
            while i < digits, let d = hexValue(byte(pos + 2 + i)), pos + 2 + i < end {
                value = value << 4 | UInt32(d)
                i += 1
            }
            let letter = e == UInt8(ascii: "u") ? "u" : "U"
            guard i == digits else {
                report("invalid escape '\\\(letter)\(makeString(pos + 2, pos + 2 + i))': expected \(digits) hexadecimal digits, found \(describe(pos + 2 + i))", at: at)
                pos += 2 + i
                return
            }
            pos += 2 + digits
            guard let scalar = Unicode.Scalar(value) else {
                report("escape '\\\(letter)\(makeString(pos - digits, pos))' is not a Unicode scalar value", at: at)
                return
            }
            appendUTF8(scalar, to: &out)
            return
        default:
            if pos + 1 >= end || e == ASCII.lf || e == ASCII.cr {
                report("invalid escape: '\\' must be followed by an escape character, found \(describe(pos + 1))", at: at)
                pos += 1
            } else {
                report("invalid escape sequence '\\\(describe(pos + 1).trimmingQuotes)'", at: at)
                pos += 1
            }
            return
        }
        out.append(replacement)
        pos += 2
    }

    mutating func parseMultilineBasicString() throws(TOMLAbort) -> String {
        let openLoc = location(pos)
        pos += 3
        skipNewlineAfterOpeningDelimiter()
        var out: [UInt8] = []
        var run = pos
        while true {
            guard pos < end else {
                throw fail("unterminated multi-line string (opened at \(openLoc)): expected '\"\"\"', found end of file", at: pos)
            }
            let b = buf[pos]
            if b >= 0x20, b != ASCII.quote, b != ASCII.backslash, b != 0x7F {
                pos += 1
                continue
            }
            out.append(contentsOf: UnsafeBufferPointer(rebasing: buf[run..<pos]))
            switch b {
            case ASCII.quote:
                if let s = closeMultiline(ASCII.quote, &out) { return s }
            case ASCII.backslash:
                if let after = lineEndingBackslash(pos + 1) {
                    pos = after
                    skipMultilineWhitespace()
                } else {
                    parseEscape(into: &out)
                }
            default:
                multilineControl(b, &out)
            }
            run = pos
        }
    }

    mutating func parseLiteralString() throws(TOMLAbort) -> String {
        let open = pos
        pos += 1
        let start = pos
        var clean = true
        while true {
            guard pos < end else {
                throw fail("unterminated string (opened at \(location(open))): expected \"'\", found end of file", at: pos)
            }
            let b = buf[pos]
            if b == ASCII.apostrophe { break }
            if b == ASCII.lf || b == ASCII.cr {
                throw fail("unterminated string: expected \"'\" before the end of the line, found \(describe(pos))", at: pos)
            }
            if (b < 0x20 && b != ASCII.tab) || b == 0x7F {
                report("control character \(tomlUnicodeName(UInt32(b))) is not allowed in a literal string", at: pos)
                clean = false
            }
            pos += 1
        }
        let s = clean ? makeString(start, pos) : ""
        pos += 1
        return s
    }

    mutating func parseMultilineLiteralString() throws(TOMLAbort) -> String {
        let openLoc = location(pos)
        pos += 3
        skipNewlineAfterOpeningDelimiter()
        var out: [UInt8] = []
        var run = pos
        while true {
            guard pos < end else {
                throw fail("unterminated multi-line string (opened at \(openLoc)): expected \"'''\", found end of file", at: pos)
            }
            let b = buf[pos]
            if b >= 0x20, b != ASCII.apostrophe, b != 0x7F {
                pos += 1
                continue
            }
            out.append(contentsOf: UnsafeBufferPointer(rebasing: buf[run..<pos]))
            if b == ASCII.apostrophe {
                if let s = closeMultiline(ASCII.apostrophe, &out) { return s }
            } else {
                multilineControl(b, &out)
            }
            run = pos
        }
    }

    private mutating func skipNewlineAfterOpeningDelimiter() {
        if cur == ASCII.lf, !atEnd {
            newline()
        } else if cur == ASCII.cr, byte(pos + 1) == ASCII.lf {
            pos += 1
            newline()
        }
    }

    /// At a run of quotes: three close the string, and up to two more before them belong to it.
    private mutating func closeMultiline(_ q: UInt8, _ out: inout [UInt8]) -> String? {
        var n = 0
        while pos + n < end, buf[pos + n] == q { n += 1 }
        if n < 3 {
            out.append(contentsOf: repeatElement(q, count: n))
            pos += n
            return nil
        }
        let extra = min(n - 3, 2)
        out.append(contentsOf: repeatElement(q, count: extra))
        pos += 3 + extra
        return String(decoding: out, as: UTF8.self)
    }

    /// Newlines (normalised to LF), tabs and rejected control characters in multi-line strings.
    private mutating func multilineControl(_ b: UInt8, _ out: inout [UInt8]) {
        switch b {
        case ASCII.lf:
            out.append(b)
            newline()
        case ASCII.cr where byte(pos + 1) == ASCII.lf:
            out.append(ASCII.lf)
            pos += 1
            newline()
        case ASCII.cr:
            report("carriage return must be followed by a newline", at: pos)
            pos += 1
        case ASCII.tab:
            out.append(b)
            pos += 1
        default:
            report("control character \(tomlUnicodeName(UInt32(b))) must be escaped in a string", at: pos)
            pos += 1
        }
    }

    /// If a backslash followed by optional spaces ends the line, where the newline is; else nil.
    private func lineEndingBackslash(_ from: Int) -> Int? {
        var p = from
        while p < end, buf[p] == ASCII.space || buf[p] == ASCII.tab { p += 1 }
        if p < end, buf[p] == ASCII.lf { return p }
        if p + 1 < end, buf[p] == ASCII.cr, buf[p + 1] == ASCII.lf { return p }
        return nil
    }

    private mutating func skipMultilineWhitespace() {
        while pos < end {
            switch buf[pos] {
            case ASCII.space, ASCII.tab: pos += 1
            case ASCII.lf: newline()
            case ASCII.cr where byte(pos + 1) == ASCII.lf:
                pos += 1
                newline()
            default: return
            }
        }
    }

    // MARK: Numbers and date-times

    @inline(__always) func isDigit(_ i: Int) -> Bool {
        i < end && buf[i] >= ASCII.zero && buf[i] <= ASCII.nine
    }

    mutating func parseNumberOrDate() throws(TOMLAbort) -> TOMLValue {
        if isDigit(pos), isDigit(pos + 1) {
            if byte(pos + 2) == ASCII.colon { return try parseLocalTimeValue() }
            if isDigit(pos + 2), isDigit(pos + 3), byte(pos + 4) == ASCII.minus { return try parseDateValue() }
        }
        let start = pos
        while pos < end, isNumberByte(buf[pos]) { pos += 1 }
        return try number(start, pos)
    }

    private func isNumberByte(_ b: UInt8) -> Bool {
        tomlIsBareKeyByte(b) || b == ASCII.plus || b == ASCII.dot
    }

    private mutating func number(_ start: Int, _ stop: Int) throws(TOMLAbort) -> TOMLValue {
        // Only needed for messages and floats: no String is made for a well-formed integer.
        var token: String { makeString(start, stop) }
        var i = start
        var negative = false
        if buf[i] == ASCII.plus || buf[i] == ASCII.minus {
            negative = buf[i] == ASCII.minus
            i += 1
        }
        let rest = stop - i
        if rest == 3 {
            if buf[i] == UInt8(ascii: "i"), buf[i + 1] == UInt8(ascii: "n"), buf[i + 2] == UInt8(ascii: "f") {
                return .float(negative ? -.infinity : .infinity)
            }
            if buf[i] == UInt8(ascii: "n"), buf[i + 1] == UInt8(ascii: "a"), buf[i + 2] == UInt8(ascii: "n") {
                return .float(negative ? -.nan : .nan)
            }
        }
        guard rest > 0, isDigit(i) else {
            throw fail("invalid number '\(token)'", at: start)
        }
        if buf[i] == ASCII.zero, i + 1 < stop {
            let radixLetter = buf[i + 1]
            let radix: UInt64 = radixLetter == UInt8(ascii: "x") ? 16 : radixLetter == UInt8(ascii: "o") ? 8
                : radixLetter == UInt8(ascii: "b") ? 2 : 0
            if radix != 0 {
                if i != start {
                    throw fail("invalid number '\(token)': a sign is not allowed on \(radixName(radix)) integers", at: start)
                }
                return try radixInteger(start: start, digitsFrom: i + 2, stop: stop, radix: radix)
            }
        }
        // Decimal integer or float: int-part [ '.' digits ] [ e [sign] digits ].
        let intEnd = try digitRun(from: i, stop: stop, start: start)
        if buf[i] == ASCII.zero, intEnd - i > 1 {
            throw fail("invalid number '\(token)': leading zeros are not allowed", at: start)
        }
        var p = intEnd
        var isFloat = false
        if p < stop, buf[p] == ASCII.dot {
            isFloat = true
            p = try digitRun(from: p + 1, stop: stop, start: start)
        }
        if p < stop, buf[p] == UInt8(ascii: "e") || buf[p] == UInt8(ascii: "E") {
            isFloat = true
            p += 1
            if p < stop, buf[p] == ASCII.plus || buf[p] == ASCII.minus { p += 1 }
            p = try digitRun(from: p, stop: stop, start: start)
        }
        guard p == stop else {
            throw fail("invalid number '\(token)'", at: start)
        }
        if isFloat {
            var hasUnderscore = false
            for k in start..<stop where buf[k] == ASCII.underscore { hasUnderscore = true; break }
            let cleaned = hasUnderscore
                ? String(decoding: UnsafeBufferPointer(rebasing: buf[start..<stop]).filter { $0 != ASCII.underscore }, as: UTF8.self)
                : token
            guard let d = Double(cleaned) else { throw fail("invalid float '\(token)'", at: start) }
            return .float(d)
        }
        var magnitude: UInt64 = 0
        for k in i..<stop where buf[k] != ASCII.underscore {
            let (m, o1) = magnitude.multipliedReportingOverflow(by: 10)
            let (a, o2) = m.addingReportingOverflow(UInt64(buf[k] - ASCII.zero))
            if o1 || o2 {
                report("integer \(token) does not fit in 64 bits", at: start)
                return .integer(0)
            }
            magnitude = a
        }
        if negative {
            if magnitude > UInt64(Int64.max) + 1 {
                report("integer \(token) does not fit in 64 bits", at: start)
                return .integer(0)
            }
            return .integer(magnitude == UInt64(Int64.max) + 1 ? Int64.min : -Int64(magnitude))
        }
        if magnitude > UInt64(Int64.max) {
            report("integer \(token) does not fit in 64 bits", at: start)
            return .integer(0)
        }
        return .integer(Int64(magnitude))
    }

    /// Digits with single underscores between them; returns where the run ends.
    private mutating func digitRun(from: Int, stop: Int, start: Int) throws(TOMLAbort) -> Int {
        var token: String { makeString(start, stop) }
        guard isDigit(from), from < stop else {
            throw fail("invalid number '\(token)': expected a digit at \(describe(from))", at: start)
        }
        var p = from + 1
        while p < stop {
            let b = buf[p]
            if b >= ASCII.zero, b <= ASCII.nine {
                p += 1
            } else if b == ASCII.underscore {
                guard p + 1 < stop, isDigit(p + 1) else {
                    throw fail("invalid number '\(token)': an underscore must be between digits", at: start)
                }
                p += 2
            } else {
                break
            }
        }
        return p
    }

    private func radixName(_ radix: UInt64) -> String {
        radix == 16 ? "hexadecimal" : radix == 8 ? "octal" : "binary"
    }

    private mutating func radixInteger(
        start: Int, digitsFrom: Int, stop: Int, radix: UInt64
    ) throws(TOMLAbort) -> TOMLValue {
        var token: String { makeString(start, stop) }
        var value: UInt64 = 0
        var p = digitsFrom
        var expectDigit = true
        var overflow = false
        while p < stop {
            let b = buf[p]
            if b == ASCII.underscore {
                if expectDigit { break }
                expectDigit = true
                p += 1
                continue
            }
            guard let d = hexValue(b), UInt64(d) < radix else { break }
            let (m, o1) = value.multipliedReportingOverflow(by: radix)
            let (a, o2) = m.addingReportingOverflow(UInt64(d))
            if o1 || o2 { overflow = true }
            value = a
            expectDigit = false
            p += 1
        }
        if p != stop || expectDigit {
            throw fail("invalid \(radixName(radix)) integer '\(token)'", at: start)
        }
        if overflow || value > UInt64(Int64.max) {
            report("integer \(token) does not fit in 64 bits", at: start)
            return .integer(0)
        }
        return .integer(Int64(value))
    }

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

    private mutating func parseDateValue() throws(TOMLAbort) -> TOMLValue {
        let start = pos
        let what = "date"
        guard let year = fixedDigits(4) else { throw fail("invalid date", at: start) }
        try expect(ASCII.minus, in: what, start: start)
        guard let month = fixedDigits(2) else { throw fail("invalid date '\(makeString(start, pos))': expected a two-digit month, found \(describe(pos))", at: start) }
        try expect(ASCII.minus, in: what, start: start)
        guard let day = fixedDigits(2) else { throw fail("invalid date '\(makeString(start, pos))': expected a two-digit day, found \(describe(pos))", at: start) }
        if !(1...12).contains(month) {
            report("invalid date '\(makeString(start, pos))': month must be 01 to 12", at: start)
        } else if day < 1 || day > daysIn(month: month, year: year) {
            report("invalid date '\(makeString(start, pos))': day must be 01 to \(daysIn(month: month, year: year))", at: start)
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

    private mutating func parseLocalTimeValue() throws(TOMLAbort) -> TOMLValue {
        let start = pos
        let time = try parseTimeFields(start: start)
        return .dateTime(TOMLDateTime(date: nil, time: time ?? TOMLLocalTime(hour: 0, minute: 0, second: 0), offsetMinutes: nil))
    }

    /// `HH:MM:SS[.fraction]`; nanoseconds keep the first nine fraction digits. Returns nil after
    /// reporting an out-of-range field (the syntax was fine, so parsing continues).
    private mutating func parseTimeFields(start: Int) throws(TOMLAbort) -> TOMLLocalTime? {
        let what = "time"
        guard let hour = fixedDigits(2) else { throw fail("invalid date-time '\(makeString(start, pos))': expected a two-digit hour, found \(describe(pos))", at: start) }
        try expect(ASCII.colon, in: what, start: start)
        guard let minute = fixedDigits(2) else { throw fail("invalid time '\(makeString(start, pos))': expected two-digit minutes, found \(describe(pos))", at: start) }
        guard cur == ASCII.colon, !atEnd else {
            throw fail("invalid time '\(makeString(start, pos))': expected ':' and seconds, found \(describe(pos))", at: start)
        }
        pos += 1
        guard let second = fixedDigits(2) else { throw fail("invalid time '\(makeString(start, pos))': expected two-digit seconds, found \(describe(pos))", at: start) }
        var nanos = 0
        if cur == ASCII.dot, !atEnd {
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

private func daysIn(month: Int, year: Int) -> Int {
    switch month {
    case 2: return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
    case 4, 6, 9, 11: return 30
    default: return 31
    }
}

@inline(__always) private func hexValue(_ b: UInt8) -> UInt8? {
    switch b {
    case UInt8(ascii: "0")...UInt8(ascii: "9"): return b - UInt8(ascii: "0")
    case UInt8(ascii: "a")...UInt8(ascii: "f"): return b - UInt8(ascii: "a") + 10
    case UInt8(ascii: "A")...UInt8(ascii: "F"): return b - UInt8(ascii: "A") + 10
    default: return nil
    }
}

private extension String {
    /// `'x'` -> `x`, for quoting a described character inside another quoted fragment.
    var trimmingQuotes: String {
        if count >= 2, first == "'", last == "'" { return String(dropFirst().dropLast()) }
        return self
    }
}

private func appendUTF8(_ scalar: Unicode.Scalar, to out: inout [UInt8]) {
    let v = scalar.value
    switch v {
    case 0..<0x80:
        out.append(UInt8(v))
    case 0x80..<0x800:
        out.append(UInt8(0xC0 | (v >> 6)))
        out.append(UInt8(0x80 | (v & 0x3F)))
    case 0x800..<0x10000:
        out.append(UInt8(0xE0 | (v >> 12)))
        out.append(UInt8(0x80 | ((v >> 6) & 0x3F)))
        out.append(UInt8(0x80 | (v & 0x3F)))
    default:
        out.append(UInt8(0xF0 | (v >> 18)))
        out.append(UInt8(0x80 | ((v >> 12) & 0x3F)))
        out.append(UInt8(0x80 | ((v >> 6) & 0x3F)))
        out.append(UInt8(0x80 | (v & 0x3F)))
    }
}
