import Testing
import TocsinConfig
import TocsinModel

private func parse(_ text: String) throws(DiagnosticError) -> TOMLTable {
    try TOML.parse(text, file: "config.toml")
}

private func diagnostics(_ bytes: [UInt8]) -> [String] {
    do {
        _ = try TOML.parse(bytes, file: "config.toml")
        return []
    } catch {
        return error.diagnostics.map(\.description)
    }
}

private func diagnostics(_ text: String) -> [String] { diagnostics(Array(text.utf8)) }

private func value(_ table: TOMLTable, _ path: String...) -> TOMLValue? {
    var t = table
    for key in path.dropLast() {
        guard case .table(let inner)? = t[key]?.value else { return nil }
        t = inner
    }
    return path.last.flatMap { t[$0]?.value }
}

private func loc(_ line: Int, _ column: Int) -> TocsinModel.SourceLocation { TocsinModel.SourceLocation(line: line, column: column) }

@Suite struct TOMLDiagnosticTests {
    /// One row per message form: the source and the exact first diagnostic.
    static let rows: [(name: String, source: String, expected: String)] = [
        ("duplicate key", "title = 1\n\ntitle = 2\n", "config.toml:3:1: error: duplicate key 'title' (first defined at 1:1)"),
        ("duplicate dotted key", "a.b = 1\na.b = 2", "config.toml:2:3: error: duplicate key 'a.b' (first defined at 1:3)"),
        ("missing equals", "title x", "config.toml:1:7: error: expected '=' after key 'title', found 'x'"),
        ("missing key", "= 1", "config.toml:1:1: error: expected a key, found '='"),
        ("missing value", "a = ", "config.toml:1:5: error: expected a value, found end of file"),
        ("unquoted string", "a = hello", "config.toml:1:5: error: expected a value, found 'hello' (strings must be quoted)"),
        ("text after value", "a = 1 x", "config.toml:1:7: error: expected newline after value, found 'x'"),
        ("overflow", "n = 9223372036854775808", "config.toml:1:5: error: integer 9223372036854775808 does not fit in 64 bits"),
        ("negative overflow", "n = -9223372036854775809", "config.toml:1:5: error: integer -9223372036854775809 does not fit in 64 bits"),
        ("hex overflow", "n = 0x8000000000000000", "config.toml:1:5: error: integer 0x8000000000000000 does not fit in 64 bits"),
        ("leading zero", "n = 012", "config.toml:1:5: error: invalid number '012': leading zeros are not allowed"),
        ("double underscore", "n = 1__2", "config.toml:1:5: error: invalid number '1__2': an underscore must be between digits"),
        ("signed hex", "n = +0x1", "config.toml:1:5: error: invalid number '+0x1': a sign is not allowed on hexadecimal integers"),
        ("bad float", "n = 1.", "config.toml:1:5: error: invalid number '1.': expected a digit at end of file"),
        ("unterminated string", "s = \"abc\nb = 1", "config.toml:1:9: error: unterminated string: expected '\"' before the end of the line, found newline"),
        ("unterminated multi-line", "s = '''abc\n\n", "config.toml:3:1: error: unterminated multi-line string (opened at 1:5): expected \"'''\", found end of file"),
        ("invalid escape", "s = \"a\\qb\"", "config.toml:1:7: error: invalid escape sequence '\\q'"),
        ("surrogate escape", "s = \"\\uD800\"", "config.toml:1:6: error: escape '\\uD800' is not a Unicode scalar value"),
        ("short unicode escape", "s = \"\\u12\"", "config.toml:1:6: error: invalid escape '\\u12': expected 4 hexadecimal digits, found '\"'"),
        ("control in string", "s = \"a\u{01}\"", "config.toml:1:7: error: control character U+0001 must be escaped in a string"),
        ("control in comment", "a = 1 # x\u{7F}", "config.toml:1:10: error: control character U+007F is not allowed in a comment"),
        ("bare carriage return", "a = 1\rb = 2", "config.toml:1:6: error: carriage return must be followed by a newline"),
        ("duplicate table", "[a]\nx = 1\n[a]", "config.toml:3:1: error: duplicate table [a] (first defined at 1:1)"),
        ("table over dotted", "a.b = 1\n[a]", "config.toml:2:1: error: cannot define table [a]: it was already defined by dotted keys at 1:1"),
        ("dotted into header table", "[a.b]\n[a]\nb.c = 1", "config.toml:3:1: error: cannot add to table 'b' with a dotted key: it was defined by a header at 1:1"),
        ("extend inline table", "a = {b = 1}\n[a]", "config.toml:2:1: error: inline table 'a' (defined at 1:1) cannot be extended"),
        ("extend inline by dotted", "a = {b = 1}\na.c = 2", "config.toml:2:1: error: inline table 'a' (defined at 1:1) cannot be extended"),
        ("table over array of tables", "[[a]]\n[a]", "config.toml:2:1: error: cannot define table [a]: 'a' is an array of tables (defined at 1:1)"),
        ("array of tables over table", "[a]\n[[a]]", "config.toml:2:1: error: cannot define array of tables [[a]]: 'a' is already a table (defined at 1:1)"),
        ("append to static array", "a = []\n[[a]]", "config.toml:2:1: error: cannot append to static array 'a' (defined at 1:1) with [[a]]"),
        ("value used as table", "a = 1\na.b = 2", "config.toml:2:1: error: key 'a' is already an integer (defined at 1:1), not a table"),
        ("inline table over several lines (TOML 1.1)", "a = {\n b = 1\n}\nc = 1 x", "config.toml:4:7: error: expected newline after value, found 'x'"),
        ("missing array comma", "a = [1 2]", "config.toml:1:8: error: expected ',' or ']' after array element, found '2'"),
        ("leading array comma", "a = [,1]", "config.toml:1:6: error: expected a value or ']' in array, found ','"),
        ("unclosed header", "[a", "config.toml:1:3: error: expected ']' to close table header, found end of file"),
        ("unclosed array header", "[[a]", "config.toml:1:5: error: expected ']]' to close array of tables header, found end of file"),
        ("multi-line key", "\"\"\"k\"\"\" = 1", "config.toml:1:1: error: a key cannot be a multi-line string"),
        ("bad day", "d = 2021-02-29", "config.toml:1:5: error: invalid date '2021-02-29': day must be 01 to 28"),
        ("bad month", "d = 2021-13-01", "config.toml:1:5: error: invalid date '2021-13-01': month must be 01 to 12"),
        ("bad hour", "t = 24:00:00", "config.toml:1:5: error: invalid time '24:00:00': hour must be 00 to 23"),
        ("bad offset", "t = 1979-05-27T07:32:00+24:00", "config.toml:1:5: error: invalid date-time '1979-05-27T07:32:00+24:00': offset must be at most 23:59"),
        ("columns count scalars", "s = \"é日\" x", "config.toml:1:10: error: expected newline after value, found 'x'"),
        ("non-ASCII bare key", "é = 1", "config.toml:1:1: error: expected a key, found 'é' (U+00E9)"),
        ("text after header", "[a] x", "config.toml:1:5: error: expected newline after table header, found 'x'"),
    ]

