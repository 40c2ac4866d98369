import TocsinModel
extension TOMLParser {
    // MARK: Keys

    struct KeyPart {
        var name: String
        var offset: Int
        var location: SourceLocation
        /// `tomlKeyPrint` of a bare key; 0 (unknown) for a quoted one.
        var print: UInt64 = 0
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
        pos = tomlBareKeyEnd(buf, from: pos, end: end)
        if pos == start {
            throw fail("expected a key, found \(describe(pos))", at: pos)
        }
        let slot = TOMLKeyNames.Slot(buf, from: start, to: pos)
        let name: String
        if let slot, let known = keyNames.name(at: slot) {
            name = known
        } else {
            name = makeValidString(start, pos)
            if let slot { keyNames.remember(name, at: slot) }
        }
        return KeyPart(name: name, offset: start, location: loc, print: tomlKeyPrint(buf, start, pos))
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
        // The value nests in the tables its dotted key makes, not in the key itself: with the key
        // counted too, 65 inline tables or 128 arrays were "deeper than 128 levels".
        let value = try parseValue(depth: depth + keys.count - 1)
        return (keys, value)
    }

    /// Applies a key/value pair under TOML's rules: dotted keys may create tables and re-enter
    /// tables they created in the same section, but never tables defined by a header, arrays of
    /// tables, inline tables or other values; the final key must be new.
    /// `value` is consumed so it moves into the table's entry array instead of being copied.
    mutating func insert(_ keys: KeyPath, _ value: consuming TOMLNode, into start: TOMLTableArena.ID, section: Int) {
        if keys.rest.isEmpty {
            if let idx = arena.find(keys.first.name, print: keys.first.print, in: start) {
                report("duplicate key '\(keys.display())' (first defined at \(arena.tables[start].entries[idx].keyLocation))", at: keys.first.location)
            } else {
                arena.append(keys.first.name, print: keys.first.print, keyLocation: keys.first.location, value: consume value, to: start)
            }
            return
        }
        var table = start
        var i = 0
        while i < keys.count - 1 {
            let part = keys[i]
            if let idx = arena.find(part.name, print: part.print, in: table) {
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
                arena.appendChild(part.name, print: part.print, keyLocation: part.location, .table(child), to: table)
                table = child
            }
            i += 1
        }
        let last = keys.last
        if let idx = arena.find(last.name, print: last.print, in: table) {
            report("duplicate key '\(keys.display())' (first defined at \(arena.tables[table].entries[idx].keyLocation))", at: last.location)
            return
        }
        arena.append(last.name, print: last.print, keyLocation: last.location, value: consume value, to: table)
    }

    func notATable(_ key: String, _ node: TOMLNode, keyLocation: SourceLocation) -> String {
        if case .table = node.value {
            return "inline table '\(key)' (defined at \(keyLocation)) cannot be extended"
        }
        return "key '\(key)' is already \(withArticle(node.value.typeName)) (defined at \(keyLocation)), not a table"
    }

    mutating func parseHeader() throws(TOMLAbort) {
        let headerLoc = location(pos)
        let (keys, isArray) = try parseHeaderBrackets()
        section = nextSection
        nextSection += 1
        // Until the header is known to be valid, keys go to a scratch table that is discarded.
        current = arena.newTable(location: headerLoc, depth: min(keys.count, tomlMaxDepth))
        guard let parent = headerParent(keys, headerLoc: headerLoc) else { return }
        let last = keys.last
        if let idx = arena.find(last.name, print: last.print, in: parent) {
            reopenHeader(keys, isArray: isArray, entry: idx, in: parent, headerLoc: headerLoc)
            return
        }
        let child = arena.newTable(location: headerLoc, depth: arena.tables[parent].depth + 1)
        arena.tables[child].definedByHeader = true
        if isArray {
            arena.arrays.append(TOMLTableArena.ArrayOfTables(tables: [child], location: headerLoc))
            arena.appendChild(last.name, print: last.print, keyLocation: last.location, .tables(arena.arrays.count - 1), to: parent)
        } else {
            arena.appendChild(last.name, print: last.print, keyLocation: last.location, .table(child), to: parent)
        }
        current = child
    }

