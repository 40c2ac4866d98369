/// Hot-path scanning helpers. They read the validated input buffer eight bytes at a time where
/// a token is usually long (string bodies), and build `String`s without a second validation
/// pass where the bytes are known to be whole UTF-8 characters. Every read is bounds-checked
/// once per word or per token against the buffer's end, never past it.
extension TOMLParser {
    /// A `String` of `buf[from..<to]`, a range that starts and ends at character boundaries of
    /// the (validated) input, as every range between two ASCII delimiters does.
    ///
    /// Why not `String(decoding:as:)`: that validates the bytes again and, for short strings,
    /// scans them again for ASCII-ness; through `unsafeUninitializedCapacity` a string of up to
    /// 15 ASCII bytes (most keys and short values) is made in place without validation, and a
    /// longer one is copied once and validated in place. The result is the same string.
    @inline(__always) func makeValidString(_ from: Int, _ to: Int) -> String {
        let n = to - from
        guard n > 0, let base = buf.baseAddress, from >= 0, to <= end else { return "" }
        let source = base + from
        return String(unsafeUninitializedCapacity: n) { out in
            out.baseAddress!.initialize(from: source, count: n)
            return n
        }
    }

    /// The first offset at or after `from` (and before `end`) holding a byte a basic string
    /// cannot contain literally or that ends it: `"`, `\`, a control character other than tab,
    /// or DEL; `end` if none. Tab stops the word-at-a-time scan but not the result.
    @inline(__always) func basicStringStop(from: Int) -> Int {
        tomlBasicStringStop(buf, from: from, end: end)
    }

    /// Like `basicStringStop`, but past escapes: the offset of the closing `"` of a basic
    /// string whose body starts at `from`, or nil if a control character, DEL or the end of the
    /// input comes first (the general path then reports it).
    func basicStringClose(from: Int) -> Int? {
        var p = from
        while true {
            p = basicStringStop(from: p)
            guard p < end else { return nil }
            let b = buf[p]
            if b == ASCII.quote { return p }
            if b != ASCII.backslash { return nil }
            p += 2
        }
    }

    /// Clinger's fast path for a float token already checked against TOML's grammar: with no
    /// exponent and a mantissa below 2^53 whose fraction has at most 22 digits, both the
    /// mantissa and the power of ten are exact doubles, so one correctly rounded division gives
    /// the correctly rounded value, the same as `strtod`'s. nil for everything else.
    func fastFloat(_ start: Int, _ stop: Int) -> Double? {
        var i = start
        var negative = false
        if buf[i] == ASCII.plus || buf[i] == ASCII.minus {
            negative = buf[i] == ASCII.minus
            i += 1
        }
        var mantissa: UInt64 = 0
        var digits = 0
        var fractionDigits = 0
        var inFraction = false
        while i < stop {
            let b = buf[i]
            if b >= ASCII.zero, b <= ASCII.nine {
                digits += 1
                if digits > 16 { return nil }
                mantissa = mantissa * 10 + UInt64(b - ASCII.zero)
                if inFraction { fractionDigits += 1 }
            } else if b == ASCII.dot {
                inFraction = true
            } else if b != ASCII.underscore {
                return nil
            }
            i += 1
        }
        guard mantissa < 1 << 53, fractionDigits <= 22 else { return nil }
        var scale = 1.0
        var k = 0
        while k < fractionDigits { scale *= 10; k += 1 }
        let magnitude = Double(mantissa) / scale
        return negative ? -magnitude : magnitude
    }
}

/// The end of the run of bare-key bytes (`A-Z a-z 0-9 _ -`) starting at `from`: eight bytes at
/// a time while a word is ASCII, then byte by byte.
@inline(__always) func tomlBareKeyEnd(_ buf: UnsafeBufferPointer<UInt8>, from: Int, end: Int) -> Int {
    var p = from
    if let base = buf.baseAddress {
        while p + 8 <= end {
            let w = UInt64(littleEndian: UnsafeRawPointer(base + p).loadUnaligned(as: UInt64.self))
            if w & 0x8080_8080_8080_8080 != 0 { break }
            let other = ~tomlBareKeyFlags(w) & 0x8080_8080_8080_8080
            if other == 0 {
                p += 8
                continue
            }
            return p + other.trailingZeroBitCount >> 3
        }
    }
    while p < end, tomlIsBareKeyByte(buf[p]) { p += 1 }
    return p
}

