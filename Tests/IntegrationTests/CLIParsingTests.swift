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

    static func run(_ arguments: [String]) throws -> (status: Int32, out: String, err: String) {
        // No bus: a command that got past parsing fails to connect, which the rows tell apart.
        let run = try runBlocking(binary, arguments, environment: ["LANG": "C", "PATH": "/usr/bin:/bin",
                                                                   "DBUS_SESSION_BUS_ADDRESS": "unix:path=/nonexistent"])
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

    @Test("the root still answers --version and --generate-completion-script")
    func rootWords() throws {
        let version = try Self.run(["--version"])
        #expect(version.status == 0 && !version.out.isEmpty, "\(version.err)")
        let script = try Self.run(["--generate-completion-script", "bash"])
        #expect(script.status == 0, "\(script.err)")
        for subcommand in Self.subcommands { #expect(script.out.contains(subcommand), "\(subcommand)") }
    }
}
