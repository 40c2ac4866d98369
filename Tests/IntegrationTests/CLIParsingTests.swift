import Testing
import TocsinTesting

/// `tocsin` parses a command line that starts with a subcommand with that subcommand as the root
/// (the whole tree's parse costs a fifth of a command's instructions); help, usage and errors must
/// still read as they do through the whole tree, each naming `tocsin SUBCOMMAND`.
@Suite("tocsin command-line parsing")
struct CLIParsingTests {
    static let binary = Products.executable("tocsin")
    static let subcommands = ["daemon", "schedule", "post", "list", "cancel", "ack", "snooze", "reload",
                              "watch", "next", "check", "status", "quiet", "history"]

    static func run(_ arguments: [String], environment: [String: String] = [:]) throws -> (status: Int32, out: String, err: String) {
        // No bus: a command that got past parsing fails to connect, which the rows tell apart.
        let run = try runBlocking(binary, arguments, environment: ["LANG": "C", "PATH": "/usr/bin:/bin",
                                                                   "DBUS_SESSION_BUS_ADDRESS": "unix:path=/nonexistent"]
                                                                    .merging(environment) { _, given in given })
        return (run.status, run.stdout, run.stderr)
    }

    /// Which problem the parser names first varies (a missing argument comes before the unknown
    /// option); the usage lines must name the command as the whole tree does.
    @Test("an unknown option is a usage error naming `tocsin SUBCOMMAND`, exit 64", arguments: subcommands)
    func unknownOption(subcommand: String) throws {
        let r = try Self.run([subcommand, "--no-such-option"])
        #expect(r.status == 64, "\(subcommand): \(r.err)")
        #expect(r.err.hasPrefix("Error: "), "\(subcommand): \(r.err)")
        #expect(r.err.contains("Usage: tocsin \(subcommand)"), "\(subcommand): \(r.err)")
        #expect(r.err.contains("See 'tocsin \(subcommand) --help' for more information."), "\(subcommand): \(r.err)")
    }

    @Test("`tocsin SUBCOMMAND --help` is `tocsin help SUBCOMMAND`, with the usage line of the whole tree", arguments: subcommands)
    func help(subcommand: String) throws {
        let flag = try Self.run([subcommand, "--help"])
        let word = try Self.run(["help", subcommand])
        #expect(flag.status == 0 && word.status == 0, "\(subcommand): \(flag.err) \(word.err)")
        #expect(flag.out == word.out, "\(subcommand)")
        #expect(flag.out.contains("USAGE: tocsin \(subcommand)"), "\(subcommand): \(flag.out)")
    }

    @Test("a valid command line runs the subcommand; a missing argument fails as before")
    func validAndInvalid() throws {
        let next = try Self.run(["next", "--from", "@0", "--count", "1", "--timezone", "UTC", "daily"])
        #expect(next.status == 0, "\(next.err)")
        #expect(next.out.contains("Next elapse: Fri 1970-01-02 00:00:00 UTC"), "\(next.out)")
        let status = try Self.run(["status", "--utc"])
        #expect(status.status == 1 && status.err.contains("/nonexistent"), "parsed, then failed to connect: \(status.err)")
        let ack = try Self.run(["ack"])
        #expect(ack.status == 64 && ack.err.contains("Missing expected argument '<key>'"), "\(ack.err)")
        #expect(ack.err.contains("Usage: tocsin ack <key>"), "\(ack.err)")
    }

    /// Regression: a value `run` refuses (not the parser) printed the root's usage line.
    @Test("a value the command refuses after parsing is a usage error with that command's usage line")
    func refusedByRun() throws {
        let r = try Self.run(["schedule", "--title", "x", "--after", "1h", "--action", "noequals"])
        #expect(r.status == 64, "\(r.err)")
        #expect(r.err.hasPrefix("Error: --action takes KEY=VALUE, got 'noequals'"), "\(r.err)")
        #expect(r.err.contains("Usage: tocsin schedule [<options>] --title <title>"), "\(r.err)")
        #expect(r.err.contains("See 'tocsin schedule --help' for more information."), "\(r.err)")
    }

