import TocsinModel
/// Unwinds the current statement after its diagnostic has been recorded. Typed and payload-free so
/// throwing costs no allocation.
struct TOMLAbort: Error {}

/// Tables and values may not nest deeper than this: recursion in the parser, in the conversion to
/// `TOMLTable` and in deinitialisation is proportional to nesting, and must not exhaust the stack.
let tomlMaxDepth = 128

/// Like a compiler's error limit: past this, later messages are mostly noise from the first ones.
let tomlMaxDiagnostics = 100

extension TOMLParser {
    /// Byte values the grammar names.
    enum ASCII {
        static let tab = UInt8(ascii: "\t"), lf = UInt8(ascii: "\n"), cr = UInt8(ascii: "\r"),
            space = UInt8(ascii: " "), quote = UInt8(ascii: "\""), apostrophe = UInt8(ascii: "'"),
            hash = UInt8(ascii: "#"), equals = UInt8(ascii: "="), dot = UInt8(ascii: "."),
            comma = UInt8(ascii: ","), lbracket = UInt8(ascii: "["), rbracket = UInt8(ascii: "]"),
            lbrace = UInt8(ascii: "{"), rbrace = UInt8(ascii: "}"), backslash = UInt8(ascii: "\\"),
            plus = UInt8(ascii: "+"), minus = UInt8(ascii: "-"), underscore = UInt8(ascii: "_"),
            colon = UInt8(ascii: ":"), zero = UInt8(ascii: "0"), nine = UInt8(ascii: "9")
    }
}

/// A single-pass recursive-descent parser over UTF-8 bytes (validated up front, so slices can
/// become `String`s without repair). Positions are byte offsets; line/column are derived only
/// where a location is stored or reported.
struct TOMLParser {
    let buf: UnsafeBufferPointer<UInt8>
    let end: Int
    let file: String
    let version: TOMLVersion
    var pos = 0
    /// 1-based line of `pos`, and the byte offset where that line starts.
    var line = 1
    var lineStart = 0
    /// Column cache so computing several locations on one line costs one pass over it.
    private var colCacheLineStart = -1
    private var colCachePos = 0
    private var colCacheCol = 1

    var diagnostics: [Diagnostic] = []
    var arena = TOMLTableArena()
    var keyNames = TOMLKeyNames()
    let root: TOMLTableArena.ID
    /// The table receiving key/value pairs: the root, the last header's table, or a detached
    /// scratch table after a bad header (so its keys do not cascade into more errors).
    var current: TOMLTableArena.ID
    var section = 0
    var nextSection = 1
    /// Arrays and inline tables open at the point of an error, so recovery can skip to where
    /// they close instead of reading their continuation lines as statements.
    var openDelimiters = 0

    init(buffer: UnsafeBufferPointer<UInt8>, file: String, version: TOMLVersion = .default) {
        buf = buffer
        end = buffer.count
        self.file = file
        self.version = version
        root = arena.newTable(location: SourceLocation(line: 1, column: 1), depth: 0)
        current = root
    }

    // MARK: Bytes and positions

    @inline(__always) func byte(_ i: Int) -> UInt8 { i < end ? buf[i] : 0 }
    @inline(__always) var cur: UInt8 { pos < end ? buf[pos] : 0 }
    @inline(__always) var atEnd: Bool { pos >= end }

    /// Consumes the `\n` at `pos`, starting a new line.
    @inline(__always) mutating func newline() {
        pos += 1
        line += 1
        lineStart = pos
    }

    /// Called for every key and value, usually a few ASCII bytes past the previous call on the
    /// same line: that case is inlined, one masked word read, and the rest is out of line.
    @inline(__always) mutating func location(_ offset: Int) -> SourceLocation {
        var p = colCachePos, c = colCacheCol
        if colCacheLineStart != lineStart { p = lineStart; c = 1 }
        if p <= offset, offset - p <= 16, let base = buf.baseAddress {
            // Up to two words, each with its bytes before `offset` all ASCII: one column each.
            while p < offset, p + 8 <= end {
                let n = min(8, offset - p)
                let w = UInt64(littleEndian: UnsafeRawPointer(base + p).loadUnaligned(as: UInt64.self))
                let first: UInt64 = (1 << (UInt64(n) * 8)) &- 1
                if w & first & 0x8080_8080_8080_8080 != 0 { break }
                p += n
                c += n
            }
            if p == offset {
                colCacheLineStart = lineStart
                colCachePos = p
                colCacheCol = c
                return SourceLocation(line: line, column: c)
            }
        }
        return locationScanning(offset)
    }

