/// A position in a source text. Lines and columns are 1-based; columns count Unicode scalars,
/// so a caret printed under the column lines up for the text a user sees.
public struct SourceLocation: Hashable, Comparable, Sendable, CustomStringConvertible {
    public var line: Int
    public var column: Int
    public init(line: Int, column: Int) { self.line = line; self.column = column }
    public static func < (a: SourceLocation, b: SourceLocation) -> Bool {
        (a.line, a.column) < (b.line, b.column)
    }
    public var description: String { "\(line):\(column)" }
}

/// One compiler-style message about a source file. Errors are values, collected, and rendered
/// by the caller, so a config with five mistakes reports five.
public struct Diagnostic: Hashable, Sendable, CustomStringConvertible {
    public enum Severity: String, Hashable, Sendable { case error, warning, note }
    public var file: String
    public var location: SourceLocation
    public var severity: Severity
    public var message: String

    public init(file: String, location: SourceLocation, severity: Severity = .error, message: String) {
        self.file = file; self.location = location; self.severity = severity; self.message = message
    }

    /// `file:line:column: error: message`
    public var description: String { "\(file):\(location.line):\(location.column): \(severity.rawValue): \(message)" }

    /// The header line, then the offending source line and a caret under the column.
    public func rendered(source: String) -> String {
        var out = description
        // Lines are split on U+000A scalars: as Characters, "\r\n" is one grapheme and would
        // hide every line break of a CRLF file.
        var lineNumber = 1
        var current: [Unicode.Scalar] = []
        var found = false
        for scalar in source.unicodeScalars {
            if scalar == "\n" {
                if lineNumber == location.line { found = true; break }
                lineNumber += 1
                continue
            }
            if lineNumber == location.line { current.append(scalar) }
        }
        guard location.line >= 1, found || lineNumber == location.line else { return out }
        if current.last == "\r" { current.removeLast() }
        // A byte-order mark is not a column the user sees (the parser does not count it either).
        if location.line == 1, current.first == "\u{FEFF}" { current.removeFirst() }
        var text = ""
        text.unicodeScalars.append(contentsOf: current)
        // Tabs are kept in the caret line so it lines up in any terminal.
        var caret = ""
        for i in 0..<max(0, min(location.column - 1, current.count)) {
            caret.append(current[i] == "\t" ? "\t" : " ")
        }
        out += "\n" + text + "\n" + caret + "^"
        return out
    }
}

/// Thrown when a source has one or more error diagnostics; carries them all.
public struct DiagnosticError: Error, Sendable, CustomStringConvertible {
    public var diagnostics: [Diagnostic]
    public init(_ diagnostics: [Diagnostic]) { self.diagnostics = diagnostics }
    public var description: String { diagnostics.map(\.description).joined(separator: "\n") }
    public func rendered(source: String) -> String {
        diagnostics.map { $0.rendered(source: source) }.joined(separator: "\n")
    }
}
