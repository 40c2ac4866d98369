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

private let rule = "closer than [daemon] min_period (1s); a notification may fire at most once per min_period"

/// `[daemon] min_period` in the config file: every trigger kind, at and below the floor, and the
/// setting's own range. The same check serves D-Bus `Schedule` (see `SecurityTests`).
@Suite("Config: min_period")
struct MinPeriodConfigTests {
    static let rows: [SchemaRow] = [
        SchemaRow(name: "every below the floor, caret on the value",
                  toml: "[[notification]]\ntitle = \"x\"\nevery = \"500ms\"\n",
                  expected: ["3:9: 'every' is 500ms, \(rule)"]),
        SchemaRow(name: "every at the floor is accepted",
                  toml: "[[notification]]\ntitle = \"x\"\nevery = \"1s\"\n",
                  expected: []),
        SchemaRow(name: "the issue's calendar flood",
                  toml: "[[notification]]\ntitle = \"x\"\non_calendar = \"*-*-* *:*:00/0.000001\"\n",
                  expected: ["3:15: 'on_calendar' expression '*-*-* *:*:00/0.000001' can elapse 1us after the elapse before, \(rule)"]),
        SchemaRow(name: "calendar flood across midnight only",
                  toml: "[[notification]]\ntitle = \"x\"\non_calendar = \"*-*-* 00,23:00,59:00,59.5\"\n",
                  expected: ["3:15: 'on_calendar' expression '*-*-* 00,23:00,59:00,59.500000' can elapse 500ms after the elapse before, \(rule)"]),
        SchemaRow(name: "every second by calendar is accepted",
                  toml: "[[notification]]\ntitle = \"x\"\non_calendar = \"*:*:*\"\n",
                  expected: []),
        SchemaRow(name: "remind_before offsets closer than the floor: caret on the second offset",
                  toml: "[[notification]]\ntitle = \"x\"\nat = 2099-01-01T00:00:00Z\nremind_before = [\"1h\", \"0s\", \"59min 59.5s\"]\n",
                  expected: ["4:30: offsets 1 and 3 of 'remind_before' (1h and 59min 59.500000s) are 500ms apart, \(rule)"]),
        SchemaRow(name: "equal remind_before offsets fire once and are accepted",
                  toml: "[[notification]]\ntitle = \"x\"\nat = 2099-01-01T00:00:00Z\nremind_before = [\"1h\", \"1h\"]\n",
                  expected: []),
        SchemaRow(name: "a raised floor refuses a 5-minute repeat",
                  toml: "[daemon]\nmin_period = \"10min\"\n[[notification]]\ntitle = \"x\"\nevery = \"5min\"\n",
                  expected: ["5:9: 'every' is 5min, closer than [daemon] min_period (10min); a notification may fire at most once per min_period"]),
        SchemaRow(name: "a lowered floor accepts 500ms",
                  toml: "[daemon]\nmin_period = \"100ms\"\n[[notification]]\ntitle = \"x\"\nevery = \"500ms\"\n",
                  expected: []),
        SchemaRow(name: "min_period below its range",
                  toml: "[daemon]\nmin_period = \"500us\"\n",
                  expected: ["2:14: 'min_period' is 500us; it must be between 1ms and 1d"]),
        SchemaRow(name: "min_period above its range",
                  toml: "[daemon]\nmin_period = \"2d\"\n",
                  expected: ["2:14: 'min_period' is 2d; it must be between 1ms and 1d"]),
        SchemaRow(name: "max_message_size below its range",
                  toml: "[daemon]\nmax_message_size = 1000\n",
                  expected: ["2:20: 'max_message_size' must be between 1048576 and 134217728, found 1000"]),
    ]

    @Test(arguments: rows)
    func row(_ row: SchemaRow) {
        #expect(diagnostics(row.toml) == row.expected, "row '\(row.name)'")
    }
}