    @inline(never) private mutating func locationScanning(_ offset: Int) -> SourceLocation {
        guard offset >= lineStart else { return slowLocation(offset) }
        if colCacheLineStart != lineStart || colCachePos > offset {
            colCacheLineStart = lineStart
            colCachePos = lineStart
            colCacheCol = 1
        }
        var p = colCachePos, c = colCacheCol
        let stop = min(offset, end)
        // A word at a time while one fits in the buffer and its first `n` bytes (those before
        // `stop`) are ASCII, each a column: the usual span, from one token to the next, is a
        // few bytes of ASCII.
        if let base = buf.baseAddress {
            while p < stop, p + 8 <= end {
                let w = UInt64(littleEndian: UnsafeRawPointer(base + p).loadUnaligned(as: UInt64.self))
                let n = min(8, stop - p)
                var high = w & 0x8080_8080_8080_8080
                if n < 8 { high &= (1 << (UInt64(n) * 8)) - 1 }
                if high != 0 { break }
                c += n
                p += n
            }
        }
        while p < stop {
            if buf[p] & 0xC0 != 0x80 { c += 1 }
            p += 1
        }
        if offset > end { c += offset - end }
        colCachePos = p
        colCacheCol = c
        return SourceLocation(line: line, column: c)
    }

    /// For offsets on earlier lines (only error paths need these).
    func slowLocation(_ offset: Int) -> SourceLocation {
        var l = 1, start = 0, i = 0
        let stop = min(offset, end)
        while i < stop {
            if buf[i] == ASCII.lf { l += 1; start = i + 1 }
            i += 1
        }
        if l == 1, end >= 3, buf[0] == 0xEF, buf[1] == 0xBB, buf[2] == 0xBF { start = min(3, stop) }
        var c = 1
        var p = start
        while p < stop {
            if buf[p] & 0xC0 != 0x80 { c += 1 }
            p += 1
        }
        return SourceLocation(line: l, column: c)
    }

    mutating func report(_ message: String, at offset: Int) {
        report(message, at: location(offset))
    }

    mutating func report(_ message: String, at loc: SourceLocation) {
        diagnostics.append(Diagnostic(file: file, location: loc, message: message))
    }

    mutating func fail(_ message: String, at offset: Int) -> TOMLAbort {
        report(message, at: offset)
        return TOMLAbort()
    }

    /// What a diagnostic says was found at `offset`.
    func describe(_ offset: Int) -> String {
        guard offset < end else { return "end of file" }
        let b = buf[offset]
        switch b {
        case ASCII.lf: return "newline"
        case ASCII.cr: return byte(offset + 1) == ASCII.lf ? "newline" : "carriage return"
        case ASCII.tab: return "tab"
        case 0..<0x20, 0x7F: return "control character \(tomlUnicodeName(UInt32(b)))"
        case 0..<0x80: return "'\(Character(Unicode.Scalar(b)))'"
        default:
            let len = b >= 0xF0 ? 4 : b >= 0xE0 ? 3 : 2
            let slice = UnsafeBufferPointer(rebasing: buf[offset..<min(end, offset + len)])
            let text = String(decoding: slice, as: UTF8.self)
            // The code point too: the character may be invisible (a BOM, a no-break space) or a
            // look-alike of an ASCII one (an Arabic-Indic zero).
            let code = text.unicodeScalars.first.map { " (\(tomlUnicodeName($0.value)))" } ?? ""
            return "'\(text)'\(code)"
        }
    }

    // MARK: Document

    mutating func parseDocument() -> TOMLTableArena.ID {
        if end >= 3, buf[0] == 0xEF, buf[1] == 0xBB, buf[2] == 0xBF {
            pos = 3
            lineStart = 3
        }
        while true {
            skipSpaces()
            if atEnd { break }
            openDelimiters = 0
            do throws(TOMLAbort) {
                switch buf[pos] {
                case ASCII.lf:
                    newline()
                    continue
                case ASCII.cr, ASCII.hash:
                    try endOfLine(after: "")
                    continue
                case ASCII.lbracket:
                    try parseHeader()
                    try endOfLine(after: "after table header")
                default:
                    // The pair is applied only once its line is complete, so a line with a syntax
                    // error defines nothing (and a corrected repeat of it is not a duplicate).
                    let (keys, value) = try parseKeyValue(depth: arena.tables[current].depth)
                    try endOfLine(after: "after value")
                    insert(keys, value, into: current, section: section)
                }
            } catch {
                recover()
            }
            if diagnostics.count >= tomlMaxDiagnostics {
                report("too many errors (\(diagnostics.count)); stopping", at: pos)
                break
            }
        }
        return root
    }

    @inline(__always) mutating func skipSpaces() {
        while pos < end, buf[pos] == ASCII.space || buf[pos] == ASCII.tab { pos += 1 }
    }

    /// Spaces, an optional comment, then a newline (consumed) or end of file.
    /// `context` completes "expected newline ..." when something else follows.
    mutating func endOfLine(after context: String) throws(TOMLAbort) {
        skipSpaces()
        if pos < end, buf[pos] == ASCII.hash { try skipComment() }
        guard pos < end else { return }
        switch buf[pos] {
        case ASCII.lf:
            newline()
        case ASCII.cr where byte(pos + 1) == ASCII.lf:
            pos += 1
            newline()
        case ASCII.cr:
            throw fail("carriage return must be followed by a newline", at: pos)
        default:
            let what = context.isEmpty ? "expected newline" : "expected newline \(context)"
            throw fail("\(what), found \(describe(pos))", at: pos)
        }
    }

