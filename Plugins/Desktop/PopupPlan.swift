public import TocsinCore
public import TocsinTime
public import TocsinModel

/// How long a popup stays up, as the notification spec's `expire_timeout` understands it.
public enum PopupTimeout: Hashable, Sendable {
    /// The server decides (`-1`).
    case serverDefault
    /// Stays until closed (`0`).
    case never
    /// Expires after this many milliseconds (always > 0).
    case milliseconds(Int32)

    /// The value of `expire_timeout`.
    public var expireTimeout: Int32 {
        switch self {
        case .serverDefault: -1
        case .never: 0
        case .milliseconds(let ms): ms
        }
    }
}

/// The options of one `[backend.NAME]` table of type `libnotify`.
public struct DesktopOptions: Hashable, Sendable {
    public var appName: String
    /// nil: the server's default for ordinary popups, never expiring for alarms (whose buttons
    /// must stay reachable while they ring).
    public var timeout: PopupTimeout?
    /// Snooze length for the Snooze button; nil leaves it to the daemon's default.
    public var snooze: TimeSpan?
    /// The `desktop-entry` hint, so servers can group popups and find the app's icon.
    public var desktopEntry: String?

    public init(appName: String = "Tocsin", timeout: PopupTimeout? = nil, snooze: TimeSpan? = nil,
                desktopEntry: String? = nil) {
        self.appName = appName; self.timeout = timeout; self.snooze = snooze; self.desktopEntry = desktopEntry
    }
}

/// What a notification server said it can do (`GetCapabilities`), reduced to what changes our requests.
public struct ServerCapabilities: Hashable, Sendable {
    public var names: Set<String>
    public init(_ names: some Sequence<String>) { self.names = Set(names) }
    public var actions: Bool { names.contains("actions") }
    public var bodyMarkup: Bool { names.contains("body-markup") }
}

public struct PopupButton: Hashable, Sendable {
    public var id: String
    public var label: String
    public init(_ id: String, _ label: String) { self.id = id; self.label = label }
}

/// A typed hint value; the spec's hints are variants and servers check their types.
public enum HintValue: Hashable, Sendable {
    case string(String)
    case bool(Bool)
}

/// Everything one `Notify` call carries, decided without touching libnotify so it can be tested as a value.
public struct PopupPlan: Hashable, Sendable {
    public var appName: String
    public var summary: String
    public var body: String
    public var icon: String?
    public var urgency: Urgency
    public var timeout: PopupTimeout
    public var category: String?
    public var hints: [String: HintValue]
    /// In the order they should appear; `default` (a click on the popup) is among them.
    public var buttons: [PopupButton]

    /// Ids with a fixed meaning, whichever notification they come from.
    public static let dismissAction = "dismiss"
    public static let snoozeAction = "snooze"
    public static let defaultAction = "default"

    public init(firing: Firing, options: DesktopOptions, capabilities: ServerCapabilities) {
        let n = firing.notification
        appName = options.appName
        // The spec requires a summary and libnotify refuses an empty one; the app name is the least surprising stand-in.
        summary = n.title.isEmpty ? options.appName : n.title
        body = capabilities.bodyMarkup ? Markup.escape(n.body) : n.body
        icon = n.icon.flatMap { $0.isEmpty ? nil : $0 }
        urgency = n.urgency
        timeout = options.timeout ?? (firing.isAlarm ? .never : .serverDefault)
        category = n.category.flatMap { $0.isEmpty ? nil : $0 }
        var hints: [String: HintValue] = [:]
        if let entry = options.desktopEntry { hints["desktop-entry"] = .string(entry) }
        if firing.isAlarm {
            // The alarm backend rings; a server sound on top would be a second, unsynchronised one.
            hints["suppress-sound"] = .bool(true)
        } else if let sound = n.sound, !sound.isEmpty {
            hints[sound.hasPrefix("/") ? "sound-file" : "sound-name"] = .string(sound)
        }
        self.hints = hints
        buttons = capabilities.actions ? Self.buttons(for: firing) : []
    }

    /// Dismiss and Snooze for alarms, then the notification's own actions, then `default` (always,
    /// so a click on the popup reaches the center even when it has no buttons). First id wins.
    public static func buttons(for firing: Firing) -> [PopupButton] {
        var out: [PopupButton] = []
        var seen: Set<String> = []
        func add(_ b: PopupButton) {
            if seen.insert(b.id).inserted { out.append(b) }
        }
        if firing.isAlarm {
            add(PopupButton(dismissAction, "Dismiss"))
            add(PopupButton(snoozeAction, "Snooze"))
        }
        for a in firing.notification.actions where !a.id.isEmpty {
            add(PopupButton(a.id, a.label.isEmpty ? a.id : a.label))
        }
        add(PopupButton(defaultAction, "Open"))
        return out
    }
}

/// The center's view of a button press.
public enum ActionRouting: Sendable {
    public static func event(action: String, key: String, snooze: TimeSpan?) -> BackendEvent {
        switch action {
        case PopupPlan.dismissAction: .acknowledge(key: key)
        case PopupPlan.snoozeAction: .snooze(key: key, duration: snooze)
        default: .actionInvoked(key: key, action: action)
        }
    }
}

/// The notification spec's body markup is a small XML-like subset (`b`, `i`, `u`, `a`, `img`); servers
/// that support it parse the body, so user text must be escaped or it could inject links and images.
public enum Markup: Sendable {
    public static func escape(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for ch in text.unicodeScalars {
            switch ch {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            default: out.unicodeScalars.append(ch)
            }
        }
        return out
    }
}
