import ArgumentParser
import TocsinConfig

struct CheckCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "check", abstract: "Validate a configuration file.")
    @Argument var file: String?
    func run() throws { throw ValidationError("not yet available") }
}
