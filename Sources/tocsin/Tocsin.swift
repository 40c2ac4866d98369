import ArgumentParser

@main
struct Tocsin: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tocsin",
        abstract: "A notification gateway: schedule notifications, alarms and reminders.",
        subcommands: [
            DaemonCommand.self, ScheduleCommand.self, PostCommand.self, ListCommand.self, CancelCommand.self,
            AckCommand.self, SnoozeCommand.self, ReloadCommand.self, WatchCommand.self, NextCommand.self, CheckCommand.self,
        ]
    )
}
