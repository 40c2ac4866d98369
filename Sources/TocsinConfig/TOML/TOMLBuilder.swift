/// The document under construction. TOML's redefinition rules depend on *how* a table came to
/// exist (header, dotted key, implicit parent of a header), which the public `TOMLTable` does not
/// record, and nested value types would be copied on every deep mutation; so the parser builds
/// this reference tree and converts it to `TOMLTable` once at the end.
final class MutableTable {
    enum Kind {
        case value(TOMLNode)
        case table(MutableTable)
        case tables(ArrayOfTables)
    }

    private struct Child {
        var index: Int
        var kind: Kind
    }

    var location: SourceLocation
    /// Nesting level below the root; capped so conversion and deinit recursion stay shallow.
    let depth: Int
    /// Set by `[header]` naming exactly this table: a second header for it is a redefinition.
    var definedByHeader = false
    /// The section (header or inline table) whose dotted keys created or entered this table, or
    /// -1. Dotted keys may re-enter it only within that same section.
    var dottedSection = -1
    /// Already in the final representation, so `freeze` hands the array over without copying;
    /// sub-tables sit here as placeholders until then and are tracked in `children`.
    var entries: [TOMLTable.Entry] = []
    private var children: [Child] = []
    /// Built once a table grows past a few keys; small tables are scanned linearly, which is
    /// cheaper than hashing for the typical config table of under a dozen keys.
    private var index: [String: Int]?

    /// Stands in for a sub-table until `freeze`; shared so a placeholder costs no allocation.
    private static let placeholder = TOMLNode(.boolean(false), at: SourceLocation(line: 0, column: 0))

    init(location: SourceLocation, depth: Int) {
        self.location = location
        self.depth = depth
    }

    func find(_ key: String) -> Int? {
        if let index { return index[key] }
        for i in entries.indices where entries[i].key == key { return i }
        return nil
    }

    func kind(at i: Int) -> Kind {
        for c in children where c.index == i { return c.kind }
        return .value(entries[i].node)
    }

    func append(_ key: String, keyLocation: SourceLocation, _ kind: Kind) {
        if index != nil {
            index?[key] = entries.count
        } else if entries.count >= 12 {
            var built: [String: Int] = [:]
            built.reserveCapacity(entries.count * 2)
            for (i, e) in entries.enumerated() { built[e.key] = i }
            built[key] = entries.count
            index = built
        }
        if entries.isEmpty { entries.reserveCapacity(10) }
        switch kind {
        case .value(let node):
            entries.append(TOMLTable.Entry(key: key, keyLocation: keyLocation, node: node))
        case .table, .tables:
            children.append(Child(index: entries.count, kind: kind))
            entries.append(TOMLTable.Entry(key: key, keyLocation: keyLocation, node: Self.placeholder))
        }
    }

    /// Converts the finished tree; the builder is emptied on the way (called once, at the end).
    func freeze() -> TOMLTable {
        for c in children {
            switch c.kind {
            case .table(let child):
                entries[c.index].node = TOMLNode(.table(child.freeze()), at: child.location)
            case .tables(let array):
                var elements: [TOMLNode] = []
                elements.reserveCapacity(array.tables.count)
                for t in array.tables { elements.append(TOMLNode(.table(t.freeze()), at: t.location)) }
                array.tables = []
                entries[c.index].node = TOMLNode(.array(elements), at: array.location)
            case .value:
                break
            }
        }
        children = []
        let table = TOMLTable(location: location, uniqueEntries: entries)
        entries = []
        return table
    }
}

/// `[[name]]` elements; a class so appending an element does not copy the array held in the parent.
final class ArrayOfTables {
    var tables: [MutableTable]
    let location: SourceLocation
    init(first: MutableTable, location: SourceLocation) {
        tables = [first]
        self.location = location
    }
}
