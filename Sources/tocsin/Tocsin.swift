import ArgumentParser

@main
struct Tocsin: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tocsin",
        abstract: "A notification gateway: schedule notifications, alarms and reminders.",
        subcommands: [DaemonCommand.self, CheckCommand.self, NextCommand.self]
    )
}
