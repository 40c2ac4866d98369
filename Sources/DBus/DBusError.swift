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

    /// Well-known error names, mostly `org.freedesktop.DBus.Error.*`: a closed set. Clients match
    /// on the static members but cannot make new codes; an error name outside the set (a remote
    /// peer's own, or one a handler throws with `init(name:message:)`) has no `code`.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum _Code: String, Hashable, Sendable {
            case failed = "org.freedesktop.DBus.Error.Failed"
            case noMemory = "org.freedesktop.DBus.Error.NoMemory"
            case serviceUnknown = "org.freedesktop.DBus.Error.ServiceUnknown"
            case nameHasNoOwner = "org.freedesktop.DBus.Error.NameHasNoOwner"
            case noReply = "org.freedesktop.DBus.Error.NoReply"
            case ioError = "org.freedesktop.DBus.Error.IOError"
            case badAddress = "org.freedesktop.DBus.Error.BadAddress"
            case notSupported = "org.freedesktop.DBus.Error.NotSupported"
            case limitsExceeded = "org.freedesktop.DBus.Error.LimitsExceeded"
            case accessDenied = "org.freedesktop.DBus.Error.AccessDenied"
            case authFailed = "org.freedesktop.DBus.Error.AuthFailed"
            case noServer = "org.freedesktop.DBus.Error.NoServer"
            case timeout = "org.freedesktop.DBus.Error.Timeout"
            case noNetwork = "org.freedesktop.DBus.Error.NoNetwork"
            case addressInUse = "org.freedesktop.DBus.Error.AddressInUse"
            case disconnected = "org.freedesktop.DBus.Error.Disconnected"
            case invalidArgs = "org.freedesktop.DBus.Error.InvalidArgs"
            case fileNotFound = "org.freedesktop.DBus.Error.FileNotFound"
            case unknownMethod = "org.freedesktop.DBus.Error.UnknownMethod"
            case unknownObject = "org.freedesktop.DBus.Error.UnknownObject"
            case unknownInterface = "org.freedesktop.DBus.Error.UnknownInterface"
            case unknownProperty = "org.freedesktop.DBus.Error.UnknownProperty"
            case propertyReadOnly = "org.freedesktop.DBus.Error.PropertyReadOnly"
            case timedOut = "org.freedesktop.DBus.Error.TimedOut"
            case matchRuleInvalid = "org.freedesktop.DBus.Error.MatchRuleInvalid"
            case invalidSignature = "org.freedesktop.DBus.Error.InvalidSignature"
            case inconsistentMessage = "org.freedesktop.DBus.Error.InconsistentMessage"
            /// Not a standard name: the requested bus name is owned by someone else.
            case nameTaken = "org.tocsin.DBus.Error.NameTaken"
            /// Not a standard name: the Swift task awaiting a reply was cancelled.
            case cancelled = "org.tocsin.DBus.Error.Cancelled"
        }

        private let code: _Code

        private init(_ code: _Code) { self.code = code }

        /// The code whose error name is `name`, if it is one of the set.
        init?(name: String) {
            guard let code = _Code(rawValue: name) else { return nil }
            self.code = code
        }

        /// The D-Bus error name a `DBusError` with this code carries.
        var name: String { code.rawValue }

        /// The D-Bus error name, e.g. `org.freedesktop.DBus.Error.Failed`.
        public var description: String { code.rawValue }

        public static let failed = Code(.failed)
        public static let noMemory = Code(.noMemory)
        public static let serviceUnknown = Code(.serviceUnknown)
        public static let nameHasNoOwner = Code(.nameHasNoOwner)
        public static let noReply = Code(.noReply)
        public static let ioError = Code(.ioError)
        public static let badAddress = Code(.badAddress)
        public static let notSupported = Code(.notSupported)
        public static let limitsExceeded = Code(.limitsExceeded)
        public static let accessDenied = Code(.accessDenied)
        public static let authFailed = Code(.authFailed)
        public static let noServer = Code(.noServer)
        public static let timeout = Code(.timeout)
        public static let noNetwork = Code(.noNetwork)
        public static let addressInUse = Code(.addressInUse)
        public static let disconnected = Code(.disconnected)
        public static let invalidArgs = Code(.invalidArgs)
        public static let fileNotFound = Code(.fileNotFound)
        public static let unknownMethod = Code(.unknownMethod)
        public static let unknownObject = Code(.unknownObject)
        public static let unknownInterface = Code(.unknownInterface)
        public static let unknownProperty = Code(.unknownProperty)
        public static let propertyReadOnly = Code(.propertyReadOnly)
        public static let timedOut = Code(.timedOut)
        public static let matchRuleInvalid = Code(.matchRuleInvalid)
        public static let invalidSignature = Code(.invalidSignature)
        public static let inconsistentMessage = Code(.inconsistentMessage)
        /// Not a standard name: the requested bus name is owned by someone else.
        public static let nameTaken = Code(.nameTaken)
        /// Not a standard name: the Swift task awaiting a reply was cancelled.
        public static let cancelled = Code(.cancelled)
    }

    public init(name: String, message: String) {
        self.name = name
        self.message = message
    }

    public init(_ code: Code, _ message: String) {
        self.init(name: code.name, message: message)
    }

    /// The well-known code, when `name` is one (nil otherwise); compare with
    /// `error.code == .unknownMethod`.
    public var code: Code? { Code(name: name) }

    public var description: String { message.isEmpty ? name : "\(name): \(message)" }

    /// Turns any error thrown by application code into what goes on the wire: a `DBusError`
    /// keeps its name, anything else becomes `Failed` with its description.
    public static func from(_ error: any Error) -> DBusError {
        if let e = error as? DBusError { return e }
        if error is CancellationError { return DBusError(.cancelled, "cancelled") }
        return DBusError(.failed, String(describing: error))
    }
}