    @Test func eachMessageFormHasExactPosition() {
        for row in Self.rows {
            let found = diagnostics(row.source)
            #expect(found.first == row.expected, "row '\(row.name)': got \(found)")
        }
    }

    @Test func invalidUTF8IsReportedAtTheByte() {
        let bytes: [UInt8] = Array("a = 1\nb = \"x".utf8) + [0xFF] + Array("\"\nc = \"".utf8) + [0xC3] + Array("\"".utf8)
        #expect(diagnostics(bytes) == [
            "config.toml:2:7: error: invalid UTF-8 byte 0xFF",
            "config.toml:3:6: error: invalid UTF-8 byte 0xC3",
        ])
        // Overlong encodings, surrogates and truncated sequences are all invalid.
        for (name, bad) in [("overlong", [0xC0, 0xAF]), ("surrogate", [0xED, 0xA0, 0x80]),
                            ("truncated", [0xE2, 0x82]), ("beyond U+10FFFF", [0xF4, 0x90, 0x80, 0x80])] as [(String, [UInt8])] {
            let found = diagnostics(Array("s = '".utf8) + bad + Array("'".utf8))
            #expect(found.first?.hasPrefix("config.toml:1:6: error: invalid UTF-8 byte") == true, "row '\(name)': got \(found)")
        }
    }

    /// One document, so each error must leave the lines after it parsed as if it were not there:
    /// a row is a line of that document and the one diagnostic reported on it (nil: none).
    static let severalErrors: [(line: String, expected: String?)] = [
        ("a = 1", nil),
        ("b = = 2", "config.toml:2:5: error: expected a value, found '='"),
        ("c = [1,", nil),
        ("  2 3,", "config.toml:4:5: error: expected ',' or ']' after array element, found '3'"),
        ("  4]", nil),
        ("d = \"ok\"", nil),
        ("d = 1", "config.toml:7:1: error: duplicate key 'd' (first defined at 6:1)"),
        ("e = {x = 1", nil),
        ("f = 2", "config.toml:9:1: error: expected ',' or '}' in inline table (opened at 8:5), found 'f'"),
        ("[t]", nil),
        ("g = 'unterminated", "config.toml:11:18: error: unterminated string: expected \"'\" before the end of the line, found newline"),
        ("h = 3", nil),
    ]

    @Test func reportsSeveralErrorsWithoutCascades() {
        let source = Self.severalErrors.map(\.line).joined(separator: "\n")
        #expect(diagnostics(source) == Self.severalErrors.compactMap(\.expected))
    }

    @Test func brokenArraysAndInlineTablesAreSkippedToTheirEnd() {
        let source = """
            person = {
              first = "Tom"
              last = "Preston-Werner"
            }
            list = [ 1, 2
              3, 4,
              [5, 6],
            ]
            ok = 1
            ok = 2
            """
        #expect(diagnostics(source) == [
            "config.toml:3:3: error: expected ',' or '}' in inline table (opened at 1:10), found 'l'",
            "config.toml:6:3: error: expected ',' or ']' after array element, found '3'",
            "config.toml:10:1: error: duplicate key 'ok' (first defined at 9:1)",
        ])
        // A line with a syntax error defines nothing, so its corrected repeat is no duplicate.
        #expect(diagnostics("a = 'x' 'y'\na = 'xy'\n") == ["config.toml:1:9: error: expected newline after value, found '''"])
    }

    @Test func keysAfterABadHeaderDoNotCascade() {
        #expect(diagnostics("[a]\nx = 1\n[a]\nx = 2\ny = 3\n") == [
            "config.toml:3:1: error: duplicate table [a] (first defined at 1:1)",
        ])
    }

    @Test func deepNestingIsAnErrorNotACrash() {
        let arrays = "a = " + String(repeating: "[", count: 100_000)
        #expect(diagnostics(arrays) == ["config.toml:1:133: error: values nest deeper than 128 levels"])
        let tables = "a = " + String(repeating: "{b = ", count: 10_000)
        #expect(diagnostics(tables).first?.hasSuffix("error: values nest deeper than 128 levels") == true)
        let keys = Array(repeating: "k", count: 10_000).joined(separator: ".") + " = 1"
        #expect(diagnostics(keys).first?.hasSuffix("error: key nests tables deeper than 128 levels") == true)
        let header = "[" + Array(repeating: "k", count: 10_000).joined(separator: ".") + "]"
        #expect(diagnostics(header).first?.hasSuffix("error: key nests tables deeper than 128 levels") == true)
        let fine = "a = " + String(repeating: "[", count: 100) + String(repeating: "]", count: 100)
        #expect(diagnostics(fine).isEmpty)
    }

    /// The documented limit is 128 levels of tables, arrays and inline tables (tomllib takes
    /// these too); regression: the key holding each inline table counted as a level of its own,
    /// so 65 nested inline tables were refused.
    @Test("128 nested arrays, inline tables, or a mix in a [table] parse; one more is refused", arguments: [
        ("arrays", "a = ", "[", "]", 128),
        ("inline tables", "a = ", "{b = ", "}", 128),
        ("inline tables under [t]", "[t]\na = ", "{b = ", "}", 127),
        ("dotted key into inline tables", "x.y = ", "{b = ", "}", 127),
    ])
    func nestingLimit(_ name: String, _ prefix: String, _ open: String, _ close: String, _ levels: Int) {
        func doc(_ n: Int) -> String { prefix + String(repeating: open, count: n) + "1" + String(repeating: close, count: n) + "\n" }
        #expect(diagnostics(doc(levels)).isEmpty, "\(name): \(levels) levels")
        #expect(diagnostics(doc(levels + 1)).first?.hasSuffix("error: values nest deeper than 128 levels") == true, "\(name): \(levels + 1) levels")
    }

    @Test func renderingShowsLineAndCaret() {
        let source = "a = 1\r\ntitle x\r\n"
        do {
            _ = try TOML.parse(source, file: "config.toml")
            Issue.record("accepted invalid input")
        } catch {
            #expect(error.rendered(source: source) == "config.toml:2:7: error: expected '=' after key 'title', found 'x'\ntitle x\n      ^")
        }
        let tabbed = "\tk = \"é\" x"
        do {
            _ = try TOML.parse(tabbed, file: "f")
            Issue.record("accepted invalid input")
        } catch {
            #expect(error.rendered(source: tabbed).hasSuffix("\n\tk = \"é\" x\n\t        ^"), "\(error.rendered(source: tabbed))")
        }
        let bom = "\u{FEFF}a = 1 x"
        do {
            _ = try TOML.parse(bom, file: "f")
            Issue.record("accepted invalid input")
        } catch {
            #expect(error.rendered(source: bom) == "f:1:7: error: expected newline after value, found 'x'\na = 1 x\n      ^")
        }
    }

    /// Random bytes and mutations of a valid document: every outcome must be a table or
    /// diagnostics with in-range positions; a crash or hang fails the whole test run.
    @Test func arbitraryBytesNeverCrash() {
        var rng = TOMLSplitMix(seed: 42)
        let seed = Array("""
            title = "T\\u00e9st" # c
            [server]
            ports = [ 8000, 0x1F, 0o7, 0b1, 1e3, -inf, nan ]
            when = 1979-05-27T07:32:00.999999999-07:00
            "a b".'c' = { x = [ { y = '''z''' } ], t = 07:00:00 }
            [[n]]
            s = \"\"\"
            line \\
              end\"\"\"
            """.utf8)
        let tokens: [[UInt8]] = ["\"", "'''", "[", "]]", "{", "}", "=", ".", ",", "#", "\\", "\r", "\n", "\u{0}"]
            .map { Array($0.utf8) } + [[0xFF], [0xC3], [0xED, 0xA0, 0x80]]
        for _ in 0..<3000 {
            var doc = seed
            for _ in 0..<Int(rng.next() % 4 + 1) {
                let at = Int(rng.next() % UInt64(doc.count + 1))
                switch rng.next() % 4 {
                case 0 where at < doc.count: doc[at] = UInt8(truncatingIfNeeded: rng.next())
                case 1: doc.removeSubrange(at...)
                case 2: doc.insert(contentsOf: tokens[Int(rng.next() % UInt64(tokens.count))], at: at)
                default: doc.insert(UInt8(truncatingIfNeeded: rng.next()), at: at)
                }
            }
            do {
                _ = try TOML.parse(doc, file: "fuzz")
            } catch {
                let lines = doc.filter { $0 == 10 }.count + 1
                #expect(!error.diagnostics.isEmpty)
                for d in error.diagnostics {
                    #expect(d.location.line >= 1 && d.location.line <= lines && d.location.column >= 1, "\(d) in \(doc)")
                }
            }
        }
    }
}

