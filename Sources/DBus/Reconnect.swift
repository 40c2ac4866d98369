/// Bounded exponential backoff: `initial`, then times `multiplier` per failure, never above
/// `maximum`. Jitter is left out on purpose: one daemon reconnecting to its own bus does not
/// cause a thundering herd, and determinism keeps it testable.
public struct Backoff: Sendable, Hashable {
    public var initial: Duration
    public var maximum: Duration
    public var multiplier: Double

    public init(initial: Duration = .milliseconds(100), maximum: Duration = .seconds(30), multiplier: Double = 2) {
        self.initial = initial
        self.maximum = max(initial, maximum)
        self.multiplier = max(1, multiplier)
    }

    /// The wait before retry number `attempt` (0-based).
    public func delay(attempt: Int) -> Duration {
        var d = initial
        var i = 0
        while i < attempt, d < maximum {
            d = d * multiplier
            i += 1
        }
        return min(d, maximum)
    }
}

/// Keeps a bus connection alive: connects, runs `setup` (request names, export objects,
/// subscribe), hands out the live connection, and when it drops starts over with backoff.
///
/// `setup` runs on every new connection, which is what re-requests names and re-adds exports
/// and matches: a new connection starts with none of them.
public struct DBusReconnector: Sendable {
    public let backoff: Backoff
    /// Whether ending the stream closes the live connection at once. A daemon that stops
    /// gracefully says no and closes it once its queue is written (`closeWhenFlushed`): closing
    /// drops what libdbus still holds.
    public let closesOnCancel: Bool
    private let connect: @Sendable () async throws -> DBusConnection
    private let setup: @Sendable (DBusConnection) async throws -> Void

    public init(
        backoff: Backoff = Backoff(),
        closesOnCancel: Bool = true,
        connect: @escaping @Sendable () async throws -> DBusConnection,
        setup: @escaping @Sendable (DBusConnection) async throws -> Void
    ) {
        self.backoff = backoff
        self.closesOnCancel = closesOnCancel
        self.connect = connect
        self.setup = setup
    }

    /// Each element is a freshly connected and set-up connection; the next one comes after it
    /// disconnects. Ends when the consumer stops iterating (the retry task is cancelled).
    public func connections() -> AsyncStream<DBusConnection> {
        let (stream, continuation) = AsyncStream<DBusConnection>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let task = Task { [self] in
            var attempt = 0
            while !Task.isCancelled {
                let connection: DBusConnection
                do {
                    connection = try await connect()
                    do {
                        try await setup(connection)
                    } catch {
                        connection.close()
                        throw error
                    }
                } catch {
                    do { try await Task.sleep(for: backoff.delay(attempt: attempt)) } catch { break }
                    attempt += 1
                    continue
                }
                attempt = 0
                // Ended meanwhile (the consumer stopped): no one else will close this one.
                if case .terminated = continuation.yield(connection) {
                    connection.close()
                    break
                }
                let closes = closesOnCancel
                await withTaskCancellationHandler {
                    await connection.waitUntilDisconnected()
                } onCancel: {
                    if closes { connection.close() }
                }
                if Task.isCancelled { break }
            }
            continuation.finish()
        }
        continuation.onTermination = { _ in task.cancel() }
        return stream
    }
}
