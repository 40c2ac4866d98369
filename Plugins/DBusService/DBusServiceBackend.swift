public import DBus
public import Logging
public import TocsinCore
public import TocsinModel

/// The daemon's bus as a backend sees it: the connection of the moment (nil while the bus is
/// away) and every connection as it comes (the current one first), so listeners can subscribe
/// again after a reconnect. The daemon builds it from its `BusLink`; tests from a private bus.
public struct ServiceBus: Sendable {
    public var current: @Sendable () -> DBusConnection?
    public var connections: @Sendable () -> AsyncStream<DBusConnection>
    public init(current: @escaping @Sendable () -> DBusConnection?,
                connections: @escaping @Sendable () -> AsyncStream<DBusConnection>) {
        self.current = current; self.connections = connections
    }

    /// No bus (`tocsin check`): deliveries fail as unavailable, nothing is listened to.
    public static let none = ServiceBus(current: { nil }, connections: { AsyncStream { $0.finish() } })
}

/// `type = "dbus-service"`: hands each firing to a separate program on the bus, through
/// `io.github.tocsin.Backend1` (`contrib/io.github.tocsin.Backend1.xml`), for backends that keep
/// state between firings (a chat bridge, a smart light) where `exec`'s process per firing does not fit.
///
/// `Deliver` is an asynchronous call on the daemon's own connection: the center runs it in its
/// own task with its timeout and retries, so a service that hangs costs that firing its timeout
/// and one that crashed (no owner, or `NoReply` when it dies mid-call) its retries, nothing else.
/// `Withdraw` is sent without waiting: a hung service cannot hold up a cancel.
public struct DBusServiceBackend: DeliveryBackend {
    public let name: String
    public let service: BusName
    let bus: ServiceBus
    let listener: ServiceEventListener

    public init(name: String, service: BusName, bus: ServiceBus, logger: Logger) {
        self.name = name
        self.service = service
        self.bus = bus
        var logger = logger
        logger[metadataKey: "backend"] = "\(name)"
        self.listener = ServiceEventListener(service: service, bus: bus, logger: logger)
    }

    public func start(events: any BackendEventSink) async {
        await listener.start(events)
    }

    public func deliver(_ firing: Firing) async throws(DeliveryError) {
        guard let connection = bus.current() else { throw DeliveryError(.unavailable, "not connected to the bus") }
        do {
            // No timeout of our own: the center's (the same for every backend) cancels the call,
            // which drops the pending reply; libdbus's default (25 s) only bounds a caller without one.
            _ = try await connection.call(destination: service, path: Backend1.objectPath, interface: Backend1.interface,
                                          member: Backend1.deliver, arguments: Backend1.deliverArguments(firing, instance: name))
        } catch let e as DBusError {
            throw Backend1.deliveryError(e, service: service)
        } catch {
            throw DeliveryError(.failed, "\(error)")
        }
    }

    public func withdraw(key: String, reason: WithdrawReason) async {
        guard let connection = bus.current(),
              let message = try? DBusMessage.methodCall(destination: service, path: Backend1.objectPath, interface: Backend1.interface,
                                                        member: Backend1.withdraw, arguments: [.string(key), .string(reason.rawValue)])
        else { return }
        connection.send(message)
    }

    /// `ok` while the service's name has an owner (or can be activated: the bus then starts it).
    public func health() async -> BackendHealth {
        guard let connection = bus.current() else { return .unavailable("not connected to the bus") }
        do {
            if try await connection.nameOwner(service) != nil { return .ok }
            let activatable = try await connection.call(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                                                        interface: .bus, member: "ListActivatableNames")
            if case .array(_, let names)? = activatable.first, names.contains(.string(service.rawValue)) { return .ok }
            return .unavailable("\(service) is not on the bus")
        } catch {
            return .unavailable("cannot ask the bus about \(service): \(error)")
        }
    }

    public func shutdown() async {
        listener.stop()
    }
}

public struct DBusServiceBackendFactory: BackendFactory {
    let bus: ServiceBus
    public init(bus: ServiceBus) { self.bus = bus }
    public var typeName: String { "dbus-service" }
    public var optionKeys: [String] { ["bus_name"] }

    public struct Options: Sendable, Equatable {
        /// The well-known name of the service implementing `io.github.tocsin.Backend1`.
        public var busName: BusName
        public init(busName: BusName) { self.busName = busName }
    }

    public func options(from reader: inout some FieldReader, environment: BackendEnvironment) -> Options? {
        guard reader.has("bus_name") else {
            reader.report(FieldIssue(field: "bus_name", location: reader.tableLocation,
                                     message: "missing required key 'bus_name' in \(reader.context) (the service's well-known bus name, e.g. \"org.example.ChatBridge\")"))
            return nil
        }
        guard let text = reader.string("bus_name") else { return nil }
        guard let name = Self.wellKnownName(text) else {
            reader.report("bus_name", "'bus_name' in \(reader.context) must be a well-known bus name such as \"org.example.ChatBridge\" (dot-separated elements of letters, digits, '_' and '-', not starting with a digit), found \"\(Self.shown(text))\"")
            return nil
        }
        if name.rawValue == "org.freedesktop.DBus" || name.rawValue.hasPrefix("io.github.tocsin.Gateway") {
            reader.report("bus_name", "'bus_name' in \(reader.context) must name the backend service, not \(name)")
            return nil
        }
        return Options(busName: name)
    }

    public func make(name: String, options: Options, environment: BackendEnvironment) -> any DeliveryBackend {
        DBusServiceBackend(name: name, service: options.busName, bus: bus, logger: environment.logger)
    }

    /// A unique name (`:1.42`) belongs to one connection's lifetime; a config must name the service.
    static func wellKnownName(_ text: String) -> BusName? {
        guard !text.hasPrefix(":"), let name = BusName(validating: text) else { return nil }
        return name
    }

    /// The value as written, shortened so a pasted paragraph does not flood the message.
    static func shown(_ text: String) -> String {
        text.utf8.count <= 80 ? text : String(text.prefix(60)) + "..."
    }
}
