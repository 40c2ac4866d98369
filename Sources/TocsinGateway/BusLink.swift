public import DBus
public import Logging
import Synchronization
public import TocsinCore

/// The daemon's current bus connection, shared by the gateway object and the `dbus-signal`
/// backend; replaced on reconnect, empty while the bus is away.
public final class BusLink: Sendable {
    private struct State {
        var connection: DBusConnection?
        /// `connections()` streams, told of each new connection.
        var watchers: [UInt64: AsyncStream<DBusConnection>.Continuation] = [:]
        var nextWatcher: UInt64 = 0
    }
    private let state = Mutex(State())
    let logger: Logger
    /// `Fired` signals built ahead (`firedPreparer`), by key, with the firing each was built for.
    private let preparedFired = Mutex<[String: (firing: Firing, message: DBusMessage)]>([:])

    public init(logger: Logger) { self.logger = logger }

    public func set(_ c: DBusConnection?) {
        let watchers = state.withLock { s in
            s.connection = c
            return Array(s.watchers.values)
        }
        if let c { for w in watchers { w.yield(c) } }
    }

    /// The connection of the moment (when there is one), then each new one after a reconnect:
    /// what a backend that listens for signals (`dbus-service`) subscribes on again.
    public func connections() -> AsyncStream<DBusConnection> {
        let (stream, continuation) = AsyncStream.makeStream(of: DBusConnection.self, bufferingPolicy: .bufferingNewest(1))
        let id = state.withLock { s in
            s.nextWatcher += 1
            s.watchers[s.nextWatcher] = continuation
            if let c = s.connection { continuation.yield(c) }
            return s.nextWatcher
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.watchers.removeValue(forKey: id) }
        }
        return stream
    }

    public var current: DBusConnection? {
        state.withLock { $0.connection }.flatMap { $0.isConnected ? $0 : nil }
    }

    /// Emits a gateway signal; throws when there is no connection or the arguments are invalid.
    public func emit(_ member: MemberName, _ arguments: [DBusValue]) throws(DBusError) {
        guard let c = current else { throw DBusError(.disconnected, "not connected to the bus") }
        do {
            try c.emit(path: Gateway.objectPath, interface: Gateway.interface, member: member, arguments: arguments)
        } catch let e as DBusError {
            throw e
        } catch {
            throw DBusError(.failed, "\(error)")
        }
    }

    /// Lifecycle signals have no retry: a client that was not connected missed them, as with any signal.
    func emitLogged(_ member: MemberName, _ arguments: [DBusValue]) {
        do { try emit(member, arguments) } catch {
            logger.debug("signal not sent", metadata: ["signal": "\(member)", "error": "\(error)"])
        }
    }

    /// The emitter the `dbus-signal` backend uses: one `Fired` signal per firing, all queued on the
    /// connection in one pass. An unreachable bus is retried like any backend. A signal built
    /// ahead for an equal firing (`firedPreparer`) is sent as it is; one built for a firing that
    /// has since changed (late, or the notification replaced) is dropped and built again.
    public func firedEmitter() -> @Sendable ([Firing]) -> [DeliveryError?] {
        { [self] firings in
            guard let c = current else {
                return firings.map { _ in DeliveryError(.unavailable, "not connected to the bus") }
            }
            let ready = preparedFired.withLock { prepared in
                let ready = firings.map { f -> DBusMessage? in
                    guard let p = prepared.removeValue(forKey: f.key), p.firing == f else { return nil }
                    return p.message
                }
                // A dictionary keeps its capacity when emptied: a burst's would stay allocated.
                if prepared.isEmpty { prepared = [:] }
                return ready
            }
            var messages: [DBusMessage] = []
            messages.reserveCapacity(firings.count)
            var errors: [DeliveryError?] = []
            errors.reserveCapacity(firings.count)
            for (f, message) in zip(firings, ready) {
                if let message {
                    messages.append(message)
                    errors.append(nil)
                    continue
                }
                do throws(DBusError) {
                    messages.append(try GatewayService.firedSignal(f, backends: f.backends))
                    errors.append(nil)
                } catch {
                    errors.append(DeliveryError(.permanent, error.message))
                }
            }
            c.send(messages)
            return errors
        }
    }

    /// How many prepared signals are kept: twice what the center claims ahead at once. Those of
    /// claims a request dropped are never sent; when they would pass this, all are dropped (the
    /// emitter then builds what it finds missing).
    static let preparedLimit = 2 * TocsinCenter.aheadLimit

    /// What the `dbus-signal` backend prepares with: builds the `Fired` signals of firings claimed
    /// ahead of their instant, so that marshalling them (about 13 µs each through libdbus) is not
    /// spent after it. One per key: a later claim of the same key replaces the one before. A
    /// firing whose signal cannot be built is left to the emitter, which reports the error.
    public func firedPreparer() -> @Sendable ([Firing]) -> Void {
        { [self] firings in
            var built: [(Firing, DBusMessage)] = []
            built.reserveCapacity(firings.count)
            for f in firings {
                if let m = try? GatewayService.firedSignal(f, backends: f.backends) { built.append((f, m)) }
            }
            preparedFired.withLock { prepared in
                if prepared.count + built.count > Self.preparedLimit { prepared.removeAll() }
                for (f, m) in built { prepared[f.key] = (f, m) }
            }
        }
    }

    /// Signals built ahead and not sent yet; for tests.
    public var preparedFiredCount: Int { preparedFired.withLock { $0.count } }
}
