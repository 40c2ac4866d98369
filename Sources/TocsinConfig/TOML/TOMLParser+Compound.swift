import TocsinModel
extension TOMLParser {
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
        while true {
            try skipArraySpace()
            if cur == ASCII.rbracket, !atEnd { pos += 1; openDelimiters -= 1; return elements }
            if atEnd { throw fail("unterminated array (opened at \(location(open))): expected ']', found end of file", at: pos) }
            if cur == ASCII.comma {
                throw fail("expected a value or ']' in array, found ','", at: pos)
            }
            // Two to start with: most config arrays are short, and every parse result stays in
            // memory, so unused capacity is memory the next allocations must walk past.
            if elements.isEmpty { elements.reserveCapacity(2) }
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
    /// TOML 1.1 allows newlines, comments and a trailing comma between the braces; in 1.0 mode
    /// each is reported as a 1.1 feature and the table is read on, so later errors still show.
    mutating func parseInlineTable(depth: Int, location loc: SourceLocation) throws(TOMLAbort) -> TOMLTable {
        try checkDepth(depth)
        let open = pos
        pos += 1
        openDelimiters += 1
        var direct: [TOMLTable.Entry] = []
        var directPrints = SIMD8<UInt64>()
        var builder: TOMLTableArena.ID?
        let sectionID = nextSection
        nextSection += 1
        var spansLines = false
        try skipInlineTableSpace(&spansLines)
        if cur == ASCII.rbrace, !atEnd { pos += 1; openDelimiters -= 1; return TOMLTable(location: loc) }
        while true {
            if atEnd { throw unterminatedInlineTable(open) }
            if cur == ASCII.comma {
                throw fail("expected a key or '}' in inline table, found ','", at: pos)
            }
            let (keys, value) = try parseKeyValue(depth: depth)
            if builder == nil, keys.count == 1, direct.count < 8 {
                if let previous = directIndex(of: keys.first, in: direct, prints: directPrints) {
                    report("duplicate key '\(keys.display())' (first defined at \(direct[previous].keyLocation))", at: keys.first.location)
                } else {
                    if direct.isEmpty { direct.reserveCapacity(2) }
                    directPrints[direct.count] = keys.first.print
                    direct.append(TOMLTable.Entry(key: keys.first.name, keyLocation: keys.first.location, node: consume value))
                }
            } else {
                let table: TOMLTableArena.ID
                if let builder {
                    table = builder
                } else {
                    table = arena.newTable(location: loc, depth: depth)
                    for (i, e) in direct.enumerated() {
                        arena.append(e.key, print: directPrints[i], keyLocation: e.keyLocation, value: e.node, to: table)
                    }
                    direct = []
                    builder = table
                }
                insert(keys, value, into: table, section: sectionID)
            }
            try skipInlineTableSpace(&spansLines)
            var closed = false
            if cur == ASCII.comma, !atEnd {
                let comma = pos
                pos += 1
                try skipInlineTableSpace(&spansLines)
                if cur == ASCII.rbrace, !atEnd {
                    require(.inlineTableTrailingComma, at: comma)
                    closed = true
                }
            } else if cur == ASCII.rbrace, !atEnd {
                closed = true
            } else if atEnd {
                throw unterminatedInlineTable(open)
            } else {
                throw fail("expected ',' or '}' in inline table (opened at \(location(open))), found \(describe(pos))", at: pos)
            }
            if closed {
                pos += 1
                openDelimiters -= 1
                if let builder { return arena.freeze(builder) }
                return TOMLTable(location: loc, uniqueEntries: direct)
            }
        }
    }

    /// Where `key` already is among an inline table's first (fewer than eight) plain keys.
    private func directIndex(of key: KeyPart, in direct: [TOMLTable.Entry], prints: SIMD8<UInt64>) -> Int? {
        var prints = prints
        // Read through a pointer: subscripting a SIMD vector by a variable index copies it.
        return withUnsafeBytes(of: &prints) { prints in
            for i in direct.indices {
                if i < 8 {
                    let other = prints.load(fromByteOffset: i << 3, as: UInt64.self)
                    if tomlKeyPrintsMatch(other, key.print) { return i }
                    if tomlKeyPrintsDiffer(other, key.print) { continue }
                }
                if direct[i].key == key.name { return i }
            }
            return nil
        }
    }

    private mutating func unterminatedInlineTable(_ open: Int) -> TOMLAbort {
        fail("unterminated inline table (opened at \(location(open))): expected '}', found end of file", at: pos)
    }

    /// Spaces, and (TOML 1.1) newlines and comments between the braces of an inline table.
    /// `spansLines` keeps a 1.0 document's multi-line table to one message.
    @inline(__always) private mutating func skipInlineTableSpace(_ spansLines: inout Bool) throws(TOMLAbort) {
        skipSpaces()
        guard pos < end, buf[pos] == ASCII.lf || buf[pos] == ASCII.cr || buf[pos] == ASCII.hash else { return }
        if !spansLines {
            spansLines = true
            require(.multilineInlineTable, at: pos)
        }
        try skipArraySpace()
    }
}
