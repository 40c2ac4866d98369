import ArgumentParser
import DBus
import FoundationEssentials
import TocsinConfig
import TocsinGateway
import TocsinTime
import TocsinModel

/// The notification fields as flags, mirroring the `Schedule` spec (and the config file's keys).
struct NotificationFlags: ParsableArguments {
    @Option(parsing: .unconditional, help: "Unique key; a later notification with the same key replaces this one.") var key: String?
    @Option(parsing: .unconditional, help: "Summary line.") var title: String
    @Option(parsing: .unconditional, help: "Body text.") var body: String?
    @Option(name: .customLong("backend"), help: "Deliver to this backend instance (repeatable; default: all).") var backends: [String] = []
    @Option(help: "low, normal or critical.") var urgency: String?
    @Option(help: "Icon name or path.") var icon: String?
    @Option(help: "freedesktop notification category.") var category: String?
    @Option(help: "Sound name or file.") var sound: String?
    @Option(name: .customLong("action"), help: "A button, ID=LABEL (repeatable).") var actions: [String] = []
    @Option(name: .customLong("user-info"), help: "KEY=VALUE handed back with every firing (repeatable).") var userInfo: [String] = []

    func fields() throws -> [(String, DBusValue)] {
        var f: [(String, DBusValue)] = [("title", .string(title))]
        if let key { f.append(("key", .string(key))) }
        if let body { f.append(("body", .string(body))) }
        if !backends.isEmpty { f.append(("backends", .array(.string, backends.map { .string($0) }))) }
        if let urgency { f.append(("urgency", .string(urgency))) }
        if let icon { f.append(("icon", .string(icon))) }
        if let category { f.append(("category", .string(category))) }
        if let sound { f.append(("sound", .string(sound))) }
        if !actions.isEmpty { f.append(("actions", try pairs(actions, flag: "--action"))) }
        if !userInfo.isEmpty { f.append(("user_info", try pairs(userInfo, flag: "--user-info"))) }
        return f
    }

    private func pairs(_ items: [String], flag: String) throws -> DBusValue {
        var entries: [DBusValue.DictEntry] = []
        for item in items {
            guard let eq = item.firstIndex(of: "="), eq != item.startIndex else {
                throw ValidationError("\(flag) takes KEY=VALUE, got '\(item)'")
            }
            entries.append(.init(.string(String(item[..<eq])), .string(String(item[item.index(after: eq)...]))))
        }
        return .dictionary(key: .string, value: .string, entries)
    }
}

