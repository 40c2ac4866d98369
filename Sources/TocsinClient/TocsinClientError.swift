/// What went wrong with a request, whichever side noticed it.
///
/// The client checks what it can know without the daemon (an empty key, an interval of zero)
/// and throws before any call; everything else comes back from the daemon's error reply with its
/// D-Bus error name, the field it names and its message. Both carry the same shape, so an app
/// handles one type whether it talks to the daemon or to the test double.
public struct TocsinClientError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A closed set of codes: apps match on the static members, the client alone makes new ones.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum _Code: String, Sendable, Hashable {
            case invalidRequest = "invalid-request"
            case invalidTrigger = "invalid-trigger"
            case notFound = "not-found"
            case quotaExceeded = "quota-exceeded"
            case unknownBackend = "unknown-backend"
            case storage = "storage"
            case limitsExceeded = "limits-exceeded"
            case daemonUnavailable = "daemon-unavailable"
            case unexpectedReply = "unexpected-reply"
            case bus = "bus"
            case cancelled = "cancelled"
        }

        private let code: _Code
        private init(_ code: _Code) { self.code = code }

        /// The stable spelling, e.g. `invalid-trigger`, for logs and tests.
        public var description: String { code.rawValue }

        /// A malformed request: a field with a wrong value or type (the daemon's `InvalidArgs`,
        /// or what the client refused before calling).
        public static let invalidRequest = Code(.invalidRequest)
        /// A trigger that can never fire (an instant in the past, reminders all past).
        public static let invalidTrigger = Code(.invalidTrigger)
        /// No notification with that key.
        public static let notFound = Code(.notFound)
        /// This client holds as many pending notifications as the daemon allows one client.
        public static let quotaExceeded = Code(.quotaExceeded)
        /// `backends` names a backend the daemon has not configured.
        public static let unknownBackend = Code(.unknownBackend)
        /// The daemon could not make the change durable; nothing changed.
        public static let storage = Code(.storage)
        /// A reply or request larger than the bus allows.
        public static let limitsExceeded = Code(.limitsExceeded)
        /// No daemon answered: not running and not activatable, or it went away mid-call, or it
        /// is stopping (`io.github.tocsin.Error.Stopping`: nothing changed).
        public static let daemonUnavailable = Code(.daemonUnavailable)
        /// The daemon answered in a shape this client does not understand (a version mismatch).
        public static let unexpectedReply = Code(.unexpectedReply)
        /// Any other D-Bus failure (access denied, a bus that could not be reached).
        public static let bus = Code(.bus)
        /// The calling task was cancelled while it waited. The methods throw only
        /// `TocsinClientError` (typed throws), so this code stands where `CancellationError`
        /// would: an app that stops quietly on cancellation checks for it, and reports every
        /// other code. Whether the daemon acted on a call it had already received is unknown.
        public static let cancelled = Code(.cancelled)
    }

    /// What kind of failure, to branch on.
    public var code: Code
    /// The daemon's D-Bus error name (`io.github.tocsin.Error.InvalidTrigger`), nil when the
    /// client refused the request itself.
    public var name: String?
    /// The request field at fault (`at`, `title`, `every`, `key`), when one is.
    public var field: String?
    /// The daemon's (or the client's) words, for people; may quote the column of a mistake.
    public var message: String

    /// For the double and apps' own fakes, which must throw what the client throws.
    public init(_ code: Code, _ message: String, field: String? = nil, name: String? = nil) {
        self.code = code
        self.message = message
        self.field = field
        self.name = name
    }

    /// Code, field and message on one line, for logs.
    public var description: String {
        var s = "\(code)"
        if let field { s += " (field '\(field)')" }
        return s + ": " + message
    }
}

extension TocsinClientError {
    /// The error names the daemon answers with, mapped onto codes; one table for every method.
    static func fromDaemon(name: String, message: String) -> TocsinClientError {
        let code: Code
        switch name {
        case "io.github.tocsin.Error.NotFound": code = .notFound
        case "io.github.tocsin.Error.QuotaExceeded": code = .quotaExceeded
        case "io.github.tocsin.Error.InvalidTrigger": code = .invalidTrigger
        case "io.github.tocsin.Error.UnknownBackend": code = .unknownBackend
        case "io.github.tocsin.Error.Storage": code = .storage
        case "org.freedesktop.DBus.Error.InvalidArgs": code = .invalidRequest
        case "org.freedesktop.DBus.Error.LimitsExceeded": code = .limitsExceeded
        case "org.freedesktop.DBus.Error.ServiceUnknown", "org.freedesktop.DBus.Error.NameHasNoOwner",
             "org.freedesktop.DBus.Error.NoReply", "org.freedesktop.DBus.Error.Disconnected",
             "org.freedesktop.DBus.Error.Spawn.ChildExited", "org.freedesktop.DBus.Error.Spawn.ExecFailed",
             "org.freedesktop.DBus.Error.TimedOut", "org.freedesktop.DBus.Error.NoServer",
             "io.github.tocsin.Error.Stopping":
            code = .daemonUnavailable
        case "org.tocsin.DBus.Error.Cancelled": return TocsinClientError(.cancelled, message)
        default: code = .bus
        }
        // These two name what was asked for, not a field, so the field is known from the code.
        let field = code == .notFound ? "key" : code == .unknownBackend ? "backends" : field(in: message)
        return TocsinClientError(code, message, field: field, name: name)
    }

    /// Request fields and method arguments the daemon's messages name.
    static let knownFields: Set<String> = [
        "key", "title", "body", "at", "after", "every", "count", "starting", "until", "on_calendar",
        "remind_before", "timezone", "dst_gap", "dst_fold", "backends", "urgency", "icon", "category", "sound",
        "actions", "user_info", "missed", "max_late", "replace", "wake", "duration", "for", "since", "limit",
    ]

    /// The field a daemon message names: `field 'at': ...`, `invalid 'after': ...`, `'title' in the
    /// notification spec ...` all quote it; the first quoted word that is a field is the one.
    static func field(in message: String) -> String? {
        var rest = Substring(message)
        while let open = rest.firstIndex(of: "'") {
            let after = rest[rest.index(after: open)...]
            guard let close = after.firstIndex(of: "'") else { return nil }
            var word = String(after[..<close])
            if let dot = word.firstIndex(of: ".") { word = String(word[..<dot]) }  // 'actions.join'
            if knownFields.contains(word) { return word }
            rest = after[after.index(after: close)...]
        }
        return nil
    }
}
