import Testing
import TocsinConfig
import TocsinTime
import TocsinModel

private func diagnostics(_ toml: String) -> [String] {
    switch ConfigLoader.load(bytes: Array(toml.utf8), file: "c.toml") {
    case .success: return []
    case .failure(let e): return e.diagnostics.map { "\($0.location.line):\($0.location.column): \($0.message)" }
    }
}

private let past = "reaches past 9999-12-31T23:59:59Z, the latest instant Tocsin schedules"

/// Every duration and instant a config (and with the same reader, a `Schedule` call) can write,
/// against the one limit: what can be refused before "now" is known, at the value.
@Suite("Time limit in the config")
struct TimeLimitConfigTests {
    static let rows: [SchemaRow] = [
        SchemaRow(name: "after 292000y (scheduled year 294032)", toml: "[[notification]]\ntitle = \"x\"\nafter = \"292000y\"\n",
                  expected: ["3:9: 'after' 292000y \(past)"]),
        SchemaRow(name: "after 9223372036854s (was: 'at' is in the past)", toml: "[[notification]]\ntitle = \"x\"\nafter = \"9223372036854s\"\n",
                  expected: ["3:9: 'after' 9223372036854s \(past)"]),
        SchemaRow(name: "every 292000y", toml: "[[notification]]\ntitle = \"x\"\nevery = \"292000y\"\n",
                  expected: ["3:9: 'every' 292000y \(past)"]),
        SchemaRow(name: "max_late 292000y", toml: "[[notification]]\ntitle = \"x\"\nafter = \"1h\"\nmax_late = \"292000y\"\n",
                  expected: ["4:12: 'max_late' 292000y \(past)"]),
        SchemaRow(name: "a remind_before offset of 292000y, at that element",
                  toml: "[[notification]]\ntitle = \"x\"\nat = 2030-01-01T10:00:00Z\nremind_before = [\"1h\", \"292000y\"]\n",
                  expected: ["4:24: 'remind_before' 292000y \(past)"]),
        SchemaRow(name: "at @9000000000000 (year 287,000)", toml: "[[notification]]\ntitle = \"x\"\nat = \"@9000000000000\"\n",
                  expected: ["3:6: 'at' @9000000000000 \(past)"]),
        SchemaRow(name: "at +292000y", toml: "[[notification]]\ntitle = \"x\"\nat = \"+292000y\"\n",
                  expected: ["3:6: 'at' +292000y \(past)"]),
        SchemaRow(name: "until @9000000000000", toml: "[[notification]]\ntitle = \"x\"\nevery = \"1h\"\nuntil = \"@9000000000000\"\n",
                  expected: ["4:9: 'until' @9000000000000 \(past)"]),
        SchemaRow(name: "starting before year 1", toml: "[[notification]]\ntitle = \"x\"\nevery = \"1h\"\nstarting = \"@-90000000000\"\n",
                  expected: ["4:12: 'starting' @-90000000000 is before 0001-01-01T00:00:00Z, the earliest instant Tocsin accepts"]),
        SchemaRow(name: "a [daemon] duration: history_max_age 292000y", toml: "[daemon]\nhistory_max_age = \"292000y\"\n",
                  expected: ["2:19: 'history_max_age' 292000y \(past)"]),
    ]

    @Test("regression: each field past the limit is refused by name, at its value", arguments: rows)
    func refused(_ row: SchemaRow) {
        #expect(diagnostics(row.toml) == row.expected, "row '\(row.name)'")
    }

    @Test("values at the limit are accepted")
    func atTheLimit() {
        let toml = """
            [[notification]]
            title = "x"
            at = "9999-12-31T23:59:59Z"

            [[notification]]
            title = "y"
            every = "8029y"
            until = "@253402300799"
            """
        #expect(diagnostics(toml) == [])
    }
}
