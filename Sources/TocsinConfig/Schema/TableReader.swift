public import TocsinTime

/// A problem with one field of a table, located at the key or value it concerns.
/// The config file renders it as `file:line:column`; the D-Bus API renders it as `field 'x': ...`.
public struct FieldIssue: Error, Hashable, Sendable, CustomStringConvertible {
    public var field: String
    public var location: SourceLocation
    public var message: String
    /// For a string a TocsinTime parser refused: the 1-based column of the problem inside the
    /// value. A file reports it through `location`; a surface without positions (D-Bus) has only
    /// the message, so `messageWithValueColumn` spells it out.
    public var valueColumn: Int?
    public init(field: String, location: SourceLocation, message: String) {
        self.field = field; self.location = location; self.message = message
    }
    public var description: String { message }

    /// `message`, plus where in the value the problem is when that is known.
    public var messageWithValueColumn: String {
        valueColumn.map { "\(message) (column \($0) of the value)" } ?? message
    }
}

/// Typed, position-aware access to a TOML table that records every problem instead of stopping
/// at the first, and at the end reports the keys nobody asked for (with a spelling suggestion).
///
/// One reader serves `[daemon]`, `[backend.NAME]` and `[[notification]]`, and the D-Bus API
/// converts its `a{sv}` into a table so that both surfaces share one set of rules and messages.
public struct TableReader: Sendable {
    public let table: TOMLTable
    /// How the table is named in messages: `[daemon]`, `[[notification]] #3`, `[backend.alarm]`.
    public let context: String
    public private(set) var issues: [FieldIssue] = []
    private var consumed: Set<String> = []

    public init(_ table: TOMLTable, context: String) {
        self.table = table
        self.context = context
    }

    public func has(_ key: String) -> Bool { table[key] != nil }
    public func location(of key: String) -> SourceLocation { table.entry(key)?.keyLocation ?? table.location }
    public func valueLocation(of key: String) -> SourceLocation { table[key]?.location ?? table.location }

    public mutating func report(_ key: String, _ message: String, atValue: Bool = true) {
        let loc = atValue ? valueLocation(of: key) : location(of: key)
        issues.append(FieldIssue(field: key, location: loc, message: message))
    }

    public mutating func report(_ issue: FieldIssue) { issues.append(issue) }

    /// Marks a key as known without reading it (for keys read by someone else).
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
        if case .string(let s) = n.value {
            // NUL cannot travel over D-Bus or into argv/environments; refuse it at the door.
            if s.utf8.contains(0) {
                report(key, "'\(key)' must not contain a NUL character")
                return nil
            }
            return s
        }
        typeError(key, expected: "a string", found: n.value)
        return nil
    }

    public mutating func requiredString(_ key: String) -> String? {
        if !has(key) {
            issues.append(FieldIssue(field: key, location: table.location,
                                     message: "missing required key '\(key)' in \(context)"))
            consumed.insert(key)
            return nil
        }
        return string(key)
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
            out.append(s)
        }
        return out
    }

    /// A table of string values, in document order.
    public mutating func stringTable(_ key: String) -> [(key: String, value: String)]? {
        guard let n = node(key) else { return nil }
        guard case .table(let t) = n.value else {
            typeError(key, expected: "a table of strings", found: n.value)
            return nil
        }
        var out: [(key: String, value: String)] = []
        for e in t.entries {
            guard case .string(let s) = e.node.value else {
                issues.append(FieldIssue(field: "\(key).\(e.key)", location: e.node.location,
                                         message: "'\(key).\(e.key)' must be a string, found \(e.node.value.typeName)"))
                continue
            }
            out.append((e.key, s))
        }
        return out
    }

    /// One of a fixed set of words.
    public mutating func choice<T>(_ key: String, _ options: [(String, T)]) -> T? {
        guard let s = string(key) else { return nil }
        if let hit = options.first(where: { $0.0 == s }) { return hit.1 }
        let names = options.map { "'\($0.0)'" }.joined(separator: ", ")
        report(key, "'\(key)' must be one of \(names), found '\(s)'")
        return nil
    }

    /// A systemd.time(7) span such as `15min`; `positive` refuses zero and negative spans.
    public mutating func duration(_ key: String, positive: Bool) -> TimeSpan? {
        guard let s = string(key) else { return nil }
        return parse(key, s) { text throws(TimeSyntaxError) in
            positive ? try TimeSpan.parsePositive(text) : try TimeSpan.parse(text)
        }
    }

    /// Runs a TocsinTime parser and maps its column into the file, so a caret lands on the bad character
    /// (exact when the string has no escapes, which is the common case).
    public mutating func parse<T>(_ key: String, _ text: String,
                                  _ body: (String) throws(TimeSyntaxError) -> T) -> T? {
        do {
            return try body(text)
        } catch {
            var loc = valueLocation(of: key)
            if case .string = table[key]?.value { loc.column += error.column }  // opening quote + offset
            var issue = FieldIssue(field: key, location: loc, message: "invalid '\(key)': \(error.message)")
            // A non-positive interval is wrong as a whole; a column would point nowhere useful.
            if case .string = table[key]?.value, error.code != .nonPositiveInterval { issue.valueColumn = error.column }
            issues.append(issue)
            return nil
        }
    }

    /// Reports every key that was never read, suggesting the closest known one.
    public mutating func finish(known: [String]) {
        for e in table.entries where !consumed.contains(e.key) {
            var message = "unknown key '\(e.key)' in \(context)"
            if let s = Suggestion.closest(to: e.key, among: known) { message += "; did you mean '\(s)'?" }
            issues.append(FieldIssue(field: e.key, location: e.keyLocation, message: message))
        }
    }
}

/// "Did you mean" for misspelt keys: the closest candidate within a small edit distance.
public enum Suggestion: Sendable {
    public static func closest(to word: String, among candidates: [String]) -> String? {
        let limit = max(1, min(3, word.count / 3 + 1))
        var best: (String, Int)?
        for c in candidates {
            let d = distance(Array(word.lowercased().unicodeScalars), Array(c.unicodeScalars))
            if d <= limit, d < (best?.1 ?? .max) { best = (c, d) }
        }
        return best?.0
    }

    /// Damerau–Levenshtein (optimal string alignment): a swapped pair of letters is one typo.
    static func distance(_ a: [Unicode.Scalar], _ b: [Unicode.Scalar]) -> Int {
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var d = Array(repeating: Array(repeating: 0, count: b.count + 1), count: a.count + 1)
        for i in 0...a.count { d[i][0] = i }
        for j in 0...b.count { d[0][j] = j }
        for i in 1...a.count {
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
                    d[i][j] = min(d[i][j], d[i - 2][j - 2] + 1)
                }
            }
        }
        return d[a.count][b.count]
    }
}