    /// `[key.path]` or `[[key.path]]`, from its first bracket to after its last.
    private mutating func parseHeaderBrackets() throws(TOMLAbort) -> (keys: KeyPath, isArray: Bool) {
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
        return (keys, isArray)
    }

    /// The table a header's last key goes in: its leading keys walked from the root, creating
    /// the tables that do not exist yet and entering an array of tables' latest element; nil,
    /// reported, when one of them is a value.
    private mutating func headerParent(_ keys: KeyPath, headerLoc: SourceLocation) -> TOMLTableArena.ID? {
        var table = root
        var i = 0
        while i < keys.count - 1 {
            let part = keys[i]
            if let idx = arena.find(part.name, print: part.print, in: table) {
                switch arena.kind(at: idx, in: table) {
                case .table(let child): table = child
                case .tables(let array): table = arena.arrays[array].tables[arena.arrays[array].tables.count - 1]
                case .value(let node):
                    let keyLocation = arena.tables[table].entries[idx].keyLocation
                    report(notATable(keys.display(upTo: i + 1), node, keyLocation: keyLocation), at: part.location)
                    return nil
                }
            } else {
                let child = arena.newTable(location: headerLoc, depth: arena.tables[table].depth + 1)
                arena.appendChild(part.name, print: part.print, keyLocation: part.location, .table(child), to: table)
                table = child
            }
            i += 1
        }
        return table
    }

    /// A header whose last key exists already: allowed for a table so far only implied by other
    /// headers (`[a.b]` then `[a]`) and for another element of an array of tables; reported
    /// otherwise, with what the key already is.
    private mutating func reopenHeader(_ keys: KeyPath, isArray: Bool, entry idx: Int, in table: TOMLTableArena.ID,
                                       headerLoc: SourceLocation) {
        var name: String { keys.display() }
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
                arena.tables[table].entries[idx].keyLocation = keys.last.location
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
    }
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

/// The `String`s of the bare keys made last, by their bytes. Keys repeat: every
/// `[[notification]]` of a long file spells out `key`, `title` and `on_calendar` again. Only keys
/// of at most 15 bytes, which `String` keeps inline: a hit copies two words, allocates nothing,
/// and nothing cached holds memory. Direct-mapped: a key whose slot another key took is made
/// again. (Values were tried too: their misses cost more than their hits saved.)
struct TOMLKeyNames {
    private static let slotBits = 6
    /// Per slot, the key's first eight bytes, and its next seven with its length in the top byte
    /// (so a used slot's second word is never 0, which marks an empty one). Arrays, not raw
    /// memory: the input is untrusted, and a bounds check costs less than it protects.
    private var words = [UInt64](repeating: 0, count: 2 << slotBits)
    private var names = [String](repeating: "", count: 1 << slotBits)

    /// A key's bytes as two words, and the slot they map to.
    struct Slot {
        let lo: UInt64, hi: UInt64, index: Int

        /// Nil for a key longer than 15 bytes, or too close to the end of the input to read as words.
        @inline(__always) init?(_ buf: UnsafeBufferPointer<UInt8>, from start: Int, to end: Int) {
            let n = end - start
            guard n > 0, n <= 15, start + 16 <= buf.count, let base = buf.baseAddress else { return nil }
            let raw = UnsafeRawPointer(base + start)
            var lo = UInt64(littleEndian: raw.loadUnaligned(as: UInt64.self))
            var hi = UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
            if n < 8 {
                lo &= (1 << UInt64(n * 8)) &- 1
                hi = 0
            } else {
                hi &= (1 << UInt64((n - 8) * 8)) &- 1
            }
            hi |= UInt64(n) << 56
            self.lo = lo
            self.hi = hi
            index = Int(truncatingIfNeeded: ((lo ^ hi) &* 0x9E37_79B9_7F4A_7C15) >> UInt64(64 - TOMLKeyNames.slotBits))
        }
    }

    @inline(__always) func name(at slot: Slot) -> String? {
        words[2 * slot.index] == slot.lo && words[2 * slot.index + 1] == slot.hi ? names[slot.index] : nil
    }

    @inline(__always) mutating func remember(_ name: String, at slot: Slot) {
        words[2 * slot.index] = slot.lo
        words[2 * slot.index + 1] = slot.hi
        names[slot.index] = name
    }
}