@Suite struct TOMLValueTests {
    @Test func keysAndValuesKeepTheirPositions() throws {
        let table = try parse("""
            title = "x"
            [server]
              port = 8080
              tags = [ "a",
                "b" ]
              [server.limits]
              "quoted key" . x = 1
            "é" = 'ü'
            [[n]]
            k = { a = 1, b.c = 2 }
            [[n]]
            """)
        #expect(table.location == loc(1, 1))
        let title = try #require(table.entry("title"))
        #expect(title.keyLocation == loc(1, 1))
        #expect(title.node.location == loc(1, 9))

        let serverEntry = try #require(table.entry("server"))
        #expect(serverEntry.keyLocation == loc(2, 2))
        #expect(serverEntry.node.location == loc(2, 1))
        guard case .table(let server) = serverEntry.node.value else { Issue.record("server is not a table"); return }
        #expect(server.location == loc(2, 1))
        #expect(server.entry("port")?.keyLocation == loc(3, 3))
        #expect(server.entry("port")?.node.location == loc(3, 10))
        guard case .array(let tags)? = server["tags"]?.value else { Issue.record("tags"); return }
        #expect(tags.map(\.location) == [loc(4, 12), loc(5, 5)])

        guard case .table(let limits)? = server["limits"]?.value else { Issue.record("limits"); return }
        #expect(limits.location == loc(6, 3))
        #expect(server.entry("limits")?.keyLocation == loc(6, 11))
        #expect(limits.entry("quoted key")?.keyLocation == loc(7, 3))
        guard case .table(let quoted)? = limits["quoted key"]?.value else { Issue.record("quoted"); return }
        #expect(quoted.entry("x")?.keyLocation == loc(7, 18))
        #expect(quoted.entry("x")?.node.location == loc(7, 22))
        #expect(limits.entry("quoted key")?.node.location == loc(7, 3), "a dotted-key table is located at its key")

        #expect(limits.entry("é")?.keyLocation == loc(8, 1))
        #expect(limits.entry("é")?.node.location == loc(8, 7), "columns count Unicode scalars")

        guard case .array(let ns)? = table["n"]?.value else { Issue.record("n"); return }
        #expect(ns.map(\.location) == [loc(9, 1), loc(11, 1)])
        #expect(table.entry("n")?.node.location == loc(9, 1))
        guard case .table(let n0) = ns[0].value, case .table(let k)? = n0["k"]?.value else { Issue.record("k"); return }
        #expect(k.location == loc(10, 5))
        #expect(k.entry("b")?.keyLocation == loc(10, 14))
        #expect(value(k, "b", "c").map { if case .integer(2) = $0 { true } else { false } } == true)
    }

