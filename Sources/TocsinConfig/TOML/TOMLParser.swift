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
    let root: TOMLTableArena.ID
    /// The table receiving key/value pairs: the root, the last header's table, or a detached
    /// scratch table after a bad header (so its keys do not cascade into more errors).
    var current: TOMLTableArena.ID
    var section = 0
    var nextSection = 1
    /// Arrays and inline tables open at the point of an error, so recovery can skip to where
    /// they close instead of reading their continuation lines as statements.
    var openDelimiters = 0

    init(buffer: UnsafeBufferPointer<UInt8>, file: String) {
        buf = buffer
        end = buffer.count
        self.file = file
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

    mutating func location(_ offset: Int) -> SourceLocation {
        guard offset >= lineStart else { return slowLocation(offset) }
        if colCacheLineStart != lineStart || colCachePos > offset {
            colCacheLineStart = lineStart
            colCachePos = lineStart
            colCacheCol = 1
        }
        var p = colCachePos, c = colCacheCol
        let stop = min(offset, end)
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
        if openDelimiters > 0 { skipToClosingDelimiters(openDelimiters) }
        skipRestOfLine()
        while pos < end {
            var p = pos
            while p < end, buf[p] == ASCII.space || buf[p] == ASCII.tab { p += 1 }
            if looksLikeStatement(from: p) { return }
            skipRestOfLine()
        }
    }

    /// Skips past the `]`/`}` closing `depth` open delimiters (strings and comments skipped
    /// roughly), or up to a line that looks like a table header, whichever comes first.
    private mutating func skipToClosingDelimiters(_ depth: Int) {
        var depth = depth
        while pos < end, depth > 0 {
            switch buf[pos] {
            case ASCII.lf:
                newline()
                var p = pos
                while p < end, buf[p] == ASCII.space || buf[p] == ASCII.tab { p += 1 }
                if p < end, buf[p] == ASCII.lbracket, looksLikeStatement(from: p) { return }
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

    // MARK: Keys

    struct KeyPart {
        var name: String
        var offset: Int
        var location: SourceLocation
    }

    /// A dotted key without an allocation for the common single-part case.
    struct KeyPath {
        var first: KeyPart
        var rest: [KeyPart] = []
        var count: Int { 1 + rest.count }
        subscript(i: Int) -> KeyPart { i == 0 ? first : rest[i - 1] }
        var last: KeyPart { rest.last ?? first }
        /// The key as a user would write it, for messages.
        func display(upTo n: Int? = nil) -> String {
            let limit = n ?? count
            var s = displayKey(first.name)
            var i = 1
            while i < limit { s += "." + displayKey(rest[i - 1].name); i += 1 }
            return s
        }
    }

    mutating func parseKeyPath(depthBase: Int) throws(TOMLAbort) -> KeyPath {
        var path = KeyPath(first: try parseSimpleKey())
        while true {
            let save = pos
            skipSpaces()
            guard pos < end, buf[pos] == ASCII.dot else { pos = save; break }
            pos += 1
            skipSpaces()
            path.rest.append(try parseSimpleKey())
            if depthBase + path.count > tomlMaxDepth {
                throw fail("key nests tables deeper than \(tomlMaxDepth) levels", at: path.last.offset)
            }
        }
        return path
    }

    mutating func parseSimpleKey() throws(TOMLAbort) -> KeyPart {
        let start = pos
        let loc = location(start)
        let b = cur
        if b == ASCII.quote {
            if byte(pos + 1) == ASCII.quote, byte(pos + 2) == ASCII.quote {
                throw fail("a key cannot be a multi-line string", at: pos)
            }
            return KeyPart(name: try parseBasicString(), offset: start, location: loc)
        }
        if b == ASCII.apostrophe {
            if byte(pos + 1) == ASCII.apostrophe, byte(pos + 2) == ASCII.apostrophe {
                throw fail("a key cannot be a multi-line string", at: pos)
            }
            return KeyPart(name: try parseLiteralString(), offset: start, location: loc)
        }
        while pos < end, tomlIsBareKeyByte(buf[pos]) { pos += 1 }
        if pos == start {
            throw fail("expected a key, found \(describe(pos))", at: pos)
        }
        return KeyPart(name: makeString(start, pos), offset: start, location: loc)
    }

    // MARK: Statements

    mutating func parseKeyValue(depth: Int) throws(TOMLAbort) -> (KeyPath, TOMLNode) {
        let keys = try parseKeyPath(depthBase: depth)
        skipSpaces()
        guard cur == ASCII.equals, !atEnd else {
            throw fail("expected '=' after key '\(keys.display())', found \(describe(pos))", at: pos)
        }
        pos += 1
        skipSpaces()
        let value = try parseValue(depth: depth + keys.count)
        return (keys, value)
    }

    /// Applies a key/value pair under TOML's rules: dotted keys may create tables and re-enter
    /// tables they created in the same section, but never tables defined by a header, arrays of
    /// tables, inline tables or other values; the final key must be new.
    mutating func insert(_ keys: KeyPath, _ value: TOMLNode, into start: TOMLTableArena.ID, section: Int) {
        if keys.rest.isEmpty {
            if let idx = arena.find(keys.first.name, in: start) {
                report("duplicate key '\(keys.display())' (first defined at \(arena.tables[start].entries[idx].keyLocation))", at: keys.first.location)
            } else {
                arena.append(keys.first.name, keyLocation: keys.first.location, .value(value), to: start)
            }
            return
        }
        var table = start
        var i = 0
        while i < keys.count - 1 {
            let part = keys[i]
            if let idx = arena.find(part.name, in: table) {
                let keyLocation = arena.tables[table].entries[idx].keyLocation
                switch arena.kind(at: idx, in: table) {
                case .table(let child):
                    if arena.tables[child].definedByHeader {
                        report("cannot add to table '\(keys.display(upTo: i + 1))' with a dotted key: it was defined by a header at \(arena.tables[child].location)", at: part.location)
                        return
                    }
                    let dotted = arena.tables[child].dottedSection
                    if dotted != -1, dotted != section {
                        report("cannot add to table '\(keys.display(upTo: i + 1))' with a dotted key outside the section that defined it at \(keyLocation)", at: part.location)
                        return
                    }
                    arena.tables[child].dottedSection = section
                    table = child
                case .tables(let array):
                    report("cannot add to array of tables '\(keys.display(upTo: i + 1))' (defined at \(arena.arrays[array].location)) with a dotted key", at: part.location)
                    return
                case .value(let node):
                    report(notATable(keys.display(upTo: i + 1), node, keyLocation: keyLocation), at: part.location)
                    return
                }
            } else {
                let child = arena.newTable(location: part.location, depth: arena.tables[table].depth + 1)
                arena.tables[child].dottedSection = section
                arena.append(part.name, keyLocation: part.location, .table(child), to: table)
                table = child
            }
            i += 1
        }
        let last = keys.last
        if let idx = arena.find(last.name, in: table) {
            report("duplicate key '\(keys.display())' (first defined at \(arena.tables[table].entries[idx].keyLocation))", at: last.location)
            return
        }
        arena.append(last.name, keyLocation: last.location, .value(value), to: table)
    }

    func notATable(_ key: String, _ node: TOMLNode, keyLocation: SourceLocation) -> String {
        if case .table = node.value {
            return "inline table '\(key)' (defined at \(keyLocation)) cannot be extended"
        }
        return "key '\(key)' is already \(withArticle(node.value.typeName)) (defined at \(keyLocation)), not a table"
    }

    mutating func parseHeader() throws(TOMLAbort) {
        let start = pos
        let headerLoc = location(start)
        let isArray = byte(pos + 1) == ASCII.lbracket
        pos += isArray ? 2 : 1
        skipSpaces()
        let keys = try parseKeyPath(depthBase: 0)
        skipSpaces()
        if isArray {
            guard cur == ASCII.rbracket, byte(pos + 1) == ASCII.rbracket, pos + 1 < end else {
                let at = cur == ASCII.rbracket ? pos + 1 : pos
                throw fail("expected ']]' to close array of tables header, found \(describe(at))", at: at)
            }
            pos += 2
        } else {
            guard cur == ASCII.rbracket, !atEnd else {
                throw fail("expected ']' to close table header, found \(describe(pos))", at: pos)
            }
            pos += 1
        }
        section = nextSection
        nextSection += 1
        // Until the header is known to be valid, keys go to a scratch table that is discarded.
        current = arena.newTable(location: headerLoc, depth: min(keys.count, tomlMaxDepth))

        var table = root
        var i = 0
        while i < keys.count - 1 {
            let part = keys[i]
            if let idx = arena.find(part.name, in: table) {
                switch arena.kind(at: idx, in: table) {
                case .table(let child): table = child
                case .tables(let array): table = arena.arrays[array].tables[arena.arrays[array].tables.count - 1]
                case .value(let node):
                    let keyLocation = arena.tables[table].entries[idx].keyLocation
                    report(notATable(keys.display(upTo: i + 1), node, keyLocation: keyLocation), at: part.location)
                    return
                }
            } else {
                let child = arena.newTable(location: headerLoc, depth: arena.tables[table].depth + 1)
                arena.append(part.name, keyLocation: part.location, .table(child), to: table)
                table = child
            }
            i += 1
        }
        let last = keys.last
        var name: String { keys.display() }
        if let idx = arena.find(last.name, in: table) {
            let keyLocation = arena.tables[table].entries[idx].keyLocation
            switch arena.kind(at: idx, in: table) {
            case .table(let child):
                if isArray {
                    report("cannot define array of tables [[\(name)]]: '\(name)' is already a table (defined at \(arena.tables[child].location))", at: headerLoc)
                } else if arena.tables[child].definedByHeader {
                    report("duplicate table [\(name)] (first defined at \(arena.tables[child].location))", at: headerLoc)
                } else if arena.tables[child].dottedSection != -1 {
                    report("cannot define table [\(name)]: it was already defined by dotted keys at \(keyLocation)", at: headerLoc)
                } else {
                    arena.tables[child].definedByHeader = true
                    arena.tables[child].location = headerLoc
                    arena.tables[table].entries[idx].keyLocation = last.location
                    current = child
                }
            case .tables(let array):
                if isArray {
                    let child = arena.newTable(location: headerLoc, depth: arena.tables[table].depth + 1)
                    arena.tables[child].definedByHeader = true
                    arena.appendElement(child, to: array)
                    current = child
                } else {
                    report("cannot define table [\(name)]: '\(name)' is an array of tables (defined at \(arena.arrays[array].location))", at: headerLoc)
                }
            case .value(let node):
                if case .table = node.value {
                    report("inline table '\(name)' (defined at \(keyLocation)) cannot be extended", at: headerLoc)
                } else if isArray, case .array = node.value {
                    report("cannot append to static array '\(name)' (defined at \(keyLocation)) with [[\(name)]]", at: headerLoc)
                } else {
                    report("key '\(name)' is already \(withArticle(node.value.typeName)) (defined at \(keyLocation)), not a table", at: headerLoc)
                }
            }
            return
        }
        let child = arena.newTable(location: headerLoc, depth: arena.tables[table].depth + 1)
        arena.tables[child].definedByHeader = true
        if isArray {
            arena.arrays.append(TOMLTableArena.ArrayOfTables(tables: [child], location: headerLoc))
            arena.append(last.name, keyLocation: last.location, .tables(arena.arrays.count - 1), to: table)
        } else {
            arena.append(last.name, keyLocation: last.location, .table(child), to: table)
        }
        current = child
    }

    // MARK: Compound values

    mutating func parseValue(depth: Int) throws(TOMLAbort) -> TOMLNode {
        let start = pos
        let loc = location(start)
        guard pos < end else { throw fail("expected a value, found end of file", at: pos) }
        let b = buf[pos]
        switch b {
        case ASCII.quote:
            if byte(pos + 1) == ASCII.quote, byte(pos + 2) == ASCII.quote {
                return TOMLNode(.string(try parseMultilineBasicString()), at: loc)
            }
            return TOMLNode(.string(try parseBasicString()), at: loc)
        case ASCII.apostrophe:
            if byte(pos + 1) == ASCII.apostrophe, byte(pos + 2) == ASCII.apostrophe {
                return TOMLNode(.string(try parseMultilineLiteralString()), at: loc)
            }
            return TOMLNode(.string(try parseLiteralString()), at: loc)
        case UInt8(ascii: "t"):
            if matches("true") { pos += 4; return TOMLNode(.boolean(true), at: loc) }
        case UInt8(ascii: "f"):
            if matches("false") { pos += 5; return TOMLNode(.boolean(false), at: loc) }
        case ASCII.lbracket:
            return TOMLNode(.array(try parseArray(depth: depth + 1)), at: loc)
        case ASCII.lbrace:
            return TOMLNode(.table(try parseInlineTable(depth: depth + 1, location: loc)), at: loc)
        case ASCII.zero...ASCII.nine, ASCII.plus, ASCII.minus, UInt8(ascii: "i"), UInt8(ascii: "n"):
            return TOMLNode(try parseNumberOrDate(), at: loc)
        default:
            break
        }
        if tomlIsBareKeyByte(b) {
            var p = pos
            while p < end, tomlIsBareKeyByte(buf[p]) || buf[p] == ASCII.dot { p += 1 }
            let word = makeString(pos, p)
            throw fail("expected a value, found '\(word)' (strings must be quoted)", at: pos)
        }
        throw fail("expected a value, found \(describe(pos))", at: pos)
    }

    func matches(_ word: StaticString) -> Bool {
        let n = word.utf8CodeUnitCount
        guard pos + n <= end else { return false }
        let w = word.utf8Start
        for i in 0..<n where buf[pos + i] != w[i] { return false }
        return true
    }

    mutating func checkDepth(_ depth: Int) throws(TOMLAbort) {
        if depth > tomlMaxDepth {
            throw fail("values nest deeper than \(tomlMaxDepth) levels", at: pos)
        }
    }

    /// Spaces, newlines and comments, as allowed between array elements.
    mutating func skipArraySpace() throws(TOMLAbort) {
        while pos < end {
            switch buf[pos] {
            case ASCII.space, ASCII.tab: pos += 1
            case ASCII.lf: newline()
            case ASCII.cr:
                guard byte(pos + 1) == ASCII.lf else {
                    throw fail("carriage return must be followed by a newline", at: pos)
                }
                pos += 1
                newline()
            case ASCII.hash: try skipComment()
            default: return
            }
        }
    }

    mutating func parseArray(depth: Int) throws(TOMLAbort) -> [TOMLNode] {
        try checkDepth(depth)
        let open = pos
        pos += 1
        openDelimiters += 1
        var elements: [TOMLNode] = []
        elements.reserveCapacity(4)
        while true {
            try skipArraySpace()
            if cur == ASCII.rbracket, !atEnd { pos += 1; openDelimiters -= 1; return elements }
            if atEnd { throw fail("unterminated array (opened at \(location(open))): expected ']', found end of file", at: pos) }
            if cur == ASCII.comma {
                throw fail("expected a value or ']' in array, found ','", at: pos)
            }
            elements.append(try parseValue(depth: depth))
            try skipArraySpace()
            if cur == ASCII.comma, !atEnd {
                pos += 1
            } else if cur == ASCII.rbracket, !atEnd {
                pos += 1
                openDelimiters -= 1
                return elements
            } else {
                throw fail("expected ',' or ']' after array element, found \(describe(pos))", at: pos)
            }
        }
    }

    /// Inline tables of plain keys (the usual case) are built directly as `TOMLTable`; the first
    /// dotted key switches to an arena table, which applies the dotted-key rules.
    mutating func parseInlineTable(depth: Int, location loc: SourceLocation) throws(TOMLAbort) -> TOMLTable {
        try checkDepth(depth)
        pos += 1
        openDelimiters += 1
        var direct: [TOMLTable.Entry] = []
        var builder: TOMLTableArena.ID?
        let sectionID = nextSection
        nextSection += 1
        skipSpaces()
        if cur == ASCII.rbrace, !atEnd { pos += 1; openDelimiters -= 1; return TOMLTable(location: loc) }
        while true {
            if cur == ASCII.lf || cur == ASCII.cr, !atEnd {
                throw fail("expected a key in inline table, found newline (inline tables must be on one line)", at: pos)
            }
            let keys = try parseKeyPath(depthBase: depth)
            skipSpaces()
            guard cur == ASCII.equals, !atEnd else {
                throw fail("expected '=' after key '\(keys.display())', found \(describe(pos))", at: pos)
            }
            pos += 1
            skipSpaces()
            let value = try parseValue(depth: depth + keys.count)
            if builder == nil, keys.count == 1, direct.count < 8 {
                let name = keys.first.name
                if let previous = direct.first(where: { $0.key == name }) {
                    report("duplicate key '\(keys.display())' (first defined at \(previous.keyLocation))", at: keys.first.location)
                } else {
                    if direct.isEmpty { direct.reserveCapacity(4) }
                    direct.append(TOMLTable.Entry(key: name, keyLocation: keys.first.location, node: value))
                }
            } else {
                let table: TOMLTableArena.ID
                if let builder {
                    table = builder
                } else {
                    table = arena.newTable(location: loc, depth: depth)
                    for e in direct { arena.append(e.key, keyLocation: e.keyLocation, .value(e.node), to: table) }
                    direct = []
                    builder = table
                }
                insert(keys, value, into: table, section: sectionID)
            }
            skipSpaces()
            if cur == ASCII.comma, !atEnd {
                pos += 1
                skipSpaces()
                if cur == ASCII.rbrace, !atEnd {
                    throw fail("trailing comma is not allowed in an inline table", at: pos)
                }
            } else if cur == ASCII.rbrace, !atEnd {
                pos += 1
                openDelimiters -= 1
                if let builder { return arena.freeze(builder) }
                return TOMLTable(location: loc, uniqueEntries: direct)
            } else if cur == ASCII.lf || cur == ASCII.cr, !atEnd {
                throw fail("expected ',' or '}' in inline table, found newline (inline tables must be on one line)", at: pos)
            } else {
                throw fail("expected ',' or '}' in inline table, found \(describe(pos))", at: pos)
            }
        }
    }

    // MARK: Helpers

    @inline(__always) func makeString(_ from: Int, _ to: Int) -> String {
        String(decoding: UnsafeBufferPointer(rebasing: buf[from..<to]), as: UTF8.self)
    }
}

@inline(__always) func tomlIsBareKeyByte(_ b: UInt8) -> Bool {
    switch b {
    case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
        UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "_"), UInt8(ascii: "-"):
        return true
    default:
        return false
    }
}

func tomlUnicodeName(_ v: UInt32) -> String {
    let hex = String(v, radix: 16, uppercase: true)
    return "U+" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex
}

/// A key as it would be written in TOML: bare when possible, otherwise quoted.
private func displayKey(_ key: String) -> String {
    if !key.isEmpty, key.utf8.allSatisfy(tomlIsBareKeyByte) { return key }
    var s = "\""
    for scalar in key.unicodeScalars {
        switch scalar {
        case "\"": s += "\\\""
        case "\\": s += "\\\\"
        case "\n": s += "\\n"
        case "\t": s += "\\t"
        case _ where scalar.value < 0x20 || scalar.value == 0x7F:
            s += "\\u" + String(tomlUnicodeName(scalar.value).dropFirst(2))
        default: s.unicodeScalars.append(scalar)
        }
    }
    return s + "\""
}

/// "an integer", "a string": type names in messages read as prose.
private func withArticle(_ typeName: String) -> String {
    guard let first = typeName.first else { return typeName }
    return ("aeiou".contains(first) ? "an " : "a ") + typeName
}
