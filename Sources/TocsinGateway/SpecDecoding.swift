public import DBus
import TocsinConfig
import TocsinCore
import TocsinTime
public import TocsinModel

/// Turns a `Schedule`/`PostNow` `a{sv}` into a `NotificationSpec` through the same field table
/// and messages as the config file (`NotificationFields`), read straight from the D-Bus values:
/// field names, syntax and limits cannot drift between surfaces, and a call costs no TOML tree.
public enum SpecDecoding: Sendable {
    public static func decode(_ value: DBusValue, requireTrigger: Bool, limits: SpecLimits = SpecLimits()) throws(DBusError) -> NotificationSpec {
        try decode(value, limits: limits, requireTrigger: requireTrigger, triggerRefusal: nil)
    }

    /// `PostNow`'s spec: delivered at once, so a trigger in it is refused, naming the field.
    public static func decodePost(_ value: DBusValue, limits: SpecLimits = SpecLimits()) throws(DBusError) -> NotificationSpec {
        try decode(value, limits: limits, requireTrigger: false,
                   triggerRefusal: "goes with Schedule; PostNow delivers at once and takes no trigger")
    }

    private static func decode(_ value: DBusValue, limits: SpecLimits, requireTrigger: Bool, triggerRefusal: String?) throws(DBusError) -> NotificationSpec {
        var reader = try DBusFieldReader(value)
        switch NotificationFields.decode(&reader, limits: limits, allowReplace: true, allowFleet: true, requireTrigger: requireTrigger,
                                         triggerRefusal: triggerRefusal) {
        case .success(let spec): return spec
        case .failure(let f):
            // The decoder's messages already name the field ('title' in ..., invalid 'after': ...).
            let text = f.issues.map(\.messageWithValueColumn).joined(separator: "; ")
            throw DBusError(.invalidArgs, text)
        }
    }
}

/// `FieldReader` over a call's `a{sv}`. D-Bus has no line and column, so every issue is placed at
/// the origin and the message names the field; variants are looked through at any depth, so
/// `a{sv}`, `a{ss}`, `as` and `av` of strings all read alike.
struct DBusFieldReader: FieldReader {
    let context = "the notification spec"
    private(set) var issues: [FieldIssue] = []
    private struct Entry {
        let key: String
        /// The key's length in UTF-8: most of the ~30 reads name a field the spec does not have,
        /// and a length that differs rules an entry out without comparing `String`s. Exact because
        /// every field name is lowercase ASCII and `_`, which no other text is canonically
        /// equivalent to (`==` compares canonical equivalence, whose byte lengths may differ).
        let length: Int
        let value: DBusValue
        var consumed = false
    }
    /// Searched linearly: a spec has a handful of entries (at most `maxEntries`), and comparing
    /// a few short strings is cheaper than hashing the key of each of the ~30 reads a decode makes.
    private var entries: [Entry] = []

    /// More entries than this cannot all be fields; refusing them keeps the error reply small.
    static let maxEntries = 64

    private static let origin = SourceLocation(line: 1, column: 1)
    var tableLocation: SourceLocation { Self.origin }

    init(_ value: DBusValue) throws(DBusError) {
        guard case .dictionary(key: .string, value: _, let raw) = value else {
            throw DBusError(.invalidArgs, "the spec must be a dictionary with string keys (a{sv}), got '\(value.type)'")
        }
        guard raw.count <= Self.maxEntries else {
            throw DBusError(.invalidArgs, "the spec has \(raw.count) entries; a notification has at most \(Self.maxEntries)")
        }
        entries.reserveCapacity(raw.count)
        for e in raw {
            guard case .string(let key) = e.key else { continue }
            if entries.contains(where: { $0.key == key }) { throw DBusError(.invalidArgs, "field '\(Echo.capped(key))' is given twice") }
            entries.append(Entry(key: key, length: key.utf8.count, value: Self.unwrapped(e.value)))
        }
    }

    private static func unwrapped(_ v: DBusValue) -> DBusValue {
        var v = v
        while case .variant(let inner) = v { v = inner }
        return v
    }

    /// The value's kind in the words the config's messages use, so both surfaces read alike.
    static func typeName(_ v: DBusValue) -> String {
        switch v {
        case .string: return "string"
        case .boolean: return "boolean"
        case .byte, .int16, .uint16, .int32, .uint32, .int64, .uint64: return "integer"
        case .double: return "float"
        case .dictionary(key: .string, _, _): return "table"
        case .array: return "array"
        default: return "D-Bus type '\(v.type)'"
        }
    }

    private func index(_ key: String) -> Int? {
        let length = key.utf8.count
        for i in entries.indices where entries[i].length == length && entries[i].key == key { return i }
        return nil
    }

    func has(_ key: String) -> Bool { index(key) != nil }
    func location(of key: String) -> SourceLocation { Self.origin }
    func valueLocation(of key: String) -> SourceLocation { Self.origin }
    func elementLocation(of key: String, at index: Int) -> SourceLocation { Self.origin }

