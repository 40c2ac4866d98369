import TocsinModel
/// The document under construction. TOML's redefinition rules depend on *how* a table came to
/// exist (header, dotted key, implicit parent of a header), which the public `TOMLTable` does not
/// record, and a tree of nested values would be copied on every deep mutation. So tables are
/// built in an arena, addressed by index (plain struct storage: no reference counting or dynamic
/// exclusivity checks on the hot path), and converted to `TOMLTable`s once at the end.
struct TOMLTableArena {
    typealias ID = Int

    enum Kind {
        case value(TOMLNode)
        case table(ID)
        case tables(ArrayID)
    }
    typealias ArrayID = Int

    struct Table {
        var location: SourceLocation
        /// Nesting level below the root; capped so conversion recursion stays shallow.
        let depth: Int
        /// Set by `[header]` naming exactly this table: a second header for it is a redefinition.
        var definedByHeader = false
        /// The section (header or inline table) whose dotted keys created or entered this table,
        /// or -1. Dotted keys may re-enter it only within that same section.
        var dottedSection = -1
        /// Already in the final representation, so `freeze` hands the array over without
        /// copying; sub-tables sit here as placeholders, tracked in `children`.
        var entries: [TOMLTable.Entry] = []
        var children: [(index: Int, kind: Kind)] = []
        /// The `tomlKeyPrint` of the first eight entries' keys (0, unknown, past those), inline
        /// so that the linear search of a small table rules out most keys without a String
        /// comparison and without another allocation.
        var prints = SIMD8<UInt64>()
        /// Built once a table grows past a few keys; small tables are scanned linearly, which is
        /// cheaper than hashing for the typical config table of under a dozen keys.
        var index: [String: Int]?
    }

    /// `[[name]]`: its element tables, and where it was first written.
    struct ArrayOfTables {
        var tables: [ID]
        let location: SourceLocation
    }

    var tables: [Table] = []
    var arrays: [ArrayOfTables] = []

    /// Stands in for a sub-table until `freeze`.
    private static let placeholder = TOMLNode(.boolean(false), at: SourceLocation(line: 0, column: 0))

    mutating func newTable(location: SourceLocation, depth: Int) -> ID {
        tables.append(Table(location: location, depth: depth))
        return tables.count - 1
    }

    func find(_ key: String, print: UInt64, in t: ID) -> Int? {
        if let index = tables[t].index { return index[key] }
        let entries = tables[t].entries
        var prints = tables[t].prints
        // Read through a pointer: subscripting a SIMD vector by a variable index copies it.
        return withUnsafeBytes(of: &prints) { prints in
            for i in entries.indices {
                if i < 8 {
                    let other = prints.load(fromByteOffset: i << 3, as: UInt64.self)
                    if tomlKeyPrintsMatch(other, print) { return i }
                    if tomlKeyPrintsDiffer(other, print) { continue }
                }
                if entries[i].key == key { return i }
            }
            return nil
        }
    }

