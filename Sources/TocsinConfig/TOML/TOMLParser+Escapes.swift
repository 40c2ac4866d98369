extension TOMLParser {
    /// The common case of a well-formed single-line string with escapes, decoded straight into
    /// the `String`'s storage (escapes only shrink text, so the raw length bounds the result).
    /// Returns nil, with `pos` unchanged, on anything unusual: the general path then reports it.
    mutating func decodeEscapes(from start: Int) -> String? {
        guard let close = basicStringClose(from: pos) else { return nil }
        var ok = true
        let buf = self.buf
        let v11 = version == .v1_1
        let s = String(unsafeUninitializedCapacity: close - start) { out in
            var w = 0, r = start
            let src = UnsafeRawPointer(buf.baseAddress!), dst = UnsafeMutableRawPointer(out.baseAddress!)
            while r < close {
                // Eight bytes at a time while a word holds no backslash (the closing quote is
                // past `close`). `w <= r - start`, so a word stored at `w` fits the capacity.
                // A word with a stop is stored whole too, but only the bytes before its first
                // flagged byte (a true match: a backslash or a tab) count as written.
                while r + 8 <= close {
                    let word = src.loadUnaligned(fromByteOffset: r, as: UInt64.self)
                    dst.storeBytes(of: word, toByteOffset: w, as: UInt64.self)
                    let flags = tomlBasicStringStopFlags(word)
                    if flags == 0 {
                        w += 8
                        r += 8
                        continue
                    }
                    let k = flags.trailingZeroBitCount >> 3
                    w += k
                    r += k
                    break
                }
                guard r < close else { break }
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
                case UInt8(ascii: "e") where v11: simple = 0x1B
                case UInt8(ascii: "x") where v11:
                    guard r + 4 <= close, let hi = hexValue(buf[r + 2]), let lo = hexValue(buf[r + 3]) else {
                        ok = false
                        return 0
                    }
                    let v = hi << 4 | lo
                    if v < 0x80 {
                        out[w] = v
                        w += 1
                    } else {
                        out[w] = 0xC0 | v >> 6
                        out[w + 1] = 0x80 | v & 0x3F
                        w += 2
                    }
                    r += 4
                    continue
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
        case UInt8(ascii: "e"):
            require(.escapeE, at: at)
            replacement = 0x1B
        case UInt8(ascii: "x"), UInt8(ascii: "u"), UInt8(ascii: "U"):
            let digits = e == UInt8(ascii: "x") ? 2 : e == UInt8(ascii: "u") ? 4 : 8
            var value: UInt32 = 0
            var i = 0
            while i < digits, let d = hexValue(byte(pos + 2 + i)), pos + 2 + i < end {
                value = value << 4 | UInt32(d)
                i += 1
            }
            let letter = Character(Unicode.Scalar(e))
            guard i == digits else {
                report("invalid escape '\\\(letter)\(makeString(pos + 2, pos + 2 + i))': expected \(digits) hexadecimal digits, found \(describe(pos + 2 + i))", at: at)
                pos += 2 + i
                return
            }
            if digits == 2 { require(.escapeX, at: at) }
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
}

@inline(__always) func hexValue(_ b: UInt8) -> UInt8? {
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
