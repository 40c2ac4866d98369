import ArgumentParser
import FoundationEssentials
import Glibc
import TocsinCore
import TocsinGateway
import TocsinModel
import TocsinSystem

/// A synchronous entry point, so that Tocsin's own global executor is installed before any task
/// exists and the main thread drives it (`LoopExecutor.runMain`) instead of parking in
/// `dispatch_main()`: an idle daemon then makes no wake-ups at all (see docs/ARCHITECTURE.md, "Idle wake-ups").
@main
struct Tocsin: ParsableCommand {
    static let name = "tocsin"

    static let configuration = CommandConfiguration(
        commandName: name,
        abstract: "A notification gateway: schedule notifications, alarms and reminders.",
        version: Gateway.version,
        subcommands: [
            DaemonCommand.self, ScheduleCommand.self, PostCommand.self, ListCommand.self, CancelCommand.self,
            AckCommand.self, SnoozeCommand.self, ReloadCommand.self, WatchCommand.self, NextCommand.self, CheckCommand.self, StatusCommand.self,
            QuietCommand.self,
            HistoryCommand.self,
        ]
    )

    /// What `AsyncParsableCommand.main()` does, with `LoopExecutor.runMain` for the async part.
    static func main() {
        // Before anything reads `CommandLine.arguments`, which has already repaired the bytes.
        if let invalid = InvalidArgumentEncoding.first(in: InvalidArgumentEncoding.processArguments()) {
            StandardStream.error.write(invalid.message + "\n")
            Glibc.exit(64)  // EX_USAGE, as ArgumentParser's own usage errors
        }
        // At the open-files limit the kernel refuses the loop's descriptors: say so and exit, as
        // for every other start-up failure, rather than trap.
        do { try LoopExecutor.installAsGlobalExecutor() } catch { fail(CommandFailure("cannot start: \(error)")) }
        var parsed: (any ParsableCommand.Type)?
        do {
            var command = try parseArguments(Array(CommandLine.arguments.dropFirst()))
            parsed = type(of: command)
            if let asyncCommand = command as? any AsyncParsableCommand {
                try LoopExecutor.runMain {
                    var c = asyncCommand
                    try await c.run()
                }
            } else {
                try command.run()
            }
        } catch let failure as CommandFailure {
            fail(failure)
        } catch {
            // A refusal may quote the refused value (`--from $'x\nerror: forged'`): its control
            // characters, line breaks included, are shown escaped, whichever step refused it.
            var error = error
            if let v = error as? ValidationError { error = ValidationError(JSONText.visible(v.message)) }
            // Usage errors (`ValidationError`, unknown options): the parser's own message and help,
            // with the usage line of the command that threw it once one was parsed (the root's
            // would read `tocsin <subcommand>` for a value `run` refused).
            if error is ValidationError, let parsed, parsed != Tocsin.self, let name = parsed.configuration.commandName {
                let message = parsed.message(for: error)
                StandardStream.error.write("""
                    Error: \(message)
                    Usage: \(parsed.usageString())
                      See 'tocsin \(name) --help' for more information.

                    """)
                Glibc.exit(parsed.exitCode(for: error).rawValue)
            }
            exit(withError: error)
        }
    }

    /// A command line that names a subcommand first is parsed with that subcommand as the root:
    /// the whole tree's parse first tries the arguments twice as a `--generate-completion-script`
    /// request, which was 40 % of a command's `main` (docs/BENCHMARKS.md, "Footprint"). The
    /// subcommands name `tocsin` as their super-command, so help and usage read as before. Words
    /// the root answers, and any error, go through the whole tree, so their output is unchanged.
    static func parseArguments(_ arguments: [String]) throws -> any ParsableCommand {
        if let first = arguments.first,
           let subcommand = configuration.subcommands.first(where: { $0.configuration.commandName == first }),
           !arguments.contains(where: answeredByTheRoot),
           let command = try? subcommand.parseAsRoot(Array(arguments.dropFirst())) {
            return command
        }
        return try parseAsRoot(arguments)
    }

    private static func answeredByTheRoot(_ argument: String) -> Bool {
        argument == "-h" || argument == "--help" || argument == "help" || argument == "--version"
            || argument.hasPrefix("--generate-completion-script") || argument.hasPrefix("--experimental")
    }

    private static func fail(_ failure: CommandFailure) -> Never {
        if !failure.text.isEmpty { StandardStream.error.write(failure.text + "\n") }
        Glibc.exit(1)
    }
}
