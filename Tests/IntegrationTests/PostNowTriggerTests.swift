import Testing
import TocsinTesting

/// `PostNow` delivers at once; a trigger in its spec, or a field only a trigger reads, means the
/// client wanted `Schedule`, so it is refused naming the field instead of delivered at once as if
/// it had been understood.
@Suite("PostNow with a trigger")
struct PostNowTriggerTests {
    struct Row: Sendable, CustomTestStringConvertible {
        var field: String
        /// The trigger's entries of the `a{sv}`, in gdbus's notation.
        var entries: String
        var testDescription: String { field }
    }

    static let rows: [Row] = [
        Row(field: "at", entries: "'at': <'2030-01-01T09:00:00Z'>"),
        Row(field: "after", entries: "'after': <'1h'>"),
        Row(field: "every", entries: "'every': <'1m'>"),
        Row(field: "on_calendar", entries: "'on_calendar': <'Mon..Fri 09:25'>"),
        Row(field: "remind_before", entries: "'at': <'2030-01-01T09:00:00Z'>, 'remind_before': <['1h']>"),
        Row(field: "count", entries: "'count': <uint32 3>"),
        Row(field: "starting", entries: "'starting': <'2030-01-01T09:00:00Z'>"),
        Row(field: "until", entries: "'until': <'2030-01-01T09:00:00Z'>"),
        Row(field: "missed", entries: "'missed': <'skip'>"),
        Row(field: "max_late", entries: "'max_late': <'1h'>"),
        Row(field: "timezone", entries: "'timezone': <'Europe/Berlin'>"),
    ]

    @Test("is refused as InvalidArgs naming the field, and nothing is delivered or kept", arguments: rows)
    func refused(_ row: Row) async throws {
        try await withGateway { g in
            let out = try await g.gdbus("PostNow", "{'key': <'pn'>, 'title': <'Meeting'>, \(row.entries)}")
            #expect(out.status != .exited(0), "\(row.field): \(out.stdoutText)")
            #expect(out.stderrText.contains("org.freedesktop.DBus.Error.InvalidArgs"), "\(row.field): \(out.stderrText)")
            #expect(out.stderrText.contains("'\(row.field)' goes with Schedule; PostNow delivers at once and takes no trigger"),
                    "\(row.field): \(out.stderrText)")
            let history = try await g.tocsin("history", "--json")
            #expect(history.stdoutText == "[]\n", "\(row.field): \(history.stdoutText)")
            let list = try await g.gdbus("List")
            #expect(list.status == .exited(0) && !list.stdoutText.contains("'pn'"), "\(row.field): \(list.stdoutText)")
        }
    }

    @Test("without a trigger it delivers at once")
    func delivered() async throws {
        try await withGateway { g in
            let out = try await g.gdbus("PostNow", "{'key': <'now'>, 'title': <'Now'>}")
            #expect(out.status == .exited(0), "\(out.stderrText)")
            #expect(out.stdoutText == "('now',)\n")
        }
    }
}