    /// Consumes `#...` up to (not including) the line end; rejects control characters.
    mutating func skipComment() throws(TOMLAbort) {
        pos += 1
        while pos < end {
            let b = buf[pos]
            if b == ASCII.lf { return }
            if b == ASCII.cr {
                if byte(pos + 1) == ASCII.lf { return }
                throw fail("carriage return in comment must be followed by a newline", at: pos)
            }
            if (b < 0x20 && b != ASCII.tab) || b == 0x7F {
                throw fail("control character \(tomlUnicodeName(UInt32(b))) is not allowed in a comment", at: pos)
            }
            pos += 1
        }
    }

    /// After a syntax error: drop the rest of the line, then any following lines that cannot start
    /// a statement (continuation lines of a broken array or string), so one mistake is one message.
    mutating func recover() {
        // Stopped at a header: that line is the next statement, not part of the broken one.
        if openDelimiters > 0, skipToClosingDelimiters(openDelimiters) { return }
        skipRestOfLine()
        while pos < end {
            var p = pos
            while p < end, buf[p] == ASCII.space || buf[p] == ASCII.tab { p += 1 }
            if looksLikeStatement(from: p) { return }
            skipRestOfLine()
        }
    }

    /// Skips past the `]`/`}` closing `depth` open delimiters (strings and comments skipped
    /// roughly), or up to a line that looks like a table header, whichever comes first; true
    /// in the second case.
    private mutating func skipToClosingDelimiters(_ depth: Int) -> Bool {
        var depth = depth
        while pos < end, depth > 0 {
            switch buf[pos] {
            case ASCII.lf:
                newline()
                var p = pos
                while p < end, buf[p] == ASCII.space || buf[p] == ASCII.tab { p += 1 }
                if p < end, buf[p] == ASCII.lbracket, looksLikeStatement(from: p) { return true }
                continue
            case ASCII.quote, ASCII.apostrophe:
                let q = buf[pos]
                pos += 1
                while pos < end, buf[pos] != q, buf[pos] != ASCII.lf {
                    if q == ASCII.quote, buf[pos] == ASCII.backslash, pos + 1 < end, buf[pos + 1] != ASCII.lf { pos += 1 }
                    pos += 1
                }
                if pos < end, buf[pos] == q { pos += 1 }
                continue
            case ASCII.hash:
                while pos < end, buf[pos] != ASCII.lf { pos += 1 }
                continue
            case ASCII.lbracket, ASCII.lbrace: depth += 1
            case ASCII.rbracket, ASCII.rbrace: depth -= 1
            default: break
            }
            pos += 1
        }
        return false
    }

    private mutating func skipRestOfLine() {
        while pos < end, buf[pos] != ASCII.lf { pos += 1 }
        if pos < end { newline() }
    }

    private func looksLikeStatement(from start: Int) -> Bool {
        guard start < end else { return true }
        let first = buf[start]
        if first == ASCII.lf || first == ASCII.cr || first == ASCII.hash { return true }
        var p = start
        var lastSignificant: UInt8 = 0
        var sawEquals = false
        var sawComma = false
        while p < end, buf[p] != ASCII.lf, buf[p] != ASCII.hash {
            let b = buf[p]
            if b == ASCII.equals { sawEquals = true; break }
            if b == ASCII.comma { sawComma = true }
            if b != ASCII.space, b != ASCII.tab, b != ASCII.cr { lastSignificant = b }
            p += 1
        }
        if first == ASCII.lbracket { return !sawEquals && !sawComma && lastSignificant == ASCII.rbracket }
        return sawEquals && (tomlIsBareKeyByte(first) || first == ASCII.quote || first == ASCII.apostrophe)
    }

    // MARK: Helpers

    @inline(__always) func makeString(_ from: Int, _ to: Int) -> String {
        String(decoding: UnsafeBufferPointer(rebasing: buf[from..<to]), as: UTF8.self)
    }
}

/// `A-Z a-z 0-9 _ -`, as one bit per ASCII byte in two words: a shift and a mask instead of a
/// chain of range comparisons, in the loop every bare key and number runs through.
@inline(__always) func tomlIsBareKeyByte(_ b: UInt8) -> Bool {
    // Bytes 0-63: '-' (0x2D) and '0'-'9' (0x30-0x39). Bytes 64-127: 'A'-'Z' (0x41-0x5A),
    // '_' (0x5F), 'a'-'z' (0x61-0x7A).
    let low: UInt64 = 0x03FF_2000_0000_0000
    let high: UInt64 = 0x07FF_FFFE_87FF_FFFE
    guard b < 0x80 else { return false }
    return ((b < 0x40 ? low : high) >> UInt64(b & 0x3F)) & 1 != 0
}

func tomlUnicodeName(_ v: UInt32) -> String {
    let hex = String(v, radix: 16, uppercase: true)
    return "U+" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex
}
