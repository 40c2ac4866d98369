public import TocsinTime
public import TocsinModel

/// Typed, position-aware access to a TOML table that records every problem instead of stopping
/// at the first, and at the end reports the keys nobody asked for (with a spelling suggestion).
/// One reader serves `[daemon]`, `[backend.NAME]` and `[[notification]]`.
public struct TableReader: FieldReader, Sendable {
    public let table: TOMLTable
    /// How the table is named in messages: `[daemon]`, `[[notification]] #3`, `[backend.alarm]`.
    public let context: String
    /// The document the table was parsed from, for the position of a character inside a string
    /// value (`parse`); without it, that position is exact only for a string without escapes
    /// on one line.
    public let source: [UInt8]?
    public private(set) var issues: [FieldIssue] = []
    private var consumed: Set<String> = []

    public init(_ table: TOMLTable, context: String, source: [UInt8]? = nil) {
        self.table = table
        self.context = context
        self.source = source
    }

    public var tableLocation: SourceLocation { table.location }
    public func has(_ key: String) -> Bool { table[key] != nil }
    public func location(of key: String) -> SourceLocation { table.entry(key)?.keyLocation ?? table.location }
    public func valueLocation(of key: String) -> SourceLocation { table[key]?.location ?? table.location }
    public func elementLocation(of key: String, at index: Int) -> SourceLocation {
        if case .array(let items)? = table[key]?.value, items.indices.contains(index) { return items[index].location }
        return valueLocation(of: key)
    }

    public mutating func report(_ key: String, _ message: String, atValue: Bool) {
        let loc = atValue ? valueLocation(of: key) : location(of: key)
        issues.append(FieldIssue(field: key, location: loc, message: message))
    }

    public mutating func report(_ issue: FieldIssue) { issues.append(issue) }

    public mutating func accept(_ key: String) { consumed.insert(key) }

    public mutating func node(_ key: String) -> TOMLNode? {
        consumed.insert(key)
        return table[key]
    }

    private mutating func typeError(_ key: String, expected: String, found: TOMLValue) {
        report(key, "'\(key)' in \(context) must be \(expected), found \(found.typeName)")
    }

    public mutating func string(_ key: String) -> String? {
        guard let n = node(key) else { return nil }
        if case .string(let s) = n.value { return refusingNUL(key, s) }
        typeError(key, expected: "a string", found: n.value)
        return nil
    }

    public mutating func bool(_ key: String) -> Bool? {
        guard let n = node(key) else { return nil }
        if case .boolean(let b) = n.value { return b }
        typeError(key, expected: "a boolean", found: n.value)
        return nil
    }

    public mutating func integer(_ key: String, in range: ClosedRange<Int64>) -> Int64? {
        guard let n = node(key) else { return nil }
        guard case .integer(let i) = n.value else {
            typeError(key, expected: "an integer", found: n.value)
            return nil
        }
        guard range.contains(i) else {
            report(key, "'\(key)' must be between \(range.lowerBound) and \(range.upperBound), found \(i)")
            return nil
        }
        return i
    }

    public mutating func stringArray(_ key: String) -> [String]? {
        guard let n = node(key) else { return nil }
        guard case .array(let items) = n.value else {
            typeError(key, expected: "an array of strings", found: n.value)
            return nil
        }
        var out: [String] = []
        for item in items {
            guard case .string(let s) = item.value else {
                issues.append(FieldIssue(field: key, location: item.location,
                                         message: "'\(key)' must be an array of strings, found an element of type \(item.value.typeName)"))
                return nil
            }
            guard let s = refusingNUL(key, s, at: item.location) else { return nil }
            out.append(s)
        }
        return out
    }

    public mutating func stringTable(_ key: String) -> [(key: String, value: String)]? {
        guard let n = node(key) else { return nil }
        guard case .table(let t) = n.value else {
            typeError(key, expected: "a table of strings", found: n.value)
            return nil
        }
        var out: [(key: String, value: String)] = []
        for e in t.entries {
            guard refusingNUL(key, e.key, at: e.keyLocation, name: "a key in '\(key)'") != nil else { continue }
            guard case .string(let s) = e.node.value else {
                issues.append(FieldIssue(field: "\(key).\(e.key)", location: e.node.location,
                                         message: "'\(key).\(e.key)' must be a string, found \(e.node.value.typeName)"))
                continue
            }
            guard refusingNUL("\(key).\(e.key)", s, at: e.node.location) != nil else { continue }
            out.append((e.key, s))
        }
        return out
    }

    public mutating func timeValue(_ key: String) -> TimeValue? {
        guard let n = node(key) else { return nil }
        switch n.value {
        case .dateTime(let dt):
            guard let date = dt.date, let time = dt.time else {
                report(key, "'\(key)' needs a date and a time, found a \(n.value.typeName)")
                return nil
            }
            let civil = CivilDateTime(year: date.year, month: date.month, day: date.day, hour: time.hour,
                                      minute: time.minute, second: min(time.second, 59), microsecond: time.nanosecond / 1000)
            guard let offset = dt.offsetMinutes else { return .local(civil) }
            let local = Timestamp.instant(of: civil, in: TimeZoneRules.utc)
            return .instant(local - .minutes(Int64(offset)))
        case .string(let s):
            return timeValue(key, text: s)
        default:
            report(key, "'\(key)' must be a date-time or a string, found \(n.value.typeName)")
            return nil
        }
    }

    /// Maps the parser's column into the file, so a caret lands on the bad character.
    public mutating func parse<T>(_ key: String, _ text: String,
                                  _ body: (String) throws(TimeSyntaxError) -> T) -> T? {
        do {
            return try body(text)
        } catch {
            var loc = valueLocation(of: key)
            if case .string = table[key]?.value {
                loc = TOMLStringPositions.place(ofCharacter: error.column, inStringAt: loc, source: source)
            }
            var issue = FieldIssue(field: key, location: loc, message: "invalid '\(key)': \(error.message)")
            // A non-positive interval is wrong as a whole; a column would point nowhere useful.
            if case .string = table[key]?.value, error.code != .nonPositiveInterval { issue.valueColumn = error.column }
            issues.append(issue)
            return nil
        }
    }

    public mutating func finish(known: [String]) {
        let done = consumed
        let unread = table.entries.filter { !done.contains($0.key) }.map { (key: $0.key, location: $0.keyLocation) }
        reportUnknown(unread, known: known)
    }
}
