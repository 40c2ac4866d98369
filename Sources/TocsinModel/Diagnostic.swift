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
        rendered(lines: SourceLines(source))
    }

    /// As `rendered(source:)`, with the line starts found once for every diagnostic of a file.
    public func rendered(lines: SourceLines) -> String {
        var out = description
        guard var current = lines.line(location.line) else { return out }
        if current.last == "\r" { current.removeLast() }
        // A byte-order mark is not a column the user sees (the parser does not count it either).
        if location.line == 1, current.first == "\u{FEFF}" { current.removeFirst() }
        // An empty line quoted under a caret says nothing (a file that could not be read has no
        // lines at all).
        guard !current.isEmpty else { return out }
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

    /// The most diagnostics a report shows; the rest are counted in one line. A file of 400,000
    /// unknown keys must not make a 400,000-entry report (nor a reload reply of that size).
    public static let reportLimit = 100

    /// The first `reportLimit` diagnostics, one `render`ed each, then "and N more errors".
    public static func report(_ diagnostics: [Diagnostic], _ render: (Diagnostic) -> String) -> String {
        var parts = diagnostics.prefix(reportLimit).map(render)
        let rest = diagnostics.dropFirst(reportLimit)
        if !rest.isEmpty {
            let severities = Set(rest.map(\.severity))
            let word = severities.count == 1 ? severities.first!.rawValue : "problem"
            parts.append("and \(rest.count) more \(word)\(rest.count == 1 ? "" : "s")")
        }
        return parts.joined(separator: "\n")
    }
}

/// Where each line of a source starts, found in one pass: rendering N diagnostics then costs the
/// file once plus each quoted line, not the whole file per diagnostic.
public struct SourceLines: Sendable {
    private let bytes: [UInt8]
    /// Byte offset of line n + 1's first byte.
    private let starts: [Int]

    public init(_ source: String) {
        bytes = Array(source.utf8)
        // Lines are split on U+000A: as Characters, "\r\n" is one grapheme and would hide every
        // line break of a CRLF file. A 0x0A byte is always U+000A in UTF-8.
        var starts = [0]
        for (i, b) in bytes.enumerated() where b == 0x0A { starts.append(i + 1) }
        self.starts = starts
    }

    /// The scalars of 1-based line `n` without its line feed; nil past the end.
    public func line(_ n: Int) -> [Unicode.Scalar]? {
        guard n >= 1, n <= starts.count else { return nil }
        let start = starts[n - 1]
        let end = n < starts.count ? starts[n] - 1 : bytes.count
        return Array(String(decoding: bytes[start..<end], as: UTF8.self).unicodeScalars)
    }
}

/// Thrown when a source has one or more error diagnostics; carries them all.
public struct DiagnosticError: Error, Sendable, CustomStringConvertible {
    public var diagnostics: [Diagnostic]
    public init(_ diagnostics: [Diagnostic]) { self.diagnostics = diagnostics }
    /// The first `Diagnostic.reportLimit`, then how many more.
    public var description: String { Diagnostic.report(diagnostics, \.description) }
    public func rendered(source: String) -> String {
        let lines = SourceLines(source)
        return Diagnostic.report(diagnostics) { $0.rendered(lines: lines) }
    }
}
