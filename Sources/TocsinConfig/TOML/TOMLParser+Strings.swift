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
        pos = basicStringStop(from: pos)
        if pos < end, buf[pos] == ASCII.quote {
            let s = makeValidString(start, pos)
            pos += 1
            return s
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
        let s = clean ? makeValidString(start, pos) : ""
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
        tomlLineEndingBackslash(buf, from: from, end: end)
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
}