    /// Bare keys of up to 15 bytes come from a cache of the ones made last, by their bytes: keys
    /// of every length around the cache's 8- and 15-byte edges, keys that differ only in their
    /// first or last byte, keys that share a slot, and keys too near the end of the input to be
    /// read as words must each read back as written.
    @Test func repeatedKeysOfEveryLengthReadBackAsWritten() throws {
        let alphabet = Array("abcdefghijklmnopqrstuvwxyz0123456789_-")
        var keys: [String] = []
        for n in 1...17 {
            let key = String((0..<n).map { alphabet[($0 * 7 + n) % alphabet.count] })
            keys += [key, String(key.dropLast()) + "Z", "Q" + String(key.dropFirst())]
        }
        keys += (0..<300).map { "k\($0)-\($0 % 7)" }
        try #require(Set(keys).count == keys.count, "the keys are distinct")
        var text = ""
        for t in 0..<3 {
            text += "[[t]]\n" + keys.enumerated().map { "\($1) = \($0 + 1000 * t)\n" }.joined()
        }
        text += "Zy = -1\nZz=-2"
        let table = try parse(text)
        guard case .array(let tables)? = table["t"]?.value else { Issue.record("t is not an array of tables"); return }
        #expect(tables.count == 3)
        for (t, node) in tables.enumerated() {
            guard case .table(let entries) = node.value else { Issue.record("table \(t)"); continue }
            #expect(entries.entries.count == keys.count + (t == 2 ? 2 : 0), "table \(t): no key lost or merged")
            for (i, key) in keys.enumerated() {
                guard case .integer(let v)? = entries[key]?.value else { Issue.record("table \(t): key \(key) missing"); continue }
                #expect(v == Int64(i + 1000 * t), "table \(t): key \(key)")
            }
            if t == 2 {
                for (key, v) in [("Zy", Int64(-1)), ("Zz", -2)] {
                    guard case .integer(let got)? = entries[key]?.value else { Issue.record("key \(key) at the end missing"); continue }
                    #expect(got == v, "key \(key) at the end")
                }
            }
        }
    }