    mutating func report(_ key: String, _ message: String, atValue: Bool) {
        issues.append(FieldIssue(field: key, location: Self.origin, message: message))
    }

    mutating func report(_ issue: FieldIssue) { issues.append(issue) }

    mutating func accept(_ key: String) {
        if let i = index(key) { entries[i].consumed = true }
    }

    private mutating func value(_ key: String) -> DBusValue? {
        guard let i = index(key) else { return nil }
        entries[i].consumed = true
        return entries[i].value
    }

    private mutating func typeError(_ key: String, expected: String, found: DBusValue) {
        report(key, "'\(key)' in \(context) must be \(expected), found \(Self.typeName(found))")
    }

    mutating func string(_ key: String) -> String? {
        guard let v = value(key) else { return nil }
        if case .string(let s) = v { return refusingNUL(key, s) }
        typeError(key, expected: "a string", found: v)
        return nil
    }

    mutating func bool(_ key: String) -> Bool? {
        guard let v = value(key) else { return nil }
        if case .boolean(let b) = v { return b }
        typeError(key, expected: "a boolean", found: v)
        return nil
    }

    mutating func integer(_ key: String, in range: ClosedRange<Int64>) -> Int64? {
        guard let v = value(key) else { return nil }
        let wide: Int64?
        switch v {
        case .byte(let x): wide = Int64(x)
        case .int16(let x): wide = Int64(x)
        case .uint16(let x): wide = Int64(x)
        case .int32(let x): wide = Int64(x)
        case .uint32(let x): wide = Int64(x)
        case .int64(let x): wide = x
        case .uint64(let x):
            guard let i = Int64(exactly: x) else {
                report(key, "'\(key)' must be between \(range.lowerBound) and \(range.upperBound), found \(x)")
                return nil
            }
            wide = i
        default:
            typeError(key, expected: "an integer", found: v)
            return nil
        }
        guard let i = wide, range.contains(i) else {
            report(key, "'\(key)' must be between \(range.lowerBound) and \(range.upperBound), found \(wide ?? 0)")
            return nil
        }
        return i
    }

    mutating func stringArray(_ key: String) -> [String]? {
        guard let v = value(key) else { return nil }
        guard case .array(_, let items) = v else {
            typeError(key, expected: "an array of strings", found: v)
            return nil
        }
        var out: [String] = []
        out.reserveCapacity(items.count)
        for item in items {
            guard case .string(let s) = Self.unwrapped(item) else {
                report(key, "'\(key)' must be an array of strings, found an element of type \(Self.typeName(Self.unwrapped(item)))")
                return nil
            }
            guard let s = refusingNUL(key, s, at: Self.origin) else { return nil }
            out.append(s)
        }
        return out
    }

    mutating func stringTable(_ key: String) -> [(key: String, value: String)]? {
        guard let v = value(key) else { return nil }
        guard case .dictionary(key: .string, _, let items) = v else {
            typeError(key, expected: "a table of strings", found: v)
            return nil
        }
        var out: [(key: String, value: String)] = []
        out.reserveCapacity(items.count)
        var seen = Set<String>()
        for e in items {
            guard case .string(let k) = e.key else { continue }
            guard refusingNUL(key, k, at: Self.origin, name: "a key in '\(key)'") != nil else { continue }
            guard seen.insert(k).inserted else {
                report("\(key).\(k)", "'\(key).\(k)' is given twice")
                continue
            }
            guard case .string(let s) = Self.unwrapped(e.value) else {
                report("\(key).\(k)", "'\(key).\(k)' must be a string, found \(Self.typeName(Self.unwrapped(e.value)))")
                continue
            }
            guard refusingNUL("\(key).\(k)", s, at: Self.origin) != nil else { continue }
            out.append((k, s))
        }
        return out
    }

    mutating func timeValue(_ key: String) -> TimeValue? {
        guard let v = value(key) else { return nil }
        guard case .string(let s) = v else {
            report(key, "'\(key)' must be a date-time or a string, found \(Self.typeName(v))")
            return nil
        }
        return timeValue(key, text: s)
    }

    mutating func parse<T>(_ key: String, _ text: String, _ body: (String) throws(TimeSyntaxError) -> T) -> T? {
        do {
            return try body(text)
        } catch {
            var issue = FieldIssue(field: key, location: Self.origin, message: "invalid '\(key)': \(error.message)")
            // The message carries the column, as the file's caret would; a non-positive interval is wrong as a whole.
            if error.code != .nonPositiveInterval { issue.valueColumn = error.column }
            issues.append(issue)
            return nil
        }
    }

    mutating func finish(known: [String]) {
        let unread = entries.filter { !$0.consumed }.map { (key: $0.key, location: Self.origin) }
        reportUnknown(unread, known: known)
    }
}
