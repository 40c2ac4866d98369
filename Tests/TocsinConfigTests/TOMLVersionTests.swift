import Foundation
import Testing
import TocsinConfig
import TocsinModel

private func diagnostics(_ text: String, _ version: TOMLVersion) -> [String] {
    do {
        _ = try TOML.parse(text, file: "config.toml", version: version)
        return []
    } catch {
        return error.diagnostics.map(\.description)
    }
}

/// What TOML 1.1 adds, read in both modes: 1.1 accepts it with the right value, 1.0 rejects it
/// with a diagnostic that names the feature as TOML 1.1, at the feature.
@Suite struct TOMLVersionTests {
    static let multiline = "inline tables may span lines only in TOML 1.1 (reading as TOML 1.0)"
    static let trailingComma = "a trailing comma in an inline table is allowed only in TOML 1.1 (reading as TOML 1.0)"
    static let escapeE = "the escape '\\e' is allowed only in TOML 1.1 (reading as TOML 1.0)"
    static let escapeX = "the escape '\\xHH' is allowed only in TOML 1.1 (reading as TOML 1.0)"
    static let noSeconds = "a time without seconds is allowed only in TOML 1.1 (reading as TOML 1.0)"

    /// The source, the exact diagnostics in 1.0 mode, and the tagged JSON that 1.1 mode decodes.
    static let rows: [(name: String, source: String, in10: [String], json11: String)] = [
        ("newline after the brace", "a = {\n  b = 1 }",
         ["config.toml:1:6: error: \(multiline)"],
         #"{"a":{"b":{"type":"integer","value":"1"}}}"#),
        ("newline before the closing brace", "a = {b = 1\n}",
         ["config.toml:1:11: error: \(multiline)"],
         #"{"a":{"b":{"type":"integer","value":"1"}}}"#),
        ("comment inside an inline table", "a = { # why\n b = 1 }",
         ["config.toml:1:7: error: \(multiline)"],
         #"{"a":{"b":{"type":"integer","value":"1"}}}"#),
        ("one message per multi-line table", "a = {\n b = 1,\n c = 2\n}",
         ["config.toml:1:6: error: \(multiline)"],
         #"{"a":{"b":{"type":"integer","value":"1"},"c":{"type":"integer","value":"2"}}}"#),
        ("only the inner table spans lines", "a = { b = [1,\n 2], c = {\n} }",
         ["config.toml:2:11: error: \(multiline)"],
         #"{"a":{"b":[{"type":"integer","value":"1"},{"type":"integer","value":"2"}],"c":{}}}"#),
        ("trailing comma", "a = {b = 1,}",
         ["config.toml:1:11: error: \(trailingComma)"],
         #"{"a":{"b":{"type":"integer","value":"1"}}}"#),
        ("multi-line actions with a trailing comma", "actions = {\n  open = \"Open\",\n}",
         ["config.toml:1:12: error: \(multiline)", "config.toml:2:16: error: \(trailingComma)"],
         #"{"actions":{"open":{"type":"string","value":"Open"}}}"#),
        ("escape \\e", "s = \"a\\eb\"",
         ["config.toml:1:7: error: \(escapeE)"],
         #"{"s":{"type":"string","value":"a\u001bb"}}"#),
        ("escape \\x", "s = \"\\x41\\xe9\"",
         ["config.toml:1:6: error: \(escapeX)", "config.toml:1:10: error: \(escapeX)"],
         #"{"s":{"type":"string","value":"Aé"}}"#),
        ("escape \\e in a multi-line string", "s = \"\"\"\n\\e\"\"\"",
         ["config.toml:2:1: error: \(escapeE)"],
         #"{"s":{"type":"string","value":"\u001b"}}"#),
        ("local time without seconds", "t = 07:32",
         ["config.toml:1:5: error: \(noSeconds)"],
         #"{"t":{"type":"time-local","value":"07:32:00"}}"#),
        ("local date-time without seconds", "t = 1979-05-27T07:32",
         ["config.toml:1:16: error: \(noSeconds)"],
         #"{"t":{"type":"datetime-local","value":"1979-05-27T07:32:00"}}"#),
        ("offset date-time without seconds", "t = 1979-05-27 07:32-07:00",
         ["config.toml:1:16: error: \(noSeconds)"],
         #"{"t":{"type":"datetime","value":"1979-05-27T07:32:00-07:00"}}"#),
        ("a later error is still reported", "a = {b = 1,}\nc = x",
         ["config.toml:1:11: error: \(trailingComma)",
          "config.toml:2:5: error: expected a value, found 'x' (strings must be quoted)"],
         ""),
    ]

    @Test func eachFeatureIsNamedIn10ModeAndReadIn11Mode() {
        for row in Self.rows {
            #expect(diagnostics(row.source, .v1_0) == row.in10, "row '\(row.name)': 1.0 mode")
            if row.json11.isEmpty { continue }
            do {
                let table = try TOML.parse(row.source, file: "config.toml", version: .v1_1)
                let actual = try JSONSerialization.jsonObject(with: Data(TOMLTaggedJSON.encode(table).utf8))
                let expected = try JSONSerialization.jsonObject(with: Data(row.json11.utf8))
                let difference = TOMLTaggedJSONComparison.difference(expected: expected, actual: actual)
                #expect(difference == nil, "row '\(row.name)': 1.1 mode: \(difference ?? "")")
            } catch {
                Issue.record("row '\(row.name)': 1.1 mode rejects: \(error)")
            }
        }
    }

    /// Errors in 1.1's new forms: the exact first diagnostic.
    static let errorRows: [(name: String, source: String, expected: String)] = [
        ("unterminated multi-line inline table", "a = {b = 1,\n",
         "config.toml:2:1: error: unterminated inline table (opened at 1:5): expected '}', found end of file"),
        ("missing comma between lines", "a = {\n b = 1\n c = 2\n}",
         "config.toml:3:2: error: expected ',' or '}' in inline table (opened at 1:5), found 'c'"),
        ("double comma", "a = {b = 1,,}", "config.toml:1:12: error: expected a key or '}' in inline table, found ','"),
        ("leading comma", "a = {\n, b = 1}", "config.toml:2:1: error: expected a key or '}' in inline table, found ','"),
        ("newline between key and '='", "a = {b\n= 1}", "config.toml:1:7: error: expected '=' after key 'b', found newline"),
        ("newline between '=' and value", "a = {b =\n1}", "config.toml:1:9: error: expected a value, found newline"),
        ("short \\x escape", "s = \"\\x4\"", "config.toml:1:6: error: invalid escape '\\x4': expected 2 hexadecimal digits, found '\"'"),
        ("\\x escape without digits", "s = \"\\xg0\"", "config.toml:1:6: error: invalid escape '\\x': expected 2 hexadecimal digits, found 'g'"),
        ("fraction without seconds", "t = 07:32.5", "config.toml:1:10: error: expected newline after value, found '.'"),
        ("one-digit minutes", "t = 07:3", "config.toml:1:5: error: invalid time '07:': expected two-digit minutes, found '3'"),
        ("minute out of range without seconds", "t = 07:60", "config.toml:1:5: error: invalid time '07:60': minute must be 00 to 59"),
    ]

    @Test func errorsInTheNewFormsHaveExactPositions() {
        for row in Self.errorRows {
            let found = diagnostics(row.source, .v1_1)
            #expect(found.first == row.expected, "row '\(row.name)': got \(found)")
        }
    }

    /// An inline table left open over several lines ends at the next table header: the header
    /// is read as such, so its keys do not land in the table before it.
    @Test func anUnclosedMultilineInlineTableStopsAtTheNextHeader() {
        let source = "k = 0\na = {\n  x = 1\n  y = 2\n[t]\nk = 1\n"
        #expect(diagnostics(source, .v1_1) == [
            "config.toml:4:3: error: expected ',' or '}' in inline table (opened at 2:5), found 'y'",
        ])
    }

    @Test func versionSpellings() {
        for (text, expected) in [("1.0", TOMLVersion.v1_0), ("1.1", .v1_1), ("1.0.0", .v1_0), ("1.1.0", .v1_1)] {
            #expect(TOMLVersion(text) == expected, "row '\(text)'")
        }
        for text in ["", "1", "1.2", "2.0", "v1.1"] {
            #expect(TOMLVersion(text) == nil, "row '\(text)'")
        }
        #expect(TOMLVersion.v1_1.description == "1.1")
    }
}
