import ArgumentParser
import TocsinTime

// Owned by the time helper: `tocsin next`.
struct NextCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "next", abstract: "Show when a calendar expression or period elapses next.")
    @Argument var expression: String
    func run() throws { throw ValidationError("not yet available") }
}
