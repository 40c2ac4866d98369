import Foundation
import Testing
import TocsinTesting

@Suite("tocsin CLI against a running daemon")
struct CLITests {
    @Test("schedule, list, cancel, post, ack and watch")
    func roundTrip() async throws {
        let config = """
            [backend.events]
            type = "dbus-signal"
            """
        try await withGateway(config: config) { g in
            let watch = try TestProcess(Products.executable("tocsin"), ["watch", "--json", "--bus", g.bus.address])
            // `watch` subscribes before it prints anything; wait on a signal it must see instead of on time.
            var s = try await g.tocsin("schedule", "--key", "tea", "--title", "Tea", "--after", "1h", "--user-info", "cup=green")
            #expect(s.status == .exited(0), "\(s.stderrText)")
            #expect(s.stdoutText == "tea\n")
            let list = try await g.tocsin("list")
            #expect(list.stdoutText.contains("tea"))
            #expect(list.stdoutText.contains("at "))
            let json = try await g.tocsin("list", "--json")
            let items = try #require(try JSONSerialization.jsonObject(with: Data(json.stdoutText.utf8)) as? [[String: Any]])
            #expect(items.first?["key"] as? String == "tea")
            #expect((items.first?["user_info"] as? [String: String]) == ["cup": "green"])

            s = try await g.tocsin("cancel", "tea")
            #expect(s.status == .exited(0))
            s = try await g.tocsin("cancel", "tea")
            #expect(s.status == .exited(1))
            #expect(s.stderrText == "error: no pending notification with key 'tea'\n")

            s = try await g.tocsin("post", "--key", "now", "--title", "Right now")
            #expect(s.stdoutText == "now\n")
            try await watch.waitForOutput(containing: "\"event\":\"Cancelled\",\"key\":\"tea\"", timeout: .seconds(20))
            try await watch.waitForOutput(containing: "\"event\":\"Fired\",\"key\":\"now\"", timeout: .seconds(20))

            // Signals whose first argument is not a key keep it, named (regression: CancelledAll's
            // count and QuietChanged's active were dropped as if they were keys).
            let text = try TestProcess(Products.executable("tocsin"), ["watch", "--bus", g.bus.address])
            // The text watcher is subscribed once it shows a post made after it started.
            try await waitUntil("the text watcher to subscribe", timeout: .seconds(20)) {
                _ = try? await g.tocsin("post", "--key", "probe", "--title", "probe")
                return text.stdout.contains("Fired probe")
            }
            _ = try await g.tocsin("schedule", "--key", "a", "--title", "A", "--after", "1h")
            _ = try await g.tocsin("schedule", "--key", "b", "--title", "B", "--after", "1h")
            s = try await g.tocsin("cancel", "--all")
            #expect(s.status == .exited(0), "\(s.stderrText)")
            try await watch.waitForOutput(containing: "\"event\":\"CancelledAll\",\"count\":2}", timeout: .seconds(20))
            try await text.waitForOutput(containing: "CancelledAll count=2\n", timeout: .seconds(20))
            _ = try await g.tocsin("quiet", "on")
            try await watch.waitForOutput(containing: "\"event\":\"QuietChanged\",\"active\":true,\"quiet\":{", timeout: .seconds(20))
            try await text.waitForOutput(containing: "QuietChanged active=true quiet=", timeout: .seconds(20))
            _ = try await text.kill()
            _ = try await watch.kill()
        }
    }

    @Test("bad input is one clear line and a non-zero exit")
    func badInput() async throws {
        try await withGateway { g in
            let s = try await g.tocsin("schedule", "--title", "x", "--every", "0")
            #expect(s.status == .exited(1))
            #expect(s.stderrText == "error: invalid 'every': the interval must be longer than zero\n")
            let a = try await g.tocsin("schedule", "--title", "x", "--after", "1h", "--action", "noequals")
            #expect(a.status != .exited(0))
            #expect(a.stderrText.contains("--action takes KEY=VALUE, got 'noequals'"))
        }
    }