    func kind(at i: Int, in t: ID) -> Kind {
        // `children` is sorted by entry index (entries are only appended), so a binary search
        // keeps a table with thousands of sub-tables from going quadratic.
        let children = tables[t].children
        var lo = 0, hi = children.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if children[mid].index < i { lo = mid + 1 } else { hi = mid }
        }
        if lo < children.count, children[lo].index == i { return children[lo].kind }
        return .value(tables[t].entries[i].node)
    }

    mutating func append(_ key: String, print: UInt64, keyLocation: SourceLocation, value: consuming TOMLNode, to t: ID) {
        _ = prepareAppend(key, print: print, to: t)
        tables[t].entries.append(TOMLTable.Entry(key: key, keyLocation: keyLocation, node: consume value))
    }

    /// A sub-table (`.table` or `.tables`): a placeholder entry, tracked in `children`.
    mutating func appendChild(_ key: String, print: UInt64, keyLocation: SourceLocation, _ kind: Kind, to t: ID) {
        let count = prepareAppend(key, print: print, to: t)
        tables[t].children.append((count, kind))
        tables[t].entries.append(TOMLTable.Entry(key: key, keyLocation: keyLocation, node: Self.placeholder))
    }

    /// The bookkeeping of an append: the key index or print, and the first reservation.
    /// Returns the new entry's position.
    @inline(__always) private mutating func prepareAppend(_ key: String, print: UInt64, to t: ID) -> Int {
        let count = tables[t].entries.count
        if tables[t].index != nil {
            tables[t].index?[key] = count
        } else if count >= 12 {
            var built: [String: Int] = [:]
            built.reserveCapacity(count * 2)
            for (i, e) in tables[t].entries.enumerated() { built[e.key] = i }
            built[key] = count
            tables[t].index = built
        }
        if count < 8 { tables[t].prints[count] = print }
        if count == 0 { tables[t].entries.reserveCapacity(8) }
        return count
    }

    mutating func appendElement(_ table: ID, to array: ArrayID) {
        arrays[array].tables.append(table)
    }

    /// Converts a finished table; its builder is emptied on the way (each table is frozen once).
    mutating func freeze(_ t: ID) -> TOMLTable {
        // Moved out (not copied), so the entry array stays uniquely referenced and is handed to
        // the TOMLTable as is.
        var entries: [TOMLTable.Entry] = []
        swap(&entries, &tables[t].entries)
        var children: [(index: Int, kind: Kind)] = []
        swap(&children, &tables[t].children)
        for c in children {
            switch c.kind {
            case .table(let child):
                entries[c.index].node = TOMLNode(.table(freeze(child)), at: tables[child].location)
            case .tables(let a):
                var ids: [ID] = []
                swap(&ids, &arrays[a].tables)
                var elements: [TOMLNode] = []
                elements.reserveCapacity(ids.count)
                for id in ids { elements.append(TOMLNode(.table(freeze(id)), at: tables[id].location)) }
                entries[c.index].node = TOMLNode(.array(elements), at: arrays[a].location)
            case .value:
                break
            }
        }
        return TOMLTable(location: tables[t].location, uniqueEntries: entries)
    }
}

/// A summary of a key known to be ASCII (a bare key), for telling keys apart without comparing
/// `String`s: its first seven bytes, and its length + 1 in the top byte, or 0xFF there when it is
/// longer than seven bytes. 0 means unknown (a quoted key, which may be any Unicode text).
@inline(__always) func tomlKeyPrint(_ buf: UnsafeBufferPointer<UInt8>, _ start: Int, _ end: Int) -> UInt64 {
    let n = end - start
    let length = (n <= 7 ? UInt64(n + 1) : 0xFF) << 56
    let kept = min(n, 7)
    if start + 8 <= buf.count, let base = buf.baseAddress {
        let w = UInt64(littleEndian: UnsafeRawPointer(base + start).loadUnaligned(as: UInt64.self))
        return w & ((1 << UInt64(kept * 8)) &- 1) | length
    }
    var bits: UInt64 = 0
    var i = 0
    while i < kept {
        bits |= UInt64(buf[start + i]) << UInt64(8 * i)
        i += 1
    }
    return bits | length
}

/// True only when the keys of two prints certainly differ. Prints are exact for ASCII keys, and
/// two ASCII strings are equal exactly when their bytes are; String equality (canonical
/// equivalence: "K" equals U+212A KELVIN SIGN) is left to decide whenever either key is unknown,
/// or both are long with the same first seven bytes.
@inline(__always) func tomlKeyPrintsDiffer(_ a: UInt64, _ b: UInt64) -> Bool {
    a != 0 && b != 0 && a != b
}

/// True only when the keys of two prints are certainly equal (both short, ASCII, same bytes).
@inline(__always) func tomlKeyPrintsMatch(_ a: UInt64, _ b: UInt64) -> Bool {
    a != 0 && a == b && a >> 56 != 0xFF
}
