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

    func find(_ key: String, in t: ID) -> Int? {
        if let index = tables[t].index { return index[key] }
        let entries = tables[t].entries
        for i in entries.indices where entries[i].key == key { return i }
        return nil
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

    mutating func append(_ key: String, keyLocation: SourceLocation, _ kind: Kind, to t: ID) {
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
        if count == 0 { tables[t].entries.reserveCapacity(8) }
        switch kind {
        case .value(let node):
            tables[t].entries.append(TOMLTable.Entry(key: key, keyLocation: keyLocation, node: node))
        case .table, .tables:
            tables[t].children.append((count, kind))
            tables[t].entries.append(TOMLTable.Entry(key: key, keyLocation: keyLocation, node: Self.placeholder))
        }
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
