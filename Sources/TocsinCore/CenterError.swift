import TocsinConfig

/// Errors of the notification center. Each code maps to one D-Bus error name and one CLI exit message.
public struct CenterError: Error, Hashable, Sendable, CustomStringConvertible {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(_ rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        public static let notFound = Code("not-found")
        public static let quotaExceeded = Code("quota-exceeded")
        public static let invalidTrigger = Code("invalid-trigger")
        public static let unknownBackend = Code("unknown-backend")
        public static let invalidArguments = Code("invalid-arguments")
        /// The change could not be made durable; nothing was changed.
        public static let storage = Code("storage")
        public static let invalidConfig = Code("invalid-config")
    }
    public var code: Code
    public var message: String
    /// The request field the error is about, when there is one.
    public var field: String?

    public init(_ code: Code, _ message: String, field: String? = nil) {
        self.code = code; self.message = message; self.field = field
    }
    public var description: String { message }
}