struct ScheduleCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "schedule", _superCommandName: Tocsin.name, abstract: "Schedule a notification; prints its key.",
        discussion: """
        Give exactly one trigger: --at, --after, --every, --on-calendar, or --remind-before with --at.
        Times are a date and time in the notification's zone ('2026-12-24 18:00'), a time today (18:00), tomorrow, 'YYYY-MM-DD HH:MM UTC', RFC 3339, @<unix seconds>, or +<duration> from now (docs/CONFIG.md, "Written times").
        Examples:
          tocsin schedule --title Tea --after 3min
          tocsin schedule --key standup --title Stand-up \\
              --on-calendar 'Mon..Fri 09:25' --timezone Europe/Berlin
          tocsin schedule --title 'Auction ends' --at '2026-12-01 18:00' \\
              --remind-before 24h --remind-before 1h
        """)

    @OptionGroup var notification: NotificationFlags
    @Option(parsing: .unconditional, help: "Fire once at this time.") var at: String?
    @Option(parsing: .unconditional, help: "Fire once after this duration (e.g. 15min).") var after: String?
    @Option(parsing: .unconditional, help: "Fire repeatedly with this period.") var every: String?
    @Option(parsing: .unconditional, help: "With --every: how many times.") var count: UInt32?
    @Option(parsing: .unconditional, help: "With --every: the first firing.") var starting: String?
    @Option(parsing: .unconditional, help: "With --every: no firing after this time.") var until: String?
    @Option(name: .customLong("on-calendar"), help: "A systemd calendar expression.") var onCalendar: String?
    @Option(help: "IANA time zone for --on-calendar and for times written without a zone (default: the daemon's).") var timezone: String?
    @Option(name: .customLong("dst-gap"), help: "With --on-calendar: skip (default) or shift, fire a time a DST change skips at the first valid instant after it.") var dstGap: String?
    @Option(name: .customLong("dst-fold"), help: "With --on-calendar: first (default) or both, fire a time a DST change repeats at each occurrence.") var dstFold: String?
    @Option(name: .customLong("remind-before"), parsing: .unconditionalSingleValue, help: "Fire this long before --at (repeatable).") var remindBefore: [String] = []
    @Option(help: "skip, fire-once or fire-all.") var missed: String?
    @Option(name: .customLong("max-late"), parsing: .unconditional, help: "Skip a missed firing later than this.") var maxLate: String?
    @Flag(name: .customLong("keep-existing"), help: "Keep an existing notification with the same key instead of replacing it.")
    var keepExisting = false
    @Flag(help: "Schedule it on every machine of the daemon's [fleet] too.") var fleet = false
    @Flag(help: "Wake the machine from suspend for its firings (needs CAP_WAKE_ALARM; see tocsin status).") var wake = false
    @OptionGroup var bus: ClientOptions

    func run() async throws {
        var f = try notification.fields()
        if fleet { f.append(("fleet", .boolean(true))) }
        if wake { f.append(("wake", .boolean(true))) }
        for (k, v) in [("at", at), ("after", after), ("every", every), ("starting", starting), ("until", until),
                       ("on_calendar", onCalendar), ("timezone", timezone), ("dst_gap", dstGap), ("dst_fold", dstFold),
                       ("missed", missed), ("max_late", maxLate)] {
            if let v { f.append((k, .string(v))) }
        }
        if let count { f.append(("count", .uint32(count))) }
        if !remindBefore.isEmpty { f.append(("remind_before", .array(.string, remindBefore.map { .string($0) }))) }
        if keepExisting { f.append(("replace", .boolean(false))) }
        let client = try await Client.connect(bus)
        let reply = try await client.call("Schedule", [.vardict(f)])
        print(JSONText.visible((try? reply.first?.asString()) ?? ""))
    }
}

struct PostCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "post", _superCommandName: Tocsin.name, abstract: "Deliver a notification now; prints its key.")
    @OptionGroup var notification: NotificationFlags
    @OptionGroup var bus: ClientOptions

    func run() async throws {
        let f = try notification.fields()
        let client = try await Client.connect(bus)
        let reply = try await client.call("PostNow", [.vardict(f)])
        print(JSONText.visible((try? reply.first?.asString()) ?? ""))
    }
}

struct ListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "list", _superCommandName: Tocsin.name, abstract: "List pending notifications, soonest first.")
    @Flag(help: "One JSON array.") var json = false
    @Flag(help: "Show times in UTC instead of the local zone.") var utc = false
    @OptionGroup var bus: ClientOptions

    func run() async throws {
        let client = try await Client.connect(bus)
        let items = try await Self.walk(client)
        if json {
            print("[" + items.map(\.json).joined(separator: ",") + "]")
            return
        }
        if items.isEmpty { print("no pending notifications"); return }
        let display = TimeDisplay(utc: utc)
        let rows = items.map { item in
            let d = Dictionary(item.vardictEntries, uniquingKeysWith: { a, _ in a })
            return TimeDisplay.Row(
                key: (try? d["key"]?.asString()) ?? "",
                next: (try? d["next_fire"]?.asInt64()).map { Instant(microseconds: $0) },
                last: (try? d["last_fire"]?.asInt64()).map { Instant(microseconds: $0) },
                // A notification that wakes the machine says so beside its state.
                state: ((try? d["state"]?.asString()) ?? "") + ((try? d["wake"]?.asBool()) == true ? "+wake" : ""), trigger: (try? d["trigger"]?.asString()) ?? "",
                title: (try? d["title"]?.asString()) ?? "")
        }
        for line in display.table(rows) { print(line) }
    }
}

