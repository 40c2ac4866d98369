/// The one error type of the D-Bus layer: a D-Bus error name plus a human message.
///
/// Errors travel both ways with the same shape: a remote error reply becomes a `DBusError`
/// carrying the remote name, and a `DBusError` thrown by a method handler becomes the error
/// reply. Local failures (bad arguments refused before they reach libdbus, a closed
/// connection) use the same well-known names so callers handle one type.
public struct DBusError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The D-Bus error name, kept as a string: remote peers may send names we do not know.
    public let name: String
    public let message: String

    /// Well-known error names, mostly `org.freedesktop.DBus.Error.*`.
    public struct Code: Sendable, Hashable, RawRepresentable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        private static func std(_ suffix: String) -> Code { Code(rawValue: "org.freedesktop.DBus.Error." + suffix) }
        public static let failed = std("Failed")
        public static let noMemory = std("NoMemory")
        public static let serviceUnknown = std("ServiceUnknown")
        public static let nameHasNoOwner = std("NameHasNoOwner")
        public static let noReply = std("NoReply")
        public static let ioError = std("IOError")
        public static let badAddress = std("BadAddress")
        public static let notSupported = std("NotSupported")
        public static let limitsExceeded = std("LimitsExceeded")
        public static let accessDenied = std("AccessDenied")
        public static let authFailed = std("AuthFailed")
        public static let noServer = std("NoServer")
        public static let timeout = std("Timeout")
        public static let noNetwork = std("NoNetwork")
        public static let addressInUse = std("AddressInUse")
        public static let disconnected = std("Disconnected")
        public static let invalidArgs = std("InvalidArgs")
        public static let fileNotFound = std("FileNotFound")
        public static let unknownMethod = std("UnknownMethod")
        public static let unknownObject = std("UnknownObject")
        public static let unknownInterface = std("UnknownInterface")
        public static let unknownProperty = std("UnknownProperty")
        public static let propertyReadOnly = std("PropertyReadOnly")
        public static let timedOut = std("TimedOut")
        public static let matchRuleInvalid = std("MatchRuleInvalid")
        public static let invalidSignature = std("InvalidSignature")
        public static let inconsistentMessage = std("InconsistentMessage")
        /// Not a standard name: the requested bus name is owned by someone else.
        public static let nameTaken = Code(rawValue: "org.tocsin.DBus.Error.NameTaken")
        /// Not a standard name: the Swift task awaiting a reply was cancelled.
        public static let cancelled = Code(rawValue: "org.tocsin.DBus.Error.Cancelled")
    }

    public init(name: String, message: String) {
        self.name = name
        self.message = message
    }

    public init(_ code: Code, _ message: String) {
        self.init(name: code.rawValue, message: message)
    }

    /// The well-known code, when `name` is one; compare with `error.code == .unknownMethod`.
    public var code: Code { Code(rawValue: name) }

    public var description: String { message.isEmpty ? name : "\(name): \(message)" }

    /// Turns any error thrown by application code into what goes on the wire: a `DBusError`
    /// keeps its name, anything else becomes `Failed` with its description.
    public static func from(_ error: any Error) -> DBusError {
        if let e = error as? DBusError { return e }
        if error is CancellationError { return DBusError(.cancelled, "cancelled") }
        return DBusError(.failed, String(describing: error))
    }
}
