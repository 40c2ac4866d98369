public import DBus

/// The well-known names of the gateway API, in one place for the daemon, the CLI and the tests.
public enum Gateway: Sendable {
    public static let busName: BusName = "io.github.tocsin.Gateway"
    public static let objectPath: ObjectPath = "/io/github/tocsin/Gateway"
    public static let interface: InterfaceName = "io.github.tocsin.Gateway1"

    /// Error names of the API; standard D-Bus errors are used where one fits.
    public enum ErrorName: Sendable {
        public static let notFound = "io.github.tocsin.Error.NotFound"
        public static let quotaExceeded = "io.github.tocsin.Error.QuotaExceeded"
        public static let invalidTrigger = "io.github.tocsin.Error.InvalidTrigger"
        public static let unknownBackend = "io.github.tocsin.Error.UnknownBackend"
        public static let invalidConfig = "io.github.tocsin.Error.InvalidConfig"
        public static let storage = "io.github.tocsin.Error.Storage"
        public static let stopping = "io.github.tocsin.Error.Stopping"
    }
}