extension ListCommand {
    /// Every pending notification, soonest first (ringing ones first of all), read with
    /// `ListPage` one page after the other so that no reply outgrows the bus however much is
    /// pending; the pages come in key order and are sorted here.
    static func walk(_ client: Client) async throws -> [DBusValue] {
        var items: [(next: Int64?, key: String, value: DBusValue)] = []
        var cursor = ""
        repeat {
            guard let reply = try await client.callIfKnown("ListPage", [.string(cursor), .uint32(0)]) else {
                // A daemon from before ListPage: its one-reply List.
                guard cursor.isEmpty, case .array(_, let all)? = try await client.call("List").first else { return [] }
                return all
            }
            guard reply.count == 2, case .array(_, let page) = reply[0], case .string(let next) = reply[1] else {
                throw CommandFailure("the daemon answered ListPage with '\(reply.map { "\($0.type)" }.joined())', expected 'aa{sv}s'")
            }
            for item in page {
                let d = Dictionary(item.vardictEntries, uniquingKeysWith: { a, _ in a })
                items.append(((try? d["next_fire"]?.asInt64()) ?? nil, ((try? d["key"]?.asString()) ?? nil) ?? "", item))
            }
            if !next.isEmpty && !cursor.isEmpty && !Array(cursor.utf8).lexicographicallyPrecedes(Array(next.utf8)) {
                throw CommandFailure("the daemon's ListPage went backwards (after '\(cursor)' it continued at '\(next)')")
            }
            cursor = next
        } while !cursor.isEmpty
        items.sort { a, b in
            switch (a.next, b.next) {
            case (nil, nil): return a.key < b.key
            case (nil, _): return true
            case (_, nil): return false
            case (let x?, let y?): return x != y ? x < y : a.key < b.key
            }
        }
        return items.map(\.value)
    }
}

struct CancelCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "cancel", _superCommandName: Tocsin.name, abstract: "Cancel a notification, or all of them.")
    @Argument(help: "The key to cancel.") var key: String?
    @Flag(help: "Cancel every pending notification.") var all = false
    @OptionGroup var bus: ClientOptions

    func validate() throws {
        if all == (key != nil) { throw ValidationError("give either a KEY or --all") }
    }

    func run() async throws {
        let client = try await Client.connect(bus)
        if all {
            let reply = try await client.call("CancelAll")
            let n = (try? reply.first?.asUInt32()) ?? 0
            print("cancelled \(n) notification\(n == 1 ? "" : "s")")
        } else if let key {
            let reply = try await client.call("Cancel", [.string(key)])
            let existed = (try? reply.first?.asBool()) ?? false
            if !existed { throw CommandFailure("no pending notification with key '\(key)'") }
        }
    }
}

struct AckCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "ack", _superCommandName: Tocsin.name, abstract: "Acknowledge a ringing notification (stops the alarm).")
    @Argument var key: String
    @OptionGroup var bus: ClientOptions

    func run() async throws {
        let client = try await Client.connect(bus)
        let reply = try await client.call("Acknowledge", [.string(key)])
        let done = (try? reply.first?.asBool()) ?? false
        if !done { print("'\(JSONText.visible(key))' was not ringing") }
    }
}

struct SnoozeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "snooze", _superCommandName: Tocsin.name, abstract: "Silence a notification and deliver it again later.")
    @Argument var key: String
    @Argument(help: "How long, e.g. 10min (default: 5min).") var duration: String?
    @OptionGroup var bus: ClientOptions

    func run() async throws {
        let client = try await Client.connect(bus)
        let reply = try await client.call("Snooze", [.string(key), .string(duration ?? "")])
        if let until = try? reply.first?.asInt64() { print("snoozed until \(Show.time(until))") }
    }
}

struct ReloadCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "reload", _superCommandName: Tocsin.name, abstract: "Reload the daemon's configuration.")
    @OptionGroup var bus: ClientOptions

    func run() async throws {
        let client = try await Client.connect(bus)
        _ = try await client.call("Reload")
    }
}