    @Test("a value that starts with '-' is the option's value: a title or body like '-5 °C' is kept, a negative duration is refused naming its field")
    func dashValues() async throws {
        try await withGateway { g in
            let ok = try await g.tocsin("schedule", "--key", "-cold", "--title", "-5 °C outside", "--body", "- take a coat", "--after", "1h")
            #expect(ok.status == .exited(0), "\(ok.stderrText)")
            #expect(ok.stdoutText == "-cold\n")
            let list = try await g.tocsin("list", "--json")
            #expect(list.stdoutText.contains(#""title":"-5 °C outside""#) && list.stdoutText.contains(#""body":"- take a coat""#),
                    "\(list.stdoutText)")
            for (option, value, field) in [("--after", "-1s", "after"), ("--every", "-1s", "every"),
                                           ("--remind-before", "-1h", "remind_before"), ("--max-late", "-1s", "max_late")] {
                var words = ["schedule", "--title", "x", option, value]
                if option == "--remind-before" { words += ["--at", "2099-01-01T00:00:00Z"] }
                if option == "--max-late" { words += ["--after", "1h"] }
                let r = try await TestProcess.run(Products.executable("tocsin"), words + ["--bus", g.bus.address])
                #expect(r.status == .exited(1), "\(option) \(value): \(r.stderrText)")
                #expect(r.stderrText.hasPrefix("error: invalid ") && r.stderrText.contains("'\(field)'") && r.stderrText.contains("negative"),
                        "\(option) \(value): \(r.stderrText)")
            }
            let quiet = try await g.tocsin("quiet", "on", "--for", "-1h")
            #expect(quiet.status == .exited(1) && quiet.stderrText.contains("'for'") && quiet.stderrText.contains("negative"),
                    "\(quiet.stderrText)")
        }
    }

    struct EncodingRow: Sendable, CustomTestStringConvertible {
        var name: String
        /// The arguments, as shell words: `printf` makes the bytes no Swift string can hold.
        var words: String
        var message: String
        var testDescription: String { name }
    }

    static let encodingRows: [EncodingRow] = [
        EncodingRow(name: "a key of one invalid byte", words: #"schedule --title ok --after 1h --key "$(printf '\377')""#,
                    message: "error: argument 7, after --key, is not valid UTF-8 (byte 0xFF at byte 1 of it)\n"),
        EncodingRow(name: "an overlong NUL in a title", words: #"schedule --title "a$(printf '\300\200')" --after 1h"#,
                    message: "error: argument 3, after --title, is not valid UTF-8 (byte 0xC0 at byte 2 of it)\n"),
        EncodingRow(name: "the --option=value form", words: #"schedule --title ok --after 1h --key="k$(printf '\376')""#,
                    message: "error: the value of --key in argument 6 is not valid UTF-8 (byte 0xFE at byte 2 of it)\n"),
        EncodingRow(name: "a positional argument", words: #"next "Mon $(printf '\377')""#,
                    message: "error: argument 2 is not valid UTF-8 (byte 0xFF at byte 5 of it)\n"),
        EncodingRow(name: "a truncated sequence at the end", words: #"cancel "tea$(printf '\342\202')""#,
                    message: "error: argument 2 is not valid UTF-8 (byte 0xE2 at byte 4 of it)\n"),
        EncodingRow(name: "after --, where no word is an option", words: #"cancel -- "$(printf '\377')""#,
                    message: "error: argument 3 is not valid UTF-8 (byte 0xFF at byte 1 of it)\n"),
        EncodingRow(name: "after a word that is no option", words: #"cancel -1 "$(printf '\377')""#,
                    message: "error: argument 3 is not valid UTF-8 (byte 0xFF at byte 1 of it)\n"),
        EncodingRow(name: "after --option=value", words: #"schedule --title=ok "$(printf '\377')""#,
                    message: "error: argument 3 is not valid UTF-8 (byte 0xFF at byte 1 of it)\n"),
    ]

    @Test("an argument that is not UTF-8 is refused, naming it and the byte, before anything reaches the daemon", arguments: encodingRows)
    func invalidEncoding(_ row: EncodingRow) async throws {
        try await withGateway { g in
            let out = try await TestProcess.run("/bin/sh", ["-c", "exec \"$0\" \(row.words) --bus \"$1\"", Products.executable("tocsin"), g.bus.address])
            #expect(out.status == .exited(64), "\(row.name): \(out.stderrText)")
            #expect(out.stderrText == row.message, "\(row.name)")
            let list = try await g.tocsin("list", "--json")
            #expect(list.stdoutText == "[]\n", "\(row.name): something was scheduled")
        }
    }

    struct NegativeRow: Sendable, CustomTestStringConvertible {
        var name: String
        var arguments: [String]
        var message: String
        var testDescription: String { name }
    }

    @Test("a negative count or limit is refused as that value, not as a missing one (regression: '-1' was read as an option)", arguments: [
        NegativeRow(name: "schedule --count", arguments: ["schedule", "--title", "x", "--every", "1h", "--count", "-1"],
                    message: "Error: The value '-1' is invalid for '--count <count>'"),
        NegativeRow(name: "history --limit", arguments: ["history", "--limit", "-1"],
                    message: "Error: The value '-1' is invalid for '--limit <limit>'"),
        NegativeRow(name: "next --count", arguments: ["next", "daily", "--count", "-2"], message: "Error: --count must be at least 1"),
    ])
    func negativeNumbers(_ row: NegativeRow) async throws {
        // Refused before any bus is reached: this address has no bus.
        let out = try await TestProcess.run(Products.executable("tocsin"), row.arguments + (row.arguments[0] == "next" ? [] : ["--bus", "unix:path=/nonexistent"]))
        #expect(out.status == .exited(64), "\(row.name): \(out.stderrText)")
        #expect(out.stderrText.hasPrefix(row.message + "\n"), "\(row.name): \(out.stderrText)")
    }

    @Test("no daemon: says so and how to start it")
    func noDaemon() async throws {
        let bus = try await PrivateBus.start()
        let out = try await TestProcess.run(Products.executable("tocsin"), ["list", "--bus", bus.address])
        await bus.stop()
        #expect(out.status == .exited(1))
        #expect(out.stderrText.contains("the Tocsin daemon is not running on \(bus.address); start it with 'tocsin daemon'"))
    }

    /// One row per way a command used to fail on its own (a print and `exit`, `ExitCode` after a
    /// print, a wrapper around client calls): each must now fail the one way, exit status 1 and its
    /// message on stderr once, nothing on stdout.
    struct FailureRow: CustomTestStringConvertible, Sendable {
        let name: String
        let arguments: [String]
        let stderr: String
        var testDescription: String { name }
    }

    static let failureRows: [FailureRow] = [
        FailureRow(name: "check: bad config", arguments: ["check", "@BAD"],
                   stderr: "@BAD:1:5: error: expected a value, found newline\nx = \n    ^\n"),
        FailureRow(name: "daemon: bad config", arguments: ["daemon", "--config", "@BAD", "--state-dir", "@STATE"],
                   stderr: "@BAD:1:5: error: expected a value, found newline\nx = \n    ^\n"),
    ]

    /// `tocsin next` reads its values itself: one it cannot read is a mistake in the command line,
    /// exit 64 with `next`'s usage line, as `--count 0` is (README, the exit status table).
    @Test("next: a value it cannot read is a usage error naming it, exit 64", arguments: [
        NegativeRow(name: "bad expression", arguments: ["next", "bogus"],
                    message: "Error: invalid calendar expression 'bogus': column 1: expected a number\n"),
        NegativeRow(name: "bad --from", arguments: ["next", "--from", "soonish", "daily"], message: "Error: invalid --from 'soonish': "),
        NegativeRow(name: "bad --timezone", arguments: ["next", "--timezone", "Mars/Olympus", "daily"],
                    message: "Error: invalid --timezone 'Mars/Olympus': "),
        NegativeRow(name: "an offset as --timezone", arguments: ["next", "--timezone", "UTC+1", "daily"],
                    message: "Error: invalid --timezone 'UTC+1': unknown time zone 'UTC+1' (a UTC offset, not a zone name: 'Etc/GMT-1' is UTC+01:00 all year"),
        NegativeRow(name: "bad --every", arguments: ["next", "--every", "0"], message: "Error: invalid --every '0': "),
    ])
    func nextUsage(_ row: NegativeRow) async throws {
        let out = try await TestProcess.run(Products.executable("tocsin"), row.arguments)
        #expect(out.status == .exited(64), "\(row.name): \(out.stderrText)")
        #expect(out.stdoutText == "", "\(row.name)")
        #expect(out.stderrText.hasPrefix(row.message), "\(row.name): \(out.stderrText)")
        #expect(out.stderrText.contains("Usage: tocsin next "), "\(row.name): \(out.stderrText)")
    }

    @Test("every command fails the same way: status 1, its message once on stderr", arguments: failureRows)
    func oneWayToFail(_ row: FailureRow) async throws {
        let dir = TemporaryDirectory()
        let bad = try dir.write("bad.toml", "x = \n")
        let arguments = row.arguments.map { $0.replacingOccurrences(of: "@BAD", with: bad).replacingOccurrences(of: "@STATE", with: dir.path + "/state") }
        let out = try await TestProcess.run(Products.executable("tocsin"), arguments)
        let expected = row.stderr.replacingOccurrences(of: "@BAD", with: bad)
        #expect(out.status == .exited(1), "\(row.name): \(out.stderrText)")
        #expect(out.stdoutText == "", "\(row.name)")
        if expected.hasSuffix("\n") {
            #expect(out.stderrText == expected, "\(row.name)")
        } else {
            #expect(out.stderrText.hasPrefix(expected), "\(row.name): \(out.stderrText)")
            #expect(out.stderrText.filter { $0 == "\n" }.count == 1, "\(row.name): \(out.stderrText)")
        }
    }
}