    @Test func implicitTableTakesTheExplicitHeaderPosition() throws {
        let table = try parse("[a.b]\nx = 1\n\n[a]\ny = 2\n")
        #expect(table.entry("a")?.node.location == loc(4, 1))
        #expect(table.entry("a")?.keyLocation == loc(4, 2))
    }

    @Test func scalarForms() throws {
        let t = try parse(#"""
            i1 = +99
            i2 = -9223372036854775808
            i3 = 0x7FFF_FFFF_FFFF_FFFF
            i4 = 0o755
            i5 = 0b1101
            i6 = 1_000
            f1 = 6.626e-34
            f2 = -inf
            f3 = +nan
            f4 = 1e1_0
            f5 = -0.0
            b = false
            s1 = "tab\there \u00E9 \U0001F600 \"q\""
            s2 = 'C:\path'
            s3 = """
            one \
               two\r\n"""
            s4 = '''
            raw \n ''line'''''
            s5 = """""x"""""
            odt = 1979-05-27 07:32:00.123456789123+05:30
            ldt = 1979-05-27t07:32:00
            ld = 1979-05-27
            lt = 00:32:00.5
            z = 1979-05-27T07:32:00z
            """#)
        func int(_ k: String) -> Int64? { if case .integer(let v)? = t[k]?.value { v } else { nil } }
        func dbl(_ k: String) -> Double? { if case .float(let v)? = t[k]?.value { v } else { nil } }
        func str(_ k: String) -> String? { if case .string(let v)? = t[k]?.value { v } else { nil } }
        func dt(_ k: String) -> TOMLDateTime? { if case .dateTime(let v)? = t[k]?.value { v } else { nil } }
        #expect(int("i1") == 99)
        #expect(int("i2") == Int64.min)
        #expect(int("i3") == Int64.max)
        #expect(int("i4") == 0o755)
        #expect(int("i5") == 13)
        #expect(int("i6") == 1000)
        #expect(dbl("f1") == 6.626e-34)
        #expect(dbl("f2") == -.infinity)
        #expect(dbl("f3")?.isNaN == true)
        #expect(dbl("f4") == 1e10)
        #expect(dbl("f5") == 0 && dbl("f5")?.sign == .minus)
        if case .boolean(false)? = t["b"]?.value {} else { Issue.record("b") }
        #expect(str("s1") == "tab\there \u{E9} \u{1F600} \"q\"")
        #expect(str("s2") == #"C:\path"#)
        #expect(str("s3") == "one two\r\n")
        #expect(str("s4") == "raw \\n ''line''")
        #expect(str("s5") == "\"\"x\"\"")
        #expect(dt("odt") == TOMLDateTime(date: TOMLLocalDate(year: 1979, month: 5, day: 27),
                                          time: TOMLLocalTime(hour: 7, minute: 32, second: 0, nanosecond: 123_456_789),
                                          offsetMinutes: 330))
        #expect(dt("ldt") == TOMLDateTime(date: TOMLLocalDate(year: 1979, month: 5, day: 27),
                                          time: TOMLLocalTime(hour: 7, minute: 32, second: 0), offsetMinutes: nil))
        #expect(dt("ld") == TOMLDateTime(date: TOMLLocalDate(year: 1979, month: 5, day: 27), time: nil, offsetMinutes: nil))
        #expect(dt("lt") == TOMLDateTime(date: nil, time: TOMLLocalTime(hour: 0, minute: 32, second: 0, nanosecond: 500_000_000),
                                         offsetMinutes: nil))
        #expect(dt("z")?.offsetMinutes == 0)
        #expect(t["odt"]?.value.typeName == "offset date-time")
        #expect(t["lt"]?.value.typeName == "local time")
    }

    @Test func crlfLineEndings() throws {
        let t = try parse("a = 1\r\nb = \"\"\"x\r\ny\"\"\"\r\n# c\r\n[t]\r\nc = [\r\n 1,\r\n]\r\n")
        if case .string("x\ny")? = t["b"]?.value {} else { Issue.record("b = \(String(describing: t["b"]?.value))") }
        #expect(t.entry("b")?.node.location == loc(2, 5))
        #expect(t.entry("t")?.node.location == loc(5, 1))
        #expect(diagnostics("a = 1\r\nb = 'x\r'\r\n") == ["config.toml:2:7: error: unterminated string: expected \"'\" before the end of the line, found carriage return"])
    }

    @Test func byteOrderMarkIsAccepted() throws {
        let t = try TOML.parse([0xEF, 0xBB, 0xBF] + Array("a = 1\nb = 2".utf8), file: "f")
        #expect(t.entry("a")?.keyLocation == loc(1, 1))
        #expect(t.entry("a")?.node.location == loc(1, 5))
        #expect(t.entry("b")?.keyLocation == loc(2, 1))
        #expect(diagnostics([0xEF, 0xBB] + Array("a = 1".utf8)).first == "config.toml:1:1: error: invalid UTF-8 byte 0xEF")
    }

    @Test func taggedJSONEncoding() throws {
        let t = try parse("a = [1, 'x', 1.5, true, 1979-05-27T07:32:00.250Z, 07:00:00]\n[b]\n\"q\\\"\" = -inf\n")
        #expect(TOMLTaggedJSON.encode(t) == """
            {"a":[{"type":"integer","value":"1"},{"type":"string","value":"x"},{"type":"float","value":"1.5"},\
            {"type":"bool","value":"true"},{"type":"datetime","value":"1979-05-27T07:32:00.25Z"},\
            {"type":"time-local","value":"07:00:00"}],"b":{"q\\"":{"type":"float","value":"-inf"}}}

            """)
    }
}

/// Deterministic generator so fuzz failures reproduce.
struct TOMLSplitMix {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
