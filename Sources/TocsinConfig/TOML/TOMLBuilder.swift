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

    struct Entry {
        var key: String
        var keyLocation: SourceLocation
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
    var entries: [Entry] = []
    /// Built once a table grows past a few keys; small tables are scanned linearly, which is
    /// cheaper than hashing for the typical config table of under a dozen keys.
    private var index: [String: Int]?

    init(location: SourceLocation, depth: Int) {
        self.location = location
        self.depth = depth
    }

    func find(_ key: String) -> Int? {
        if let index { return index[key] }
        for i in entries.indices where entries[i].key == key { return i }
        return nil
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
        entries.append(Entry(key: key, keyLocation: keyLocation, kind: kind))
    }

    func freeze() -> TOMLTable {
        var table = TOMLTable(location: location)
        for entry in entries {
            let node: TOMLNode
            switch entry.kind {
            case .value(let n):
                node = n
            case .table(let child):
                node = TOMLNode(.table(child.freeze()), at: child.location)
            case .tables(let array):
                node = TOMLNode(
                    .array(array.tables.map { TOMLNode(.table($0.freeze()), at: $0.location) }),
                    at: array.location)
            }
            table.set(entry.key, keyLocation: entry.keyLocation, node: node)
        }
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
