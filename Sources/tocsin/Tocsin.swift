import ArgumentParser
import FoundationEssentials
import Glibc
import TocsinCore
import TocsinGateway
import TocsinSystem

/// A synchronous entry point, so that Tocsin's own global executor is installed before any task
/// exists and the main thread drives it (`LoopExecutor.runMain`) instead of parking in
/// `dispatch_main()`: an idle daemon then makes no wake-ups at all (see docs/ARCHITECTURE.md, "Idle wake-ups").
@main
struct Tocsin: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tocsin",
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
        // At the open-files limit the kernel refuses the loop's descriptors: say so and exit, as
        // for every other start-up failure, rather than trap.
        do { try LoopExecutor.installAsGlobalExecutor() } catch { fail(CommandFailure("cannot start: \(error)")) }
        do {
            var command = try parseAsRoot()
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
            // Usage errors (`ValidationError`, unknown options): the parser's own message and help.
            exit(withError: error)
        }
    }

    private static func fail(_ failure: CommandFailure) -> Never {
        if !failure.text.isEmpty { StandardStream.error.write(failure.text + "\n") }
        Glibc.exit(1)
    }
}
