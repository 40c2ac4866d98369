import DBus
import Synchronization

/// Feeds one event stream: the gateway's signals, plus `NameOwnerChanged` for its name, on the
/// center's connection; and when the bus connection itself is lost, the same on the next one.
///
/// The signal match names the daemon's well-known name as sender, which the bus resolves at each
/// signal: a restarted daemon's signals match the same rule, so nothing needs re-subscribing when
/// only the daemon comes and goes. `NameOwnerChanged` tells the app it did.
struct EventPump: Sendable {
    let filter: EventFilter
    let connect: @Sendable () async throws(TocsinClientError) -> DBusConnection

    init(filter: EventFilter, connect: @escaping @Sendable () async throws(TocsinClientError) -> DBusConnection) {
        self.filter = filter
        self.connect = connect
    }

    private struct Subscriptions: Sendable {
        let gateway: DBusSignalSubscription
        let owner: DBusSignalSubscription
        func cancel() {
            gateway.cancel()
            owner.cancel()
        }
    }

    /// The live subscriptions, for the stream's termination handler to cancel.
    private final class Current: Sendable {
        private let value: Mutex<Subscriptions?>
        init(_ s: Subscriptions) { value = Mutex(s) }
        func set(_ s: Subscriptions) { value.withLock { $0 = s } }
        func cancel() { value.withLock { $0 }?.cancel() }
    }

    private static let gatewayRule = MatchRule(
        sender: TocsinNotificationCenter.busName, interface: TocsinNotificationCenter.interface,
        path: TocsinNotificationCenter.objectPath)
    private static let ownerRule = MatchRule(
        sender: "org.freedesktop.DBus", interface: .bus, member: "NameOwnerChanged",
        arguments: [0: TocsinNotificationCenter.busName.rawValue])

    private func subscribe() async throws(TocsinClientError) -> Subscriptions {
        let connection = try await connect()
        do {
            let gateway = try await connection.subscribe(Self.gatewayRule)
            do {
                return Subscriptions(gateway: gateway, owner: try await connection.subscribe(Self.ownerRule))
            } catch {
                gateway.cancel()
                throw error
            }
        } catch {
            throw TocsinClientError(.bus, "cannot subscribe to the daemon's signals: \(error)")
        }
    }

    /// Subscribes before returning, so no event after this call is missed.
    func start() async throws(TocsinClientError) -> AsyncStream<NotificationEvent> {
        let first = try await subscribe()
        let (stream, continuation) = AsyncStream.makeStream(of: NotificationEvent.self, bufferingPolicy: .unbounded)
        let current = Current(first)
        let task = Task { [self] in
            var subscriptions: Subscriptions? = first
            var attempt = 0
            while !Task.isCancelled {
                if let s = subscriptions {
                    attempt = 0
                    await forward(s, to: continuation)
                    s.cancel()
                    subscriptions = nil
                    continue
                }
                // The bus connection is gone: a new one, with backoff, until the consumer stops.
                do {
                    try await Task.sleep(for: Backoff(initial: .milliseconds(100), maximum: .seconds(5)).delay(attempt: attempt))
                } catch { break }
                attempt += 1
                if let s = try? await subscribe() {
                    current.set(s)
                    subscriptions = s
                    // The daemon may have come and gone meanwhile; what is true now is that it may be there.
                    continuation.yield(.daemonAppeared)
                }
            }
            continuation.finish()
        }
        continuation.onTermination = { _ in
            task.cancel()
            current.cancel()
        }
        return stream
    }

    /// Both subscriptions into the stream until the connection ends (or the consumer stops).
    private func forward(_ s: Subscriptions, to continuation: AsyncStream<NotificationEvent>.Continuation) async {
        let filter = self.filter
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                for await signal in s.gateway {
                    if let e = Wire.event(signal), filter.passes(e) { continuation.yield(e) }
                }
            }
            group.addTask {
                for await signal in s.owner {
                    guard signal.arguments.count == 3, case .string(let new) = signal.arguments[2] else { continue }
                    continuation.yield(new.isEmpty ? .daemonVanished : .daemonAppeared)
                }
            }
            // Either ending means the connection ended: stop the other too.
            await group.next()
            s.cancel()
            await group.waitForAll()
        }
    }
}