    /// Over D-Bus an empty value means "until switched off"; typed on the command line it is
    /// usually an unset variable, and was taken the same way without a word.
    @Test("regression: `quiet on --until ''` and `--for ''` are usage errors, exit 64", arguments: ["--until", "--for"])
    func emptyQuietEnd(option: String) throws {
        let r = try Self.run(["quiet", "on", option, ""])
        #expect(r.status == 64, "\(option): \(r.err)")
        #expect(r.err.contains("\(option) must not be empty; 'tocsin quiet on' alone is quiet until 'tocsin quiet off'"), "\(option): \(r.err)")
    }

    /// A command line the CLI refuses itself, before any bus or daemon is reached.
    struct RefusedRow: Sendable, CustomTestStringConvertible {
        let arguments: [String]
        var environment: [String: String] = [:]
        /// What stderr must name: the option (or argument) whose value was refused.
        let names: String
        var testDescription: String {
            (environment.map { "\($0)=\($1) " }.joined()) + "tocsin " + arguments.joined(separator: " ")
        }
    }

    static let refusedRows: [RefusedRow] = [
        // Values ArgumentParser refuses (a type or a validate()).
        RefusedRow(arguments: ["schedule", "--title", "x", "--every", "1h", "--count", "abc"], names: "--count"),
        RefusedRow(arguments: ["schedule", "--title", "x", "--after", "1h", "--action", "noequals"], names: "--action"),
        RefusedRow(arguments: ["post", "--title", "x", "--user-info", "novalue"], names: "--user-info"),
        RefusedRow(arguments: ["history", "--limit", "0"], names: "--limit"),
        RefusedRow(arguments: ["history", "--limit", "abc"], names: "--limit"),
        RefusedRow(arguments: ["next", "--count", "0", "daily"], names: "--count"),
        RefusedRow(arguments: ["next", "--dst-gap", "later", "daily"], names: "--dst-gap"),
        RefusedRow(arguments: ["quiet", "on", "--for", "1h", "--until", "7:00"], names: "--for"),
        RefusedRow(arguments: ["quiet", "on", "--until", ""], names: "--until"),
        RefusedRow(arguments: ["check", "--toml-version", "2.0"], names: "--toml-version"),
        // Values the commands read themselves (each exited 1, as a daemon's refusal does).
        RefusedRow(arguments: ["list", "--timeout", "0"], names: "--timeout"),
        RefusedRow(arguments: ["status", "--timeout", "abc"], names: "--timeout"),
        RefusedRow(arguments: ["schedule", "--title", "x", "--after", "1h", "--timeout", "1 parsec"], names: "--timeout"),
        RefusedRow(arguments: ["post", "--title", "x", "--timeout", "0"], names: "--timeout"),
        RefusedRow(arguments: ["cancel", "k", "--timeout", "0"], names: "--timeout"),
        RefusedRow(arguments: ["ack", "k", "--timeout", "5 parsecs"], names: "--timeout"),
        RefusedRow(arguments: ["snooze", "k", "5min", "--timeout", "0"], names: "--timeout"),
        RefusedRow(arguments: ["reload", "--timeout", "0"], names: "--timeout"),
        RefusedRow(arguments: ["watch", "--timeout", "0"], names: "--timeout"),
        RefusedRow(arguments: ["quiet", "--timeout", "0"], names: "--timeout"),
        RefusedRow(arguments: ["history", "--timeout", "0"], names: "--timeout"),
        RefusedRow(arguments: ["list"], environment: ["TOCSIN_TIMEOUT": "abc"], names: "$TOCSIN_TIMEOUT"),
        RefusedRow(arguments: ["history", "--since", "garbage"], names: "--since"),
        RefusedRow(arguments: ["next", "--from", "garbage", "daily"], names: "--from"),
        RefusedRow(arguments: ["next", "--from", "@999999999999", "daily"], names: "--from"),
        RefusedRow(arguments: ["next", "--every", "0"], names: "--every"),
        RefusedRow(arguments: ["next", "--every", "abc"], names: "--every"),
        RefusedRow(arguments: ["next", "--timezone", "Mars/Olympus", "daily"], names: "--timezone"),
        RefusedRow(arguments: ["next", "not a calendar"], names: "calendar expression"),
        RefusedRow(arguments: ["list", "--bus", "garbage"], names: "--bus"),
        RefusedRow(arguments: ["daemon", "--bus", "garbage", "--config", "/nonexistent/tocsin.toml"], names: "--bus"),
        // An unknown level was taken as info; the config is one that cannot be read, so that
        // a daemon that accepts the level stops at once.
        RefusedRow(arguments: ["daemon", "--log-level", "loud", "--config", "/nonexistent/tocsin.toml"], names: "--log-level"),
    ]

