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
    /// `Fired` signals built ahead (`firedPreparer`).
    private let prepared = Mutex(PreparedSignals())

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
    /// ahead for an identical firing (`firedPreparer`) is sent as it is; one built for a firing
    /// that has since changed (late, replaced, routed by quiet hours) is dropped and built again.
    public func firedEmitter() -> @Sendable ([Firing]) -> BatchHandOff {
        { [self] firings in
            guard let c = current else {
                return BatchHandOff(errors: firings.map { _ in DeliveryError(.unavailable, "not connected to the bus") })
            }
            let ready = prepared.withLock { $0.take(firings) }
            var messages: [DBusMessage] = []
            messages.reserveCapacity(firings.count)
            var errors: [DeliveryError?] = []
            errors.reserveCapacity(firings.count)
            // By index: a firing is copied (each of its fields retained) only when its signal
            // must be built now.
            for (i, message) in ready.enumerated() {
                if let message {
                    messages.append(message)
                    errors.append(nil)
                    continue
                }
                do throws(DBusError) {
                    messages.append(try GatewayService.firedSignal(firings[i], backends: firings[i].backends))
                    errors.append(nil)
                } catch {
                    errors.append(DeliveryError(.permanent, error.message))
                }
            }
            // Out once libdbus has written them, or dropped them with a lost connection: then the
            // whole group ends as failed deliveries (logged), not repeated, since the signals
            // written before the loss may have reached subscribers.
            let (out, left) = AsyncStream.makeStream(of: Bool.self, bufferingPolicy: .bufferingNewest(1))
            c.send(messages, departed: { written in
                left.yield(written)
                left.finish()
            })
            return BatchHandOff(errors: errors, departure: {
                var written = false
                for await w in out { written = w }
                return written ? nil : DeliveryError(.permanent, "the bus connection was lost before the signals handed over with this one were all written")
            })
        }
    }

    /// What the `dbus-signal` backend prepares with: builds the `Fired` signals of firings claimed
    /// ahead of their instant, so that marshalling them (about 13 µs each through libdbus) is not
    /// spent after it. One per key: a later claim of the same key replaces the one before; a
    /// firing already prepared (a second `dbus-signal` backend) is not built again. A firing whose
    /// signal cannot be built is left to the emitter, which reports the error.
    public func firedPreparer() -> @Sendable ([Firing]) -> Void {
        { [self] firings in
            let todo = prepared.withLock { p in firings.filter { !p.isPrepared($0) } }
            var built: [(Firing, DBusMessage)] = []
            built.reserveCapacity(todo.count)
            for f in todo {
                if let m = try? GatewayService.firedSignal(f, backends: f.backends) { built.append((f, m)) }
            }
            prepared.withLock { $0.insert(built) }
        }
    }

    /// Signals built ahead and not sent yet, and how many were sent as built; for tests.
    public var preparedFired: (waiting: Int, used: Int) { prepared.withLock { ($0.count, $0.used) } }
}
