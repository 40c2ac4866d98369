import Foundation
import Testing
import TocsinTesting

/// What the daemon says about a method's arguments, over D-Bus and through the CLI: each
/// argument named once (`field 'for': ...`, `argument 'key': ...`), and `remind_before`'s equal
/// offsets as one reminder.
@Suite("argument errors and remind_before offsets through the built daemon")
struct ArgumentErrorTests {
    struct QuietRow: Sendable, CustomTestStringConvertible {
        let name: String
        /// `gdbus` arguments of QuietOn, or nil for the CLI row.
        var gdbus: [String]? = nil
        /// `tocsin` arguments, or nil for the D-Bus row.
        var cli: [String]? = nil
        let says: String
        var testDescription: String { name }
    }

    static let quietRows: [QuietRow] = [
        QuietRow(name: "QuietOn '0' ''", gdbus: ["0", ""],
                 says: "field 'for': the interval must be longer than zero (column 1 of the value)"),
        QuietRow(name: "tocsin quiet on --for 0", cli: ["quiet", "on", "--for", "0"],
                 says: "error: field 'for': the interval must be longer than zero (column 1 of the value)\n"),
        QuietRow(name: "QuietOn '' '@1000'", gdbus: ["", "@1000"], says: "field 'until': @1000 is not in the future"),
        QuietRow(name: "tocsin quiet on --until @1000", cli: ["quiet", "on", "--until", "@1000"],
                 says: "error: field 'until': @1000 is not in the future\n"),
        QuietRow(name: "tocsin quiet on --until '*-02-30'", cli: ["quiet", "on", "--until", "*-02-30"],
                 says: "error: field 'until': the calendar expression '*-02-30 00:00:00' never elapses again\n"),
        QuietRow(name: "QuietOn '' '+1x'", gdbus: ["", "+1x"], says: "field 'until': "),
    ]

    @Test("regression: QuietOn's errors name the argument once (was: field 'for': invalid 'for': ...)", arguments: quietRows)
    func quietNamesTheArgumentOnce(_ row: QuietRow) async throws {
        try await withGateway { g in
            let stderr: String
            if let args = row.gdbus {
                let r = try await TestProcess.run("gdbus", ["call", "--address", g.bus.address, "-d", GatewayFixture.dest,
                                                           "-o", GatewayFixture.path, "-m", "\(GatewayFixture.iface).QuietOn"] + args)
                #expect(r.status != .exited(0), "\(row.name): accepted")
                #expect(r.stderrText.contains("org.freedesktop.DBus.Error.InvalidArgs"), "\(row.name): \(r.stderrText)")
                stderr = r.stderrText
                #expect(stderr.contains(row.says), "\(row.name): \(stderr)")
            } else {
                let r = try await TestProcess.run(Products.executable("tocsin"), (row.cli ?? []) + ["--bus", g.bus.address])
                #expect(r.status == .exited(1), "\(row.name): the daemon's refusal: \(r.stderrText)")
                stderr = r.stderrText
                #expect(stderr == row.says, "\(row.name)")
            }
            #expect(!stderr.contains("invalid 'for'") && !stderr.contains("invalid 'until'"), "\(row.name): \(stderr)")
            let quiet = try await g.tocsin("quiet", "--json")
            #expect(quiet.stdoutText.contains("\"active\":false"), "\(row.name): the refused call changed nothing: \(quiet.stdoutText)")
        }
    }

    @Test("regression: Snooze of a scheduled, never-fired notification names its argument as Snooze's duration is named (was: field 'key': ...)")
    func snoozeBeforeFiring() async throws {
        try await withGateway { g in
            let s = try await g.tocsin("schedule", "--key", "s1", "--title", "Later", "--after", "1h")
            #expect(s.status == .exited(0), "\(s.stderrText)")
            let message = "argument 'key': notification 's1' has not fired yet; there is nothing to snooze"
            let cli = try await g.tocsin("snooze", "s1", "5min")
            #expect(cli.status == .exited(1))
            #expect(cli.stderrText == "error: \(message)\n", "\(cli.stderrText)")
            let gdbus = try await g.gdbus("Snooze", "s1", "5min")
            #expect(gdbus.status != .exited(0))
            #expect(gdbus.stderrText.contains("org.freedesktop.DBus.Error.InvalidArgs: \(message)"), "\(gdbus.stderrText)")
            // The argument the other Snooze check names the same way.
            let duration = try await g.gdbus("Snooze", "s1", "5 parsecs")
            #expect(duration.stderrText.contains("argument 'duration': "), "\(duration.stderrText)")
        }
    }

    @Test("regression: --remind-before 2s 2s 0s is listed once per offset (0 as 0s) and fires occurrences 1 and 2 (was: 2s, 2s, 0; occurrences 1 and 3)")
    func remindBeforeEqualOffsets() async throws {
        try await withGateway { g in
            // Listed: an event an hour away, so that nothing has fired by the time `list` answers.
            let far = try await g.tocsin("schedule", "--key", "far", "--title", "x", "--at", rfc3339(secondsFromNow: 3600),
                                         "--remind-before", "2s", "--remind-before", "2s", "--remind-before", "0s")
            #expect(far.status == .exited(0), "\(far.stderrText)")
            let list = try await g.tocsin("list", "--utc")
            #expect(list.stdoutText.contains("2s, 0s before "), "\(list.stdoutText)")
            #expect(!list.stdoutText.contains("2s, 2s"), "\(list.stdoutText)")
            let json = try await g.tocsin("list", "--json")
            #expect(json.stdoutText.contains("\"trigger\":\"2s, 0s before "), "\(json.stdoutText)")
            // Fired: an event a few seconds away.
            let at = rfc3339(secondsFromNow: 4)
            let s = try await g.tocsin("schedule", "--key", "r", "--title", "x", "--at", at,
                                       "--remind-before", "2s", "--remind-before", "2s", "--remind-before", "0s")
            #expect(s.status == .exited(0), "\(s.stderrText)")
            // The last reminder, at the event: by then every earlier one has been written.
            try await g.process.waitForOutput(containing: "\"due\":\"\(at)\"", timeout: TimingBudget.scaled(.seconds(20)))
            let fired = g.process.firings(key: "r")
            #expect(fired.map { $0["occurrence"] as? Int } == [1, 2], "\(fired)")
        }
    }
}
