import ArgumentParser
import DBus
import FoundationEssentials
import TocsinConfig
import TocsinTime
import TocsinModel

/// `tocsin history`: what happened to notifications (fired, acknowledged, snoozed, cancelled,
/// missed, unanswered), newest first, from the daemon's `History` method.
struct HistoryCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "history", _superCommandName: Tocsin.name, abstract: "Show recorded events, newest first.",
        discussion: "Every firing, acknowledge, snooze, cancel, missed and unanswered event is kept in the state database, up to [daemon] history_max_entries and history_max_age.")
    @Option(help: "Only this notification's events.") var key: String?
    @Option(help: "Only events at or after this time: '2026-11-29 08:00' or 08:00 (local), RFC 3339 or @<unix seconds>.") var since: String?
    @Option(parsing: .unconditional, help: "At most this many events (default 100, at most 10000).") var limit: UInt32 = 100
    @Flag(help: "One JSON array; times in unix microseconds.") var json = false
    @Flag(help: "Show times in UTC instead of the local zone.") var utc = false
    @OptionGroup var bus: ClientOptions

    func validate() throws {
        if limit < 1 || limit > 10_000 { throw ValidationError("--limit must be between 1 and 10000, found \(limit)") }
    }

    func run() async throws {
        var filter: [(String, DBusValue)] = [("limit", .uint32(limit))]
        if let key { filter.append(("key", .string(key))) }
        if let since {
            let local = TimeDisplay()
            do { filter.append(("since", .int64(try Timestamp.parse(since, now: local.now, zone: local.zone).microseconds))) } catch {
                throw ValidationError("invalid --since '\(since)': \(error)")
            }
        }
        let client = try await Client.connect(bus)
        let reply = try await client.call("History", [.vardict(filter)])
        guard case .array(_, let items)? = reply.first else {
            throw CommandFailure("the daemon answered History with '\(reply.map { "\($0.type)" }.joined())', expected 'aa{sv}'")
        }
        if json {
            print("[" + items.map(\.json).joined(separator: ",") + "]")
            return
        }
        if items.isEmpty { print("no recorded events"); return }
        let display = TimeDisplay(utc: utc)
        var cells = [["TIME", "EVENT", "KEY", "DETAIL", "BACKENDS", "TITLE"]]
        for item in items {
            let d = Dictionary(item.vardictEntries, uniquingKeysWith: { a, _ in a })
            func instant(_ name: String) -> Instant? { ((try? d[name]?.asInt64()) ?? nil).map { Instant(microseconds: $0) } }
            func number(_ name: String) -> UInt32? { (try? d[name]?.asUInt32()) ?? nil }
            let event = (try? d["event"]?.asString()) ?? "?"
            var detail: [String] = []
            switch event {
            case "fired", "interrupted":
                if let n = number("occurrence") { detail.append("#\(n)") }
                if let due = instant("due") { detail.append("due \(display.absolute(due))") }
                if (try? d["late"]?.asBool()) == true { detail.append("late") }
            case "snoozed":
                if let until = instant("until") { detail.append("until \(display.absolute(until))") }
            case "missed":
                if let n = number("count") { detail.append("\(n) missed") }
                if let due = instant("due") { detail.append("first due \(display.absolute(due))") }
            case "unanswered":
                if let n = number("count") { detail.append("\(n) rings") }
            default: break
            }
            let backends = ((try? d["backends"]?.asArray()) ?? []).compactMap { try? $0.asString() }
            // Client text (key, title, backend names) and whatever the daemon sent show their
            // control characters escaped.
            cells.append([instant("time").map(display.absolute) ?? "-", event, (try? d["key"]?.asString()) ?? "",
                          detail.isEmpty ? "-" : detail.joined(separator: ", "),
                          backends.isEmpty ? "-" : backends.joined(separator: ","),
                          (try? d["title"]?.asString()) ?? ""].map(JSONText.visible))
        }
        // Padded like `tocsin list`; the last column (the title) is not, so lines carry no trailing blanks.
        let widths = (0..<5).map { c in cells.map { $0[c].count }.max() ?? 0 }
        for line in cells {
            var out = ""
            for c in 0..<5 { out += line[c] + String(repeating: " ", count: widths[c] - line[c].count + 2) }
            print(out + line[5])
        }
    }
}
