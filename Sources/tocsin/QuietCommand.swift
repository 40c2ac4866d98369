import ArgumentParser
import DBus
import FoundationEssentials
import TocsinConfig
import TocsinGateway
import TocsinTime
import TocsinModel

/// `tocsin quiet [on|off]`: do-not-disturb from the command line, through the same D-Bus
/// methods any client uses (`QuietOn`, `QuietOff`, `QuietStatus`).
struct QuietCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "quiet", _superCommandName: Tocsin.name, abstract: "Show quiet hours, or switch them on or off.",
        discussion: """
        Without an argument, shows whether it is quiet, why, until when, and how many firings are held.
        Examples:
          tocsin quiet on                  until 'tocsin quiet off'
          tocsin quiet on --for 1h         for an hour, then the [quiet] schedule again
          tocsin quiet on --until 07:00    until the next 07:00 (a calendar expression
                                           or a timestamp)
          tocsin quiet off                 off now (and for the rest of a scheduled
                                           window); held firings are delivered
        """)

    @Argument(help: "on or off; omit to show the state.") var action: String?
    @Option(name: .customLong("for"), parsing: .unconditional, help: "With on: how long (e.g. 1h, 90min).") var forDuration: String?
    @Option(parsing: .unconditional, help: "With on: until this time (07:00, 'Mon 07:00', tomorrow, '2026-12-24 18:00', RFC 3339, @unix).") var until: String?
    @Flag(help: "One JSON object (instants in microseconds since the epoch).") var json = false
    @Flag(help: "Show times in UTC instead of the local zone.") var utc = false
    @OptionGroup var bus: ClientOptions

    func validate() throws {
        if let action, action != "on" && action != "off" {
            throw ValidationError("expected 'on' or 'off', got '\(action)'")
        }
        if action != "on" && (forDuration != nil || until != nil) {
            throw ValidationError("--for and --until go with 'tocsin quiet on'")
        }
        if forDuration != nil && until != nil { throw ValidationError("give --for or --until, not both") }
        // Over D-Bus an empty value is the absent one (quiet until switched off); typed on the
        // command line it is more likely an unset variable than a wish to be quiet for good.
        for (name, value) in [("--for", forDuration), ("--until", until)] where value?.isEmpty == true {
            throw ValidationError("\(name) must not be empty; 'tocsin quiet on' alone is quiet until 'tocsin quiet off'")
        }
    }

    func run() async throws {
        let client = try await Client.connect(bus)
        let reply: [DBusValue]
        switch action {
        case "on": reply = try await client.call("QuietOn", [.string(forDuration ?? ""), .string(until ?? "")])
        case "off": reply = try await client.call("QuietOff")
        default: reply = try await client.call("QuietStatus")
        }
        guard let status = reply.first else { throw CommandFailure("the daemon sent an empty reply") }
        if json { print(status.json); return }
        print(Self.line(status, display: TimeDisplay(utc: utc)))
    }

    /// `quiet: on (manual) until Tue 2026-11-24 07:00:00 CET (in 9h left); 3 held`.
    static func line(_ status: DBusValue, display: TimeDisplay) -> String {
        let d = Dictionary(status.vardictEntries, uniquingKeysWith: { a, _ in a })
        let active = (try? d["active"]?.asBool()) ?? false
        let source = (try? d["source"]?.asString()) ?? "none"
        let held = (try? d["held"]?.asUInt32()) ?? 0
        var out = "quiet: \(active ? "on" : "off")"
        if source != "none" { out += " (\(JSONText.visible(source)))" }
        if let u = try? d["until"]?.asInt64() {
            out += (active ? " until " : " next at ") + display.moment(Instant(microseconds: u))
        }
        out += "; \(held) held"
        return out
    }
}
