extension TOMLParser {
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
        if isFloat { return try float(start: start, stop: stop) }
        return decimalInteger(start: start, digitsFrom: i, stop: stop, negative: negative)
    }

    /// A float already checked against TOML's grammar; only Double's parsing is left, after
    /// taking out the underscores TOML allows and Double does not.
    private mutating func float(start: Int, stop: Int) throws(TOMLAbort) -> TOMLValue {
        if let d = fastFloat(start, stop) { return .float(d) }
        var token: String { makeString(start, stop) }
        var hasUnderscore = false
        for k in start..<stop where buf[k] == ASCII.underscore { hasUnderscore = true; break }
        let cleaned = hasUnderscore
            ? String(decoding: UnsafeBufferPointer(rebasing: buf[start..<stop]).filter { $0 != ASCII.underscore }, as: UTF8.self)
            : token
        guard let d = Double(cleaned) else { throw fail("invalid float '\(token)'", at: start) }
        return .float(d)
    }

    /// A decimal integer already checked against TOML's grammar, accumulated from the bytes
    /// without a String (the common case of a config value). Inlined: it is on the parser's
    /// hot path and has this one caller.
    @inline(__always)
    private mutating func decimalInteger(start: Int, digitsFrom i: Int, stop: Int, negative: Bool) -> TOMLValue {
        var token: String { makeString(start, stop) }
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

}