/// For eight ASCII bytes (little-endian): the high bit of each that is a bare-key byte. Each
/// range test adds a constant that sets a byte's high bit exactly when it is at least the range's
/// start (resp. past its end); with every byte below 0x80 no sum carries into the next byte, so
/// unlike the zero-byte trick every flag is exact, not only the first.
@inline(__always) func tomlBareKeyFlags(_ w: UInt64) -> UInt64 {
    let ones: UInt64 = 0x0101_0101_0101_0101
    @inline(__always) func inRange(_ x: UInt64, _ lo: UInt64, _ hi: UInt64) -> UInt64 {
        (x &+ ones &* (0x80 - lo)) & ~(x &+ ones &* (0x7F - hi))
    }
    let letters = inRange(w | ones &* 0x20, 0x61, 0x7A)
    let digits = inRange(w, 0x30, 0x39)
    let underscore = inRange(w, 0x5F, 0x5F)
    let minus = inRange(w, 0x2D, 0x2D)
    return (letters | digits | underscore | minus) & 0x8080_8080_8080_8080
}

/// `TOMLParser.lineEndingBackslash` for code that has only the buffer (`TOMLStringPositions`):
/// if a backslash followed by optional spaces and tabs ends the line, where the line break is.
func tomlLineEndingBackslash(_ buf: UnsafeBufferPointer<UInt8>, from: Int, end: Int) -> Int? {
    typealias ASCII = TOMLParser.ASCII
    var p = from
    while p < end, buf[p] == ASCII.space || buf[p] == ASCII.tab { p += 1 }
    if p < end, buf[p] == ASCII.lf { return p }
    if p + 1 < end, buf[p] == ASCII.cr, buf[p + 1] == ASCII.lf { return p }
    return nil
}

/// `TOMLParser.basicStringStop` for code (a string-building closure) that has only the buffer.
@inline(__always) func tomlBasicStringStop(_ buf: UnsafeBufferPointer<UInt8>, from: Int, end: Int) -> Int {
    var p = from
    if let base = buf.baseAddress {
        while p + 8 <= end {
            let flags = tomlBasicStringStopFlags(UnsafeRawPointer(base + p).loadUnaligned(as: UInt64.self))
            if flags == 0 {
                p += 8
                continue
            }
            // The first flagged byte is a true match (see the flags' comment); only a tab is a
            // match that does not stop the string.
            p += flags.trailingZeroBitCount >> 3
            if buf[p] != TOMLParser.ASCII.tab { return p }
            p += 1
        }
    }
    while p < end {
        let b = buf[p]
        if b == TOMLParser.ASCII.quote || b == TOMLParser.ASCII.backslash || (b < 0x20 && b != TOMLParser.ASCII.tab) || b == 0x7F { return p }
        p += 1
    }
    return p
}

/// For eight bytes loaded from memory: the high bit of each byte that is below 0x20, `"`, `\`
/// or DEL, in memory order from the lowest bit (the word-at-a-time form of the test in
/// `basicStringStop`). The classic has-less-than and has-zero-byte bit tricks never miss a
/// match and can misflag a byte only after an earlier true match, so the lowest flag is exact.
@inline(__always) func tomlBasicStringStopFlags(_ loaded: UInt64) -> UInt64 {
    let w = UInt64(littleEndian: loaded)
    let ones: UInt64 = 0x0101_0101_0101_0101
    let highs: UInt64 = 0x8080_8080_8080_8080
    let control = (w &- ones &* 0x20) & ~w & highs
    let q = w ^ (ones &* 0x22)
    let quote = (q &- ones) & ~q & highs
    let s = w ^ (ones &* 0x5C)
    let backslash = (s &- ones) & ~s & highs
    let d = w ^ (ones &* 0x7F)
    let del = (d &- ones) & ~d & highs
    return control | quote | backslash | del
}