struct WatchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "watch", _superCommandName: Tocsin.name, abstract: "Print one line per gateway event until interrupted.")
    @Flag(help: "JSON lines.") var json = false
    @OptionGroup var bus: ClientOptions

    func run() async throws {
        let client = try await Client.connect(bus)
        let sub: DBusSignalSubscription
        do {
            // From the gateway's name only: the bus resolves it to the current owner, so any other
            // client sending a signal of the same shape is not shown as the daemon's event.
            sub = try await client.connection.subscribe(MatchRule(sender: Gateway.busName, interface: Gateway.interface,
                                                                  path: Gateway.objectPath))
        } catch {
            throw CommandFailure("cannot subscribe: \(Client.text(error))")
        }
        // Watching a bus without the daemon is legitimate (it may be started later), but a
        // silent terminal reads as a hang: say so once, on stderr, and keep watching.
        if let owned = try? await client.connection.call(
            destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
            member: "NameHasOwner", arguments: [.string(Gateway.busName.rawValue)]).first?.asBool(), !owned {
            StandardStream.error.write("note: the Tocsin daemon is not running on \(bus.description) yet; start it with 'tocsin daemon' or 'systemctl --user start tocsin'. Waiting for its events.\n")
        }
        // One write per event, unbuffered: a pipe reader sees each line as it happens.
        for await signal in sub {
            StandardStream.output.write((json ? Self.json(signal) : Self.text(signal)) + "\n")
        }
        // The stream ends only with the connection: a lost bus is an error, not the end of watching.
        throw CommandFailure("lost the connection to \(bus.description); no more events")
    }

    static func json(_ s: DBusSignal) -> String {
        var fields = ["\"event\":\(jsonQuote(s.member.rawValue))"]
        for (name, a) in named(s) {
            if name == "key", let key = try? a.asString() { fields.append("\"key\":\(jsonQuote(key))"); continue }
            fields.append("\(jsonQuote(name)):\(a.json)")
        }
        return "{" + fields.joined(separator: ",") + "}"
    }

    static func text(_ s: DBusSignal) -> String {
        var line = s.member.rawValue
        for (name, a) in named(s) {
            if name == "key", let key = try? a.asString() { line += " " + JSONText.visible(key); continue }
            if case .int64(let t) = a, name != "rings" { line += " \(name)=\"\(Show.time(t))\""; continue }
            if name == "info" {
                for (k, v) in a.vardictEntries where ["title", "due", "occurrence", "late"].contains(k) {
                    if case .int64(let t) = v { line += " \(k)=\"\(Show.time(t))\"" } else { line += " \(k)=\(v.json)" }
                }
                continue
            }
            line += " \(name)=\(a.json)"
        }
        return line
    }

    /// Each argument with its name in the API (docs/DBUS-API.md), `argN` for one it does not
    /// declare.
    static func named(_ s: DBusSignal) -> [(String, DBusValue)] {
        let names = argumentNames[s.member.rawValue] ?? ["key"]
        return s.arguments.enumerated().map { (i, a) in (names[safe: i] ?? "arg\(i + 1)", a) }
    }

    /// Every argument, the first included: most signals start with the notification's key, but
    /// `CancelledAll` and `QuietChanged` do not, and naming their first argument `key` dropped
    /// `CancelledAll`'s count from the line.
    static let argumentNames: [String: [String]] = [
        "Fired": ["key", "info"], "ActionInvoked": ["key", "action", "user_info"], "Acknowledged": ["key"],
        "Snoozed": ["key", "until"], "Cancelled": ["key"], "Missed": ["key", "due"], "Unanswered": ["key", "rings"],
        "Interrupted": ["key", "due", "occurrence", "backends"], "CancelledAll": ["count"], "QuietChanged": ["active", "quiet"],
    ]
}

extension Array {
    subscript(safe i: Int) -> Element? { indices.contains(i) ? self[i] : nil }
}
