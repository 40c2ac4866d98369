public import TocsinCore
public import TocsinModel

/// `type = "dbus-signal"`: emits the gateway's `Fired` signal for each firing routed here, so
/// any program can subscribe instead of polling. The daemon hands the factory the functions that
/// build and emit on the current bus connection; the backend itself knows nothing of connections.
public struct DBusSignalBackend: BatchDeliveryBackend {
    /// Emits one signal per firing, in order; one result per firing (nil: queued on the bus
    /// connection), and the wait until the signals have left the process.
    public typealias Emit = @Sendable ([Firing]) -> BatchHandOff
    /// Builds ahead the signals of firings claimed before their instant, for `Emit` to send when
    /// the same firings come (`BatchDeliveryBackend.prepare`).
    public typealias Prepare = @Sendable ([Firing]) -> Void
    public let name: String
    let emit: Emit
    let prepareAhead: Prepare

    public init(name: String, emit: @escaping Emit, prepare: @escaping Prepare = { _ in }) {
        self.name = name
        self.emit = emit
        self.prepareAhead = prepare
    }

    /// A single delivery (a retry, or one queued behind an earlier delivery of its key) does not
    /// wait for its signal to leave: it runs under the delivery timeout, and a timeout would
    /// send again a signal that is only slow to go out.
    public func deliver(_ firing: Firing) async throws(DeliveryError) {
        if let error = emit([firing]).errors.first ?? nil { throw error }
    }

    public func deliver(batch: [Firing]) -> BatchHandOff { emit(batch) }

    public func prepare(batch: [Firing]) { prepareAhead(batch) }
}

public struct DBusSignalBackendFactory: BackendFactory {
    let emit: DBusSignalBackend.Emit
    let prepare: DBusSignalBackend.Prepare
    public init(emit: @escaping DBusSignalBackend.Emit, prepare: @escaping DBusSignalBackend.Prepare = { _ in }) {
        self.emit = emit
        self.prepare = prepare
    }
    public var typeName: String { "dbus-signal" }
    public var optionKeys: [String] { [] }
    /// The signal's shape is the API's, so the table has nothing to set.
    public struct Options: Sendable, Equatable { public init() {} }
    public func options(from reader: inout some FieldReader, environment: BackendEnvironment) -> Options? { Options() }
    public func make(name: String, options: Options, environment: BackendEnvironment) -> any DeliveryBackend {
        DBusSignalBackend(name: name, emit: emit, prepare: prepare)
    }
}
