import Testing
import TocsinConfig
import TocsinTime
import TocsinModel

/// `dst_gap` and `dst_fold` in `[[notification]]` (the same reader serves D-Bus `Schedule`).
@Suite("DST policy config")
struct DSTPolicyConfigTests {
    struct Diagnostics: Error { var lines: [String] }

    static func load(_ toml: String) -> Result<[NotificationSpec], Diagnostics> {
        switch ConfigLoader.load(bytes: Array(toml.utf8), file: "c.toml") {
        case .success(let loaded): return .success(loaded.configuration.notifications)
        case .failure(let e): return .failure(Diagnostics(lines: e.diagnostics.map { "\($0.location.line):\($0.location.column): \($0.message)" }))
        }
    }

    @Test func policiesReachTheCalendarSpec() throws {
        let toml = """
        [[notification]]
        key = "a"
        title = "x"
        on_calendar = "02:30"
        dst_gap = "shift"
        dst_fold = "both"
        [[notification]]
        key = "b"
        title = "y"
        on_calendar = "02:30"
        """
        let notes = try Self.load(toml).get()
        guard case .onCalendar(let a) = notes[0].trigger, case .onCalendar(let b) = notes[1].trigger else {
            Issue.record("not calendar triggers: \(notes.map(\.trigger))")
            return
        }
        #expect(a.dstGap == .shift)
        #expect(a.dstFold == .both)
        #expect(b.dstGap == .skip)
        #expect(b.dstFold == .first)
        // A changed policy is a changed definition (reload replaces it).
        #expect(a != b)
    }

    struct Row: CustomTestStringConvertible {
        var name: String
        var toml: String
        var expected: [String]
        var testDescription: String { name }
    }

    static let rows: [Row] = [
        Row(name: "unknown dst_gap word lists the choices at the value",
            toml: "[[notification]]\ntitle = \"x\"\non_calendar = \"02:30\"\ndst_gap = \"later\"\n",
            expected: ["4:11: 'dst_gap' must be one of 'skip', 'shift', found 'later'"]),
        Row(name: "unknown dst_fold word lists the choices at the value",
            toml: "[[notification]]\ntitle = \"x\"\non_calendar = \"02:30\"\ndst_fold = \"twice\"\n",
            expected: ["4:12: 'dst_fold' must be one of 'first', 'both', found 'twice'"]),
        Row(name: "dst_gap without on_calendar is refused at the key",
            toml: "[[notification]]\ntitle = \"x\"\nafter = \"1h\"\ndst_gap = \"shift\"\n",
            expected: ["4:1: 'dst_gap' only goes with 'on_calendar'"]),
        Row(name: "dst_fold of the wrong type",
            toml: "[[notification]]\ntitle = \"x\"\non_calendar = \"02:30\"\ndst_fold = 2\n",
            expected: ["4:12: 'dst_fold' in [[notification]] #1 must be a string, found integer"]),
    ]

    @Test(arguments: rows)
    func badPolicyDiagnostics(_ row: Row) {
        switch Self.load(row.toml) {
        case .success: Issue.record("\(row.name): accepted")
        case .failure(let d): #expect(d.lines == row.expected, "\(row.name)")
        }
    }
}