    /// sysexits: 64 (EX_USAGE) for a command line the CLI refuses itself, whichever option; 1 for
    /// what the daemon refuses and for failures (no bus, no daemon, an unreadable file).
    @Test("a value the CLI refuses itself exits 64 naming the option, before reaching any bus", arguments: refusedRows)
    func refusedLocally(_ row: RefusedRow) throws {
        let r = try Self.run(row.arguments, environment: row.environment)
        #expect(r.status == 64, "\(row.testDescription): exit \(r.status): \(r.err)")
        #expect(r.err.hasPrefix("Error: "), "\(row.testDescription): \(r.err)")
        #expect(r.err.contains(row.names), "\(row.testDescription): stderr does not name \(row.names): \(r.err)")
        #expect(!r.err.contains("/nonexistent"), "\(row.testDescription): got as far as the bus: \(r.err)")
    }

    /// Regression (review of the merged change): a value with a line break, refused by the CLI,
    /// was echoed raw, so `--from $'x\nerror: forged'` printed a line `error: forged` of its own.
    @Test("a refused value's line breaks and control characters are shown escaped: three lines, Error, Usage, See", arguments: [
        ["next", "--from", "x\nerror: forged", "*:0"], ["history", "--since", "y\u{1b}[2J\nerror: z"],
        ["next", "--timezone", "Eu\nerror: x", "*:0"], ["next", "*:0\nerror: fake"], ["status", "--bus", "unix:pa\u{1b}th=\n"],
    ])
    func refusedValueEscaped(_ arguments: [String]) throws {
        let r = try Self.run(arguments)
        #expect(r.status == 64, "\(arguments): \(r.err)")
        let lines = r.err.split(separator: "\n", omittingEmptySubsequences: true)
        #expect(lines.count == 3 && lines[0].hasPrefix("Error: ") && lines[1].hasPrefix("Usage: "), "\(arguments): \(r.err)")
        #expect(!r.err.unicodeScalars.contains { $0.value == 0x1b }, "\(arguments): a raw ESC: \(r.err)")
    }

    @Test("a well-formed command line that cannot reach the daemon is a failure, exit 1, not a usage error")
    func failureIsOne() throws {
        for arguments in [["list", "--timeout", "2s"], ["list", "--bus", "unix:path=/nonexistent"], ["history", "--since", "@0"],
                          ["daemon", "--log-level", "debug", "--config", "/nonexistent/tocsin.toml"]] {
            let r = try Self.run(arguments)
            #expect(r.status == 1, "\(arguments): \(r.err)")
        }
    }

    @Test("the root still answers --version and --generate-completion-script")
    func rootWords() throws {
        let version = try Self.run(["--version"])
        #expect(version.status == 0 && !version.out.isEmpty, "\(version.err)")
        let script = try Self.run(["--generate-completion-script", "bash"])
        #expect(script.status == 0, "\(script.err)")
        for subcommand in Self.subcommands { #expect(script.out.contains(subcommand), "\(subcommand)") }
    }
}
