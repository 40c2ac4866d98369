public import DBus
import Logging
import Synchronization
public import TocsinCore

/// What a service may report back, read from its signal: `ActionInvoked(s key, s action)` or
/// `Acknowledge(s key)`. Pure, so every malformed shape is tested without a bus.
public enum ServiceSignal: Sendable {
    /// The gateway's own bounds for keys and action ids (docs/CONFIG.md, "Limits").
    static let maxKey = 255
    static let maxAction = 4096

    public static func event(member: MemberName, arguments: [DBusValue]) -> Result<BackendEvent, ServiceSignalError> {
        switch member {
        case Backend1.actionInvoked:
            guard arguments.count == 2, case .string(let key) = arguments[0], case .string(let action) = arguments[1] else {
                return .failure(ServiceSignalError(.malformed, "ActionInvoked must carry (s key, s action)"))
            }
            if let problem = check(key: key) { return .failure(problem) }
            if action.isEmpty || action.utf8.count > maxAction {
                return .failure(ServiceSignalError(.malformed, "ActionInvoked: the action must be 1 to \(maxAction) bytes"))
            }
            return .success(.actionInvoked(key: key, action: action))
        case Backend1.acknowledge:
            guard arguments.count == 1, case .string(let key) = arguments[0] else {
                return .failure(ServiceSignalError(.malformed, "Acknowledge must carry (s key)"))
            }
            if let problem = check(key: key) { return .failure(problem) }
            return .success(.acknowledge(key: key))
        default:
            return .failure(ServiceSignalError(.unknownSignal, "\(member) is not a signal of \(Backend1.interface)"))
        }
    }

    private static func check(key: String) -> ServiceSignalError? {
        if key.isEmpty || key.utf8.count > maxKey { return ServiceSignalError(.malformed, "the key must be 1 to \(maxKey) bytes") }
        return nil
    }
}

/// Why a signal from a service was not routed; logged, never sent back (signals have no reply).
public struct ServiceSignalError: Error, Hashable, Sendable, CustomStringConvertible {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Backing: String { case malformed, unknownSignal = "unknown-signal" }
        private let backing: Backing
        private init(_ b: Backing) { backing = b }
        /// A known signal whose arguments have the wrong shape or size.
        public static let malformed = Code(.malformed)
        /// A member `io.github.tocsin.Backend1` does not define.
        public static let unknownSignal = Code(.unknownSignal)
        public var description: String { backing.rawValue }
    }
    public var code: Code
    public var message: String
    public init(_ code: Code, _ message: String) { self.code = code; self.message = message }
    public var description: String { "\(code): \(message)" }
}

/// Listens for a service's signals on each connection the daemon has, and routes those that
/// come from the current owner of the configured name to the center, as popup buttons are.
///
/// The match rule names the well-known sender, but a connection holds one match per instance
/// and routes locally by interface, so a signal from another service (or anyone emitting the
/// interface) can still reach this listener: the owner is asked for every signal, which also
/// catches a name that changed hands. Signals are rare (a person pressing a button), so one
/// `GetNameOwner` each costs nothing that matters.
final class ServiceEventListener: Sendable {
    private let service: BusName
    private let bus: ServiceBus
    private let logger: Logger
    private let task = Mutex<Task<Void, Never>?>(nil)

    init(service: BusName, bus: ServiceBus, logger: Logger) {
        self.service = service; self.bus = bus; self.logger = logger
    }

    /// A reload builds a new instance under the same name and drops the old one without
    /// `shutdown()`: its listener must end with it, or each action would be routed once per
    /// instance ever built (`DBusServiceBackendTests/reloadKeepsOneListener`).
    deinit { task.withLock { $0 }?.cancel() }

    /// Returns once the match rule is in place on the connection of the moment (if there is one),
    /// so that a service's signal sent after the daemon has started is never missed.
    func start(_ sink: any BackendEventSink) async {
        let service = self.service, bus = self.bus, logger = self.logger
        let (subscribed, done) = AsyncStream.makeStream(of: Never.self)
        let new = Task {
            defer { done.finish() }
            for await connection in bus.connections() {
                await Self.listen(on: connection, service: service, sink: sink, logger: logger, subscribed: { done.finish() })
                if Task.isCancelled { return }
            }
        }
        task.withLock { old in
            old?.cancel()
            old = new
        }
        if bus.current() != nil { for await _ in subscribed {} }
    }

    func stop() {
        task.withLock { t in
            t?.cancel()
            t = nil
        }
    }

    /// Until the connection drops or the listener stops; `subscribed` is told once the match rule
    /// is in place or could not be added.
    private static func listen(on connection: DBusConnection, service: BusName, sink: any BackendEventSink,
                               logger: Logger, subscribed: () -> Void) async {
        let subscription: DBusSignalSubscription
        do {
            subscription = try await connection.subscribe(MatchRule(sender: service, interface: Backend1.interface))
            subscribed()
        } catch {
            subscribed()
            logger.warning("cannot listen for \(service)'s actions: \(error)")
            return
        }
        await withTaskCancellationHandler {
            for await signal in subscription {
                // The owner first: anyone may address a signal to the daemon, and what strangers
                // send is worth no more than a debug line (a warning each would let them flood the log).
                let owner = try? await connection.nameOwner(service)
                guard let sender = signal.sender, let owner, sender == owner else {
                    logger.debug("ignored \(signal.member) from \(signal.sender?.rawValue ?? "?"): not the owner of \(service)")
                    continue
                }
                switch ServiceSignal.event(member: signal.member, arguments: signal.arguments) {
                case .failure(let problem):
                    logger.warning("ignored a malformed signal from \(service)", metadata: ["problem": "\(problem)"])
                case .success(let event):
                    logger.debug("service reported", metadata: ["event": "\(event)"])
                    sink.send(event)
                }
            }
        } onCancel: {
            subscription.cancel()
        }
    }
}
