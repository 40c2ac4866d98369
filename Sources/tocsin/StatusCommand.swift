import ArgumentParser
import DBus
import FoundationEssentials
import TocsinConfig
import TocsinGateway
import TocsinTime
import TocsinModel

/// `tocsin status`: one answer to "is it running, what does it hold, what happens next, which
/// backends work", so a newcomer never has to read the daemon's log to learn that popups are off.
struct StatusCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status", _superCommandName: Tocsin.name, abstract: "Show whether the daemon runs, what it holds and which backends work.")
    @Flag(help: "One JSON object (instants in microseconds since the epoch).") var json = false
    @Flag(help: "Show times in UTC instead of the local zone.") var utc = false
    @OptionGroup var bus: ClientOptions

    func run() async throws {
        let client = try await Client.connect(bus)
        let reply = try await client.call("Status")
        guard let status = reply.first else { throw CommandFailure("the daemon sent an empty Status reply") }
        if json { print(status.json); return }
        for line in Self.lines(status, display: TimeDisplay(utc: utc)) { print(line) }
    }

    /// The text form: labels right-aligned as `systemctl status` does, one backend per line.
    static func lines(_ status: DBusValue, display: TimeDisplay) -> [String] {
        let d = Dictionary(status.vardictEntries, uniquingKeysWith: { a, _ in a })
        func string(_ k: String) -> String? { try? d[k]?.asString() }
        func instant(_ k: String) -> Instant? { (try? d[k]?.asInt64()).map { Instant(microseconds: $0) } }
        var out = ["Tocsin daemon: running"]
        func add(_ label: String, _ value: String) {
            out.append(String(repeating: " ", count: max(0, 10 - label.count)) + label + ": " + JSONText.visible(value))
        }
        if let v = string("version") { add("Version", v) }
        if let pid = try? d["pid"]?.asUInt32() { add("PID", "\(pid)") }
        if let started = instant("started") {
            add("Uptime", "\(display.elapsed(since: started)) (since \(display.absolute(started)))")
        }
        if let c = string("config") { add("Config", c) }
        if let s = string("state_directory") { add("State", s) }
        let pending = (try? d["pending"]?.asUInt32()) ?? 0
        add("Pending", "\(pending) notification\(pending == 1 ? "" : "s")")
        if let next = instant("next_fire") {
            add("Next", "\(display.moment(next)): \(string("next_key") ?? "?")")
        } else {
            add("Next", "nothing scheduled")
        }
        if let wake = string("wake") { add("Wake", wake) }
        if let next = instant("wake_next") {
            let armed = instant("wake_armed").map { "armed for \(display.absolute($0))" } ?? "not armed"
            add("Wake next", "\(display.moment(next)): \(string("wake_next_key") ?? "?") (\(armed))")
        }
        if let sleep = string("sleep") { add("Sleep", sleep) }
        let backends = d["backends"]?.stringPairs ?? []
        if backends.isEmpty { add("Backends", "none configured") }
        for (i, (name, health)) in backends.enumerated() {
            let value = "\(name): \(health)"
            if i == 0 { add("Backends", value) } else { out.append(String(repeating: " ", count: 12) + JSONText.visible(value)) }
        }
        return out
    }
}

extension DBusValue {
    /// Entries of an `a{ss}`, in the order sent.
    var stringPairs: [(String, String)] {
        guard case .dictionary(_, _, let entries) = self else { return [] }
        return entries.compactMap { e in
            guard case .string(let k) = e.key, case .string(let v) = e.value.unwrappedVariant else { return nil }
            return (k, v)
        }
    }
}
