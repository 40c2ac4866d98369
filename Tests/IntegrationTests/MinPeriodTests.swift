import Foundation
import Testing
import TocsinTesting

/// Issue 17, first finding: a `Schedule` that repeats below a second flooded the daemon. The
/// floor (`[daemon] min_period`) refuses it at the door, over D-Bus and in `tocsin check`.
@Suite("min_period at the door")
struct MinPeriodTests {
    struct Row: Sendable, CustomTestStringConvertible {
        var name: String
        /// The `a{sv}` in gdbus's syntax.
        var spec: String
        /// nil: accepted.
        var field: String?
        var testDescription: String { name }
    }

    static let rows: [Row] = [
        Row(name: "the issue's calendar flood", spec: "{'title': <'x'>, 'on_calendar': <'*-*-* *:*:00/0.000001'>}", field: "on_calendar"),
        Row(name: "every 500ms", spec: "{'title': <'x'>, 'every': <'500ms'>}", field: "every"),
        Row(name: "every 1us", spec: "{'title': <'x'>, 'every': <'1us'>}", field: "every"),
        Row(name: "remind_before offsets 0.5 s apart",
            spec: "{'title': <'x'>, 'at': <'2099-01-01T00:00:00Z'>, 'remind_before': <['1h', '59min 59.5s']>}", field: "remind_before"),
        Row(name: "every 1s is at the floor", spec: "{'key': <'ok-every'>, 'title': <'x'>, 'every': <'1s'>}", field: nil),
        Row(name: "calendar every second is at the floor", spec: "{'key': <'ok-cal'>, 'title': <'x'>, 'on_calendar': <'*:*:*'>}", field: nil),
    ]

    @Test("a sub-second repeat is refused by Schedule naming the field; nothing is scheduled; the daemon stays healthy")
    func refusedOverDBus() async throws {
        try await withGateway { g in
            for row in Self.rows {
                let out = try await g.gdbus("Schedule", row.spec)
                if let field = row.field {
                    #expect(out.status != .exited(0), "row '\(row.name)': accepted")
                    #expect(out.stderrText.contains("org.freedesktop.DBus.Error.InvalidArgs"), "row '\(row.name)': \(out.stderrText)")
                    #expect(out.stderrText.contains("'\(field)'") && out.stderrText.contains("[daemon] min_period (1s)"),
                            "row '\(row.name)': \(out.stderrText)")
                } else {
                    #expect(out.status == .exited(0), "row '\(row.name)': \(out.stderrText)")
                }
            }
            let pending = try await g.busctl("get-property", GatewayFixture.dest, GatewayFixture.path, GatewayFixture.iface, "Pending")
            #expect(pending.stdoutText == "u 2\n", "only the two rows at the floor are pending: \(pending.stdoutText)")
            #expect(try await g.isHealthy())
        }
    }

    @Test("a raised floor in [daemon] applies to Schedule too")
    func raisedFloorOverDBus() async throws {
        let config = GatewayFixture.defaultConfig + "\n[daemon]\nmin_period = \"1min\"\n"
        try await withGateway(config: config) { g in
            let refused = try await g.gdbus("Schedule", "{'title': <'x'>, 'on_calendar': <'*:*:00/30'>}")
            #expect(refused.stderrText.contains("'on_calendar' expression '*-*-* *:*:00/30' can elapse 30s after the elapse before, closer than [daemon] min_period (1min)"),
                    "\(refused.stderrText)")
            let accepted = try await g.gdbus("Schedule", "{'title': <'x'>, 'on_calendar': <'minutely'>}")
            #expect(accepted.status == .exited(0), "\(accepted.stderrText)")
        }
    }

    @Test("tocsin check refuses a sub-second repeat with file:line:column and a caret")
    func refusedByCheck() async throws {
        let dir = TemporaryDirectory()
        let path = try dir.write("flood.toml", """
            [[notification]]
            title = "flood"
            on_calendar = "*-*-* *:*:00/0.000001"

            [[notification]]
            title = "fast"
            every = "0.25s"
            """)
        let out = try await TestProcess.run(Products.executable("tocsin"), ["check", path])
        #expect(out.status == .exited(1))
        let rule = "closer than [daemon] min_period (1s); a notification may fire at most once per min_period"
        #expect(out.stderrText == """
            \(path):3:15: error: 'on_calendar' expression '*-*-* *:*:00/0.000001' can elapse 1us after the elapse before, \(rule)
            on_calendar = "*-*-* *:*:00/0.000001"
                          ^
            \(path):7:9: error: 'every' is 250ms, \(rule)
            every = "0.25s"
                    ^

            """, "\(out.stderrText)")
    }
}
