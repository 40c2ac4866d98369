import FoundationEssentials

/// How insistently a notification asks for attention; popups and sounds honour it.
public enum NotificationUrgency: String, Sendable, Hashable, CaseIterable {
    /// `critical` popups stay until dismissed on most servers.
    case low, normal, critical
}

/// A button on a popup. The id comes back in `NotificationEvent.actionInvoked`, the title is
/// what a person reads.
public struct NotificationAction: Sendable, Hashable {
    /// Returned in `actionInvoked`; unique within the notification.
    public var id: String
    /// The button label.
    public var title: String
    /// An action button; both strings go to the popup server as is.
    public init(id: String, title: String) {
        self.id = id
        self.title = title
    }
}

/// What a notification says and where it goes, apart from when: the same content can be
/// scheduled under several keys and triggers, as `UNMutableNotificationContent` is.
public struct NotificationContent: Sendable, Hashable {
    /// The summary line; required (at most 4096 bytes).
    public var title: String
    /// The text under it (at most 65536 bytes).
    public var body: String
    /// How insistently it asks for attention.
    public var urgency: NotificationUrgency
    /// An icon name or path for popups.
    public var icon: String?
    /// A freedesktop notification category (`im.received`, `device`), for servers that sort by it.
    public var category: String?
    /// Buttons, at most 16.
    public var actions: [NotificationAction]
    /// A sound name or file; the daemon's sound backend plays it.
    public var sound: String?
    /// The daemon's backend instances to deliver to; nil means the daemon's default (every
    /// backend except alarms). `Fired` events only come for notifications routed to a
    /// `dbus-signal` backend, so name one here when you name any.
    public var backends: [String]?
    /// Handed back with every firing and action, so an app can find its own record again.
    public var userInfo: [String: String]

    /// Everything but the title is optional, as in the config file.
    public init(title: String, body: String = "", urgency: NotificationUrgency = .normal, icon: String? = nil,
                category: String? = nil, actions: [NotificationAction] = [], sound: String? = nil,
                backends: [String]? = nil, userInfo: [String: String] = [:]) {
        self.title = title
        self.body = body
        self.urgency = urgency
        self.icon = icon
        self.category = category
        self.actions = actions
        self.sound = sound
        self.backends = backends
        self.userInfo = userInfo
    }
}

/// One notification to schedule: the key makes it addressable (replace, remove, acknowledge,
/// filter events), as a `UNNotificationRequest`'s identifier does.
public struct NotificationRequest: Sendable, Hashable {
    /// Unique per daemon (printable, no spaces, at most 255 bytes).
    public var key: String
    /// What it says and where it goes.
    public var content: NotificationContent
    /// When it fires.
    public var trigger: NotificationTrigger
    /// False keeps a pending notification with the same key instead of replacing it: an app that
    /// re-adds its schedule on every start then leaves running ones alone.
    public var replacesExisting: Bool
    /// True brings the machine out of suspend for its firings (the daemon's `wake = true`), where
    /// the daemon may arm wake alarms (`CAP_WAKE_ALARM`); it fires as usual either way.
    public var wakesDevice: Bool

    /// A request replaces one with the same key unless `replacesExisting` is false.
    public init(key: String, content: NotificationContent, trigger: NotificationTrigger, replacesExisting: Bool = true,
                wakesDevice: Bool = false) {
        self.key = key
        self.content = content
        self.trigger = trigger
        self.replacesExisting = replacesExisting
        self.wakesDevice = wakesDevice
    }

    /// Throws what the client can tell is wrong without asking the daemon, naming the field.
    /// `add` calls it first; the test double uses the same checks, so a test sees the same error.
    public func validate() throws(TocsinClientError) {
        try RequestRules.key(key)
        try RequestRules.content(content)
        try trigger.validate()
    }
}

extension NotificationRequest {
    /// The key rules alone (non-empty, at most 255 bytes, nothing invisible or space-like), for
    /// keys that come from elsewhere: `remove`, `acknowledge` and `snooze` check them before calling.
    public static func validate(key: String) throws(TocsinClientError) { try RequestRules.key(key) }

    /// What `snooze` checks before calling: the key, and a duration of at least a microsecond
    /// (the daemon's resolution; less would reach it as zero) within the daemon's horizon.
    public static func validate(key: String, snoozeDuration: Duration?) throws(TocsinClientError) {
        try RequestRules.key(key)
        if let snoozeDuration { try RequestRules.span("duration", snoozeDuration) }
    }
}

extension QuietDuration {
    /// What `quietOn` checks before calling: a `for` of at least a microsecond (less would
    /// reach the daemon as zero) within its horizon. An `until` already past is the daemon's to
    /// refuse, against its own clock.
    public func validate() throws(TocsinClientError) {
        if case .duration(let d) = self { try RequestRules.span("for", d) }
    }
}

extension HistoryQuery {
    /// What `history` checks before calling: the key's rules and a `limit` the daemon takes.
    public func validate() throws(TocsinClientError) {
        if let key { try RequestRules.key(key) }
        if !(1...10_000).contains(limit) {
            throw RequestRules.invalid("limit", "'limit' must be from 1 to 10000 (the most History returns per call), got \(limit)")
        }
    }
}

/// The limits both sides agree on (docs/CONFIG.md, "[[notification]]"); the daemon checks them again.
enum RequestRules {
    static func invalid(_ field: String, _ message: String) -> TocsinClientError {
        TocsinClientError(.invalidRequest, message, field: field)
    }

