public import TocsinModel
// CONTRACT FILE written by the lead before the TOML helper starts. The config decoder is written
// against these shapes; the parser may add API but must keep these.

public struct TOMLLocalDate: Hashable, Sendable {
    public var year: Int, month: Int, day: Int
    public init(year: Int, month: Int, day: Int) { self.year = year; self.month = month; self.day = day }
}

public struct TOMLLocalTime: Hashable, Sendable {
    public var hour: Int, minute: Int, second: Int
    /// Fraction of a second in nanoseconds (TOML requires at least millisecond precision; we keep nanoseconds).
    public var nanosecond: Int
    public init(hour: Int, minute: Int, second: Int, nanosecond: Int = 0) {
        self.hour = hour; self.minute = minute; self.second = second; self.nanosecond = nanosecond
    }
}

/// Any of TOML's four date-time forms: offset date-time (date, time, offset), local date-time
/// (date, time), local date (date) and local time (time).
public struct TOMLDateTime: Hashable, Sendable {
    public var date: TOMLLocalDate?
    public var time: TOMLLocalTime?
    /// Offset from UTC in minutes (`Z` is 0); nil for local forms.
    public var offsetMinutes: Int?
    public init(date: TOMLLocalDate?, time: TOMLLocalTime?, offsetMinutes: Int?) {
        self.date = date; self.time = time; self.offsetMinutes = offsetMinutes
    }
}

/// Only date-times (the one large payload) are boxed: every other value is stored inline, which
/// saves a heap allocation per value; the enum recurses through array storage, so needs no box.
public enum TOMLValue: Sendable {
    case string(String)
    case integer(Int64)
    case float(Double)
    case boolean(Bool)
    indirect case dateTime(TOMLDateTime)
    case array([TOMLNode])
    case table(TOMLTable)

    /// The name used in diagnostics: "string", "integer", "float", "boolean", "offset date-time",
    /// "local date-time", "local date", "local time", "array", "table".
    public var typeName: String {
        switch self {
        case .string: return "string"
        case .integer: return "integer"
        case .float: return "float"
        case .boolean: return "boolean"
        case .dateTime(let d):
            switch (d.date != nil, d.time != nil, d.offsetMinutes != nil) {
            case (true, true, true): return "offset date-time"
            case (true, true, false): return "local date-time"
            case (true, false, _): return "local date"
            default: return "local time"
            }
        case .array: return "array"
        case .table: return "table"
        }
    }
}

/// A value with the position where it starts in the source.
public struct TOMLNode: Sendable {
    public var value: TOMLValue
    public var location: SourceLocation
    public init(_ value: TOMLValue, at location: SourceLocation) { self.value = value; self.location = location }
}

/// A table in document order. Every key keeps where it was written, so the config decoder can point
/// at the key (unknown key) or at its value (wrong type).
public struct TOMLTable: Sendable {
    public struct Entry: Sendable {
        public var key: String
        public var keyLocation: SourceLocation
        public var node: TOMLNode
        public init(key: String, keyLocation: SourceLocation, node: TOMLNode) {
            self.key = key; self.keyLocation = keyLocation; self.node = node
        }
    }
    /// Where the table was introduced: its `[header]`, `[[header]]`, `{`, or 1:1 for the root.
    public var location: SourceLocation
    public private(set) var entries: [Entry] = []
    /// Key -> position in `entries`, built only once a table outgrows `linearLimit`: most config
    /// tables have a handful of keys, where comparing strings beats hashing them and the
    /// dictionary's allocation is pure cost.
    private var index: [String: Int]?
    private static let linearLimit = 8

    public init(location: SourceLocation) { self.location = location }

    /// For the parser, which has already ruled out duplicate keys: takes the entries as they are.
    init(location: SourceLocation, uniqueEntries: [Entry]) {
        self.location = location
        self.entries = uniqueEntries
        if uniqueEntries.count > Self.linearLimit { buildIndex() }
    }

    private mutating func buildIndex() {
        var built: [String: Int] = [:]
        built.reserveCapacity(entries.count * 2)
        // Later entries win, as with `set`.
        for (i, e) in entries.enumerated() { built[e.key] = i }
        index = built
    }

    private func position(of key: String) -> Int? {
        if let index { return index[key] }
        for i in entries.indices where entries[i].key == key { return i }
        return nil
    }

    public subscript(key: String) -> TOMLNode? {
        guard let i = position(of: key) else { return nil }
        return entries[i].node
    }
    public func entry(_ key: String) -> Entry? { position(of: key).map { entries[$0] } }
    public var keys: [String] { entries.map(\.key) }

    /// Inserts or replaces (the parser enforces TOML's redefinition rules before calling this).
    public mutating func set(_ key: String, keyLocation: SourceLocation, node: TOMLNode) {
        if let i = position(of: key) {
            entries[i] = Entry(key: key, keyLocation: keyLocation, node: node)
        } else {
            entries.append(Entry(key: key, keyLocation: keyLocation, node: node))
            if index != nil {
                index?[key] = entries.count - 1
            } else if entries.count > Self.linearLimit {
                buildIndex()
            }
        }
    }
}

public enum TOML: Sendable {
    /// Parses a whole document. `file` names the source in diagnostics; `version` is the
    /// specification it is read against (a 1.1 feature in 1.0 mode is an error naming it).
    /// Throws every error found (at least one); never crashes or hangs on any byte sequence.
    public static func parse(_ bytes: [UInt8], file: String, version: TOMLVersion = .default) throws(DiagnosticError) -> TOMLTable {
        let result: Result<TOMLTable, DiagnosticError> = bytes.withUnsafeBufferPointer { buffer in
            var parser = TOMLParser(buffer: buffer, file: file, version: version)
            let invalid = invalidUTF8Offsets(buffer)
            if !invalid.isEmpty {
                // Positions past the first bad byte are still meaningful (lines are found by
                // '\n'), but the text is not, so only the encoding errors are reported.
                for offset in invalid {
                    parser.report("invalid UTF-8 byte 0x\(tomlHexByte(buffer[offset]))", at: parser.slowLocation(offset))
                }
                return .failure(DiagnosticError(parser.diagnostics))
            }
            let root = parser.parseDocument()
            if !parser.diagnostics.isEmpty { return .failure(DiagnosticError(parser.diagnostics)) }
            return .success(parser.arena.freeze(root))
        }
        return try result.get()
    }
    public static func parse(_ text: String, file: String, version: TOMLVersion = .default) throws(DiagnosticError) -> TOMLTable {
        try parse(Array(text.utf8), file: file, version: version)
    }
}

func tomlHexByte(_ b: UInt8) -> String {
    let digits = Array("0123456789ABCDEF")
    return String(digits[Int(b >> 4)]) + String(digits[Int(b & 0xF)])
}
