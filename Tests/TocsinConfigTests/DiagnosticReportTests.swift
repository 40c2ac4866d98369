import Testing
import TocsinConfig
import TocsinModel

/// Rendering diagnostics: one pass over the file however many there are, and a report that
/// shows the first 100 and counts the rest.
@Suite struct DiagnosticReportTests {
    static func diagnostics(_ n: Int, severity: Diagnostic.Severity = .error) -> [Diagnostic] {
        (0..<n).map { Diagnostic(file: "c.toml", location: SourceLocation(line: $0 + 1, column: 1), severity: severity, message: "m\($0)") }
    }

    struct CapRow: Sendable, CustomTestStringConvertible {
        var errors: Int
        var warnings: Int
        var lastLine: String
        var testDescription: String { "\(errors) errors, \(warnings) warnings" }
    }

    @Test("the first 100 are shown, then one line counts the rest", arguments: [
        CapRow(errors: 100, warnings: 0, lastLine: "c.toml:100:1: error: m99"),
        CapRow(errors: 101, warnings: 0, lastLine: "and 1 more error"),
        CapRow(errors: 40_000, warnings: 0, lastLine: "and 39900 more errors"),
        CapRow(errors: 100, warnings: 2, lastLine: "and 2 more warnings"),
        CapRow(errors: 102, warnings: 2, lastLine: "and 4 more problems"),
    ])
    func capped(_ row: CapRow) {
        let diags = Self.diagnostics(row.errors) + Self.diagnostics(row.warnings, severity: .warning)
        let lines = DiagnosticError(diags).description.split(separator: "\n")
        #expect(lines.count == min(row.errors + row.warnings, 100) + (row.errors + row.warnings > 100 ? 1 : 0), "row \(row)")
        #expect(lines.last.map(String.init) == row.lastLine, "row \(row)")
    }

    @Test("rendering quotes each line from the one index: CRLF, a BOM, the last line without a newline, a line past the end")
    func rendering() {
        let source = "\u{FEFF}a = 1\r\nb\t= 2\nlast"
        let diags = [SourceLocation(line: 1, column: 5), SourceLocation(line: 2, column: 4), SourceLocation(line: 3, column: 2),
                     SourceLocation(line: 4, column: 1)].map { Diagnostic(file: "c.toml", location: $0, message: "x") }
        #expect(DiagnosticError(diags).rendered(source: source) == """
            c.toml:1:5: error: x
            a = 1
                ^
            c.toml:2:4: error: x
            b\t= 2
             \t ^
            c.toml:3:2: error: x
            last
             ^
            c.toml:4:1: error: x
            """)
    }

    @Test("an empty line is not quoted: no caret under nothing, and none for a file with no text")
    func emptyLines() {
        let at = { (line: Int) in Diagnostic(file: "c.toml", location: SourceLocation(line: line, column: 1), message: "x") }
        #expect(DiagnosticError([at(2)]).rendered(source: "a = 1\n\r\nb = 2\n") == "c.toml:2:1: error: x")
        #expect(DiagnosticError([at(1)]).rendered(source: "") == "c.toml:1:1: error: x")
    }

    @Test("40,000 diagnostics of a 40,000-line file render once each from a single index")
    func manyLines() {
        let source = (0..<40_000).map { "k\($0) = 1" }.joined(separator: "\n")
        let lines = SourceLines(source)
        #expect(lines.line(40_000).map { String(String.UnicodeScalarView($0)) } == "k39999 = 1")
        #expect(lines.line(40_001) == nil)
        #expect(lines.line(0) == nil)
        let report = DiagnosticError(Self.diagnostics(40_000)).rendered(source: source)
        #expect(report.split(separator: "\n").count == 100 * 3 + 1)
        #expect(report.hasSuffix("\nand 39900 more errors"))
    }
}
