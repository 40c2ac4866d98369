import DBus
import Logging
import ServiceLifecycle
import TocsinCore

// Each service names itself: swift-service-lifecycle logs services at debug level by their
// description, and the default one of `BusService` printed its whole `DaemonSetup`, the
// environment (with any secrets in it) included.

/// The center's events as D-Bus signals, until the center shuts down and ends the stream.
///
/// The stream ends while the firing service is still stopping (the center finishes it before it
/// closes the store). A service that returns before its own turn to stop makes the group cancel
/// the rest, the bus among them, so this one waits for its turn.
struct EventForwardingService: Service, CustomStringConvertible {
    var description: String { "event forwarding" }
    let gateway: GatewayService
    let events: AsyncStream<CenterEvent>
    func run() async {
        await gateway.forward(events)
        try? await gracefulShutdown()
    }
}

/// Waits on the wake-up timer and fires what is due. On graceful shutdown the timer stops, then
/// the center waits for the deliveries in flight, shuts the backends down and closes the store.
/// It stops before the bus: a `Fired` signal handed over meanwhile still finds the connection up,
/// and a firing that falls due during the stop is left to the next start's missed-firing policy
/// instead of being handed to a connection about to close.
struct FiringService: Service, CustomStringConvertible {
    var description: String { "firing" }
    let center: TocsinCenter
    func run() async {
        await withGracefulShutdownHandler {
            await center.run()
        } onGracefulShutdown: {
            center.stopTimer()
        }
        await center.shutdown()
    }
}

/// Keeps the D-Bus API up: after the bus goes away, reconnects with bounded backoff and takes
/// the name back, while the schedule keeps firing.
struct BusService: Service, CustomStringConvertible {
    var description: String { "D-Bus API" }
    let gateway: GatewayService
    let setup: DaemonSetup
    let first: DBusConnection?

    /// How long a graceful stop waits for the bus to take what is queued (the `Fired` signals of
    /// a burst it is still reading) before it closes the connection, which drops the rest. The
    /// firing service has stopped by then: nothing new is handed over meanwhile.
    static let flushLimit = Duration.seconds(2)

    func run() async throws {
        // Cancelled on a graceful stop: the waits for a disconnection below end with it.
        await cancelWhenGracefulShutdown { await keepConnected() }
        await gateway.link.current?.closeWhenFlushed(atMost: Self.flushLimit)
    }

    private func keepConnected() async {
        let logger = setup.logger
        if let first {
            await first.waitUntilDisconnected()
            if Task.isCancelled { return }
            logger.warning("lost the bus connection; reconnecting")
        }
        let gateway = self.gateway
        // The stop closes the live connection itself, once its queue is written (`run`).
        let reconnector = DBusReconnector(backoff: Backoff(initial: .milliseconds(200), maximum: .seconds(30)),
                                          closesOnCancel: false,
                                          connect: setup.connect,
                                          setup: { c in
                                              try await gateway.serve(on: c)
                                          })
        for await connection in reconnector.connections() {
            logger.info("serving the D-Bus API", metadata: ["bus": "\(setup.busDescription)", "name": "\(Gateway.busName)"])
            await connection.waitUntilDisconnected()
            if Task.isCancelled { return }
            logger.warning("lost the bus connection; reconnecting")
        }
    }
}

/// Follows logind's sleep announcements on the system bus until shutdown (`SleepWatch`).
struct SleepService: Service, CustomStringConvertible {
    var description: String { "sleep watch" }
    let watch: SleepWatch
    let connect: (@Sendable () async throws -> DBusConnection)?
    func run() async {
        await cancelWhenGracefulShutdown { await watch.run(connect: connect) }
    }
}
