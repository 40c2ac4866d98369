import DBus
import TocsinCore
import TocsinTesting
import TocsinTime

/// Runs a test body against the daemon in each `DaemonMode`, with the same `GatewayClient`, so
/// one test states a behaviour once and proves it in-process (fast, on a virtual clock), over a
/// peer-to-peer connection (no bus daemon) and in the built binary (the program as installed).
///
/// Everything the harness starts (a private bus, a peer socket, the daemon, its state directory)
/// is stopped when the body returns or throws.
enum DaemonHarness {
    /// The virtual clock's start, a fixed instant so due times in a test are stable.
    static let t0 = Instant(seconds: 1_772_442_000)

    /// `dbus-signal` is the backend: `Fired` is how a client sees a firing in every mode.
    static let defaultConfig = """
        [daemon]
        missed = "skip"
        timezone = "UTC"

        [backend.events]
        type = "dbus-signal"
        """

    static func run<T: Sendable>(_ mode: DaemonMode, config: String = defaultConfig,
                                 _ body: (GatewayClient) async throws -> T) async throws -> T {
        switch mode {
        case .inProcess: return try await onBus(config: config, body)
        case .peerToPeer: return try await peerToPeer(config: config, body)
        case .binary: return try await binary(config: config, body)
        }
    }

    private static func onBus<T: Sendable>(config: String, _ body: (GatewayClient) async throws -> T) async throws -> T {
        try await PrivateBus.with { bus in
            let dir = TemporaryDirectory(prefix: "tocsin-harness")
            let clock = VirtualClock(now: t0)
            let daemon = try await InProcessDaemon.start(.init(config: config, state: dir.path + "/state", clock: clock,
                                                               connect: InProcessDaemon.bus(bus.address)))
            return try await finally {
                let connection = try await DBusConnection.connect(address: bus.address)
                defer { connection.close() }
                return try await body(GatewayClient(mode: .inProcess, connection: connection, bus: bus, inProcess: daemon, clock: clock))
            } then: {
                await daemon.shutdown()
            }
        }
    }

    /// The daemon's first connection is the peer it accepts; start-up waits for it, so the
    /// client connects while `start` runs (calls made then wait for start-up, as on a bus).
    private static func peerToPeer<T: Sendable>(config: String, _ body: (GatewayClient) async throws -> T) async throws -> T {
        let server = try await DBusServer.listen()
        defer { server.close() }
        let dir = TemporaryDirectory(prefix: "tocsin-harness")
        let clock = VirtualClock(now: t0)
        let starting = Task {
            try await InProcessDaemon.start(.init(config: config, state: dir.path + "/state", clock: clock,
                                                  connect: { try await server.accept() }))
        }
        let connection: DBusConnection
        do {
            connection = try await DBusConnection.connect(address: server.address, registerWithBus: false)
        } catch {
            server.close()
            if let daemon = try? await starting.value { await daemon.shutdown() }
            throw error
        }
        defer { connection.close() }
        let daemon = try await starting.value
        return try await finally {
            try await body(GatewayClient(mode: .peerToPeer, connection: connection, bus: nil, inProcess: daemon, clock: clock))
        } then: {
            await daemon.shutdown()
        }
    }

    private static func binary<T: Sendable>(config: String, _ body: (GatewayClient) async throws -> T) async throws -> T {
        try await withGateway(config: config) { g in
            let connection = try await DBusConnection.connect(address: g.bus.address)
            defer { connection.close() }
            return try await body(GatewayClient(mode: .binary, connection: connection, bus: g.bus, inProcess: nil, clock: nil))
        }
    }
}

/// Runs `body`, then `cleanup` whether it returned or threw.
func finally<T>(_ body: () async throws -> T, then cleanup: () async -> Void) async throws -> T {
    do {
        let r = try await body()
        await cleanup()
        return r
    } catch {
        await cleanup()
        throw error
    }
}
