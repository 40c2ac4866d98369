public import TocsinCore
public import TocsinModel

/// `type = "dbus-signal"`: emits the gateway's `Fired` signal for each firing routed here, so
/// any program can subscribe instead of polling. The daemon hands the factory the function that
/// emits on the current bus connection; the backend itself knows nothing of connections.
public struct DBusSignalBackend: BatchDeliveryBackend {
    /// Emits one signal per firing, in order; one result per firing (nil: queued on the bus).
    public typealias Emit = @Sendable ([Firing]) -> [DeliveryError?]
    public let name: String
    let emit: Emit

    public init(name: String, emit: @escaping Emit) {
        self.name = name
        self.emit = emit
    }

    public func deliver(_ firing: Firing) async throws(DeliveryError) {
        if let error = emit([firing]).first ?? nil { throw error }
    }

    public func deliver(batch: [Firing]) -> [DeliveryError?] { emit(batch) }
}

public struct DBusSignalBackendFactory: BackendFactory {
    let emit: DBusSignalBackend.Emit
    public init(emit: @escaping DBusSignalBackend.Emit) { self.emit = emit }
    public var typeName: String { "dbus-signal" }
    public var optionKeys: [String] { [] }
    /// The signal's shape is the API's, so the table has nothing to set.
    public struct Options: Sendable { public init() {} }
    public func options(from reader: inout some FieldReader, environment: BackendEnvironment) -> Options? { Options() }
    public func make(name: String, options: Options, environment: BackendEnvironment) -> any DeliveryBackend {
        DBusSignalBackend(name: name, emit: emit)
    }
}