    /// The daemon's rule and words (`NotificationFields.validateKey`), kept here because an app
    /// links no daemon module: a key that looks like another on screen (a no-break space, a
    /// zero-width space, a right-to-left override) is refused naming the character and where it
    /// is, so the caller can find it. The joiners (U+200C, U+200D) stay allowed for emoji and
    /// scripts that need them.
    static func key(_ key: String) throws(TocsinClientError) {
        if key.isEmpty { throw invalid("key", "'key' must not be empty") }
        if key.utf8.count > 255 { throw invalid("key", "'key' is \(key.utf8.count) bytes; the limit is 255") }
        for (i, c) in key.unicodeScalars.enumerated() {
            let kind: String?
            switch c.value {
            case 0x20: kind = "a space"
            case 0..<0x20, 0x7F: kind = "a control character"
            case 0x21..<0x7F: kind = nil
            case 0x200B, 0x2060, 0xFEFF: kind = "an invisible character (zero-width space, word joiner or byte-order mark)"
            case 0x061C, 0x200E, 0x200F, 0x202A...0x202E, 0x2066...0x2069: kind = "a bidi control"
            case 0xE0000...0xE007F: kind = "an invisible tag character"
            default:
                switch c.properties.generalCategory {
                case .control: kind = "a control character"
                case .spaceSeparator, .lineSeparator, .paragraphSeparator: kind = "a space or separator"
                default: kind = nil
                }
            }
            if let kind {
                let hex = String(c.value, radix: 16, uppercase: true)
                throw invalid("key", "'key' must not contain spaces or control characters: U+\(String(repeating: "0", count: max(0, 4 - hex.count)))\(hex) at character \(i + 1) is \(kind)")
            }
        }
    }

    /// The most any duration may be: from 1970 to 9999-12-31T23:59:59Z, the latest instant the
    /// daemon schedules, so that no `now + span` can pass it unnoticed.
    static let longestMicroseconds: Int64 = 253_402_300_799_000_000
    static let latestMicroseconds: Int64 = 253_402_300_799_000_000

    /// The daemon's words for a value past its horizon (TocsinTime's `TimeLimit.pastLatest`).
    static func pastLatest(_ field: String, _ value: String) -> TocsinClientError {
        invalid(field, "'\(field)' \(value) reaches past 9999-12-31T23:59:59Z, the latest instant Tocsin schedules")
    }

    /// An interval the daemon reads as a span: at least its resolution (less reaches it as
    /// zero) and at most the horizon.
    static func span(_ field: String, _ d: Duration) throws(TocsinClientError) {
        let us = d.microseconds
        if us < 1 { throw invalid(field, "'\(field)' must be at least 1 microsecond, got \(d)") }
        if us > longestMicroseconds { throw pastLatest(field, d.systemdText) }
    }

    static func instant(_ field: String, _ d: Date) throws(TocsinClientError) {
        if d.unixMicroseconds > latestMicroseconds { throw pastLatest(field, Wire.instant(d)) }
    }

    static func text(_ field: String, _ value: String, max: Int) throws(TocsinClientError) {
        if value.utf8.contains(0) { throw invalid(field, "'\(field)' contains a NUL character") }
        if value.utf8.count > max { throw invalid(field, "'\(field)' is \(value.utf8.count) bytes; the limit is \(max)") }
    }

    static func content(_ c: NotificationContent) throws(TocsinClientError) {
        if c.title.isEmpty { throw invalid("title", "'title' must not be empty") }
        try text("title", c.title, max: 4096)
        try text("body", c.body, max: 65536)
        for (field, value) in [("icon", c.icon), ("category", c.category), ("sound", c.sound)] {
            if let value { try text(field, value, max: 4096) }
        }
        if c.actions.count > 16 { throw invalid("actions", "'actions' has \(c.actions.count) entries; the limit is 16") }
        var ids = Set<String>()
        for a in c.actions {
            if a.id.isEmpty { throw invalid("actions", "an action id must not be empty") }
            guard ids.insert(a.id).inserted else { throw invalid("actions", "action '\(a.id)' is given twice") }
            try text("actions", a.id, max: 4096)
            try text("actions", a.title, max: 4096)
        }
        if let b = c.backends {
            // As the daemon refuses it: an empty list is not "all backends" (that is nil).
            if b.isEmpty { throw invalid("backends", "'backends' is empty, so it would deliver to nothing; name at least one backend, or leave it nil for the default ones") }
            if b.count > 64 { throw invalid("backends", "'backends' has \(b.count) entries; the limit is 64") }
            if Set(b).count != b.count { throw invalid("backends", "'backends' names a backend twice") }
            for name in b { try text("backends", name, max: 255) }
        }
        if c.userInfo.count > 64 { throw invalid("user_info", "'user_info' has \(c.userInfo.count) entries; the limit is 64") }
        // The key is what an app looks its record up by: an empty one is a mistake, not a name.
        if c.userInfo.keys.contains("") { throw invalid("user_info", "a key in 'user_info' must not be empty") }
        var bytes = 0
        for (k, v) in c.userInfo {
            try text("user_info", k, max: 65536)
            try text("user_info", v, max: 65536)
            bytes += k.utf8.count + v.utf8.count
        }
        if bytes > 65536 { throw invalid("user_info", "'user_info' holds \(bytes) bytes; the limit is 65536") }
    }
}
