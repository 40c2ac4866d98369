import TocsinModel
import TocsinSystem

/// Errors of the notification center. Each code maps to one D-Bus error name and one CLI exit message.
public struct CenterError: Error, Hashable, Sendable, CustomStringConvertible {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        /// The closed set of codes: clients match on the static members below but cannot make
        /// new ones. Raw values are the stable spellings that messages and tests show.
        private enum _Code: String, Hashable, Sendable {
            case notFound = "not-found"
            case quotaExceeded = "quota-exceeded"
            case invalidTrigger = "invalid-trigger"
            case unknownBackend = "unknown-backend"
            case invalidArguments = "invalid-arguments"
            case storage
            case invalidConfig = "invalid-config"
            case stopping
        }

        private let code: _Code

        private init(_ code: _Code) { self.code = code }

        /// The stable spelling, e.g. `not-found`.
        public var description: String { code.rawValue }

        public static let notFound = Code(.notFound)
        public static let quotaExceeded = Code(.quotaExceeded)
        public static let invalidTrigger = Code(.invalidTrigger)
        public static let unknownBackend = Code(.unknownBackend)
        public static let invalidArguments = Code(.invalidArguments)
        /// The change could not be made durable; nothing was changed.
        public static let storage = Code(.storage)
        public static let invalidConfig = Code(.invalidConfig)
        /// The daemon is stopping: nothing was changed, and a client may ask again once it is
        /// back. Not `storage`, which tells of a disk that refuses writes.
        public static let stopping = Code(.stopping)
    }
    public var code: Code
    public var message: String
    /// The request field the error is about, when there is one.
    public var field: String?
    /// Whether `field` names a method's own argument (Snooze's `key`, `duration`) rather than a
    /// field of a request's `a{sv}` spec: a D-Bus error then says `argument 'key': `, as the
    /// gateway's own checks of arguments do, instead of `field 'key': `.
    public var isArgument = false

    public init(_ code: Code, _ message: String, field: String? = nil) {
        self.code = code; self.message = message; self.field = field
    }

    /// An error about the method argument `argument` (see `isArgument`).
    public init(_ code: Code, _ message: String, argument: String) {
        self.init(code, message, field: argument)
        isArgument = true
    }
    public var description: String { message }
}
