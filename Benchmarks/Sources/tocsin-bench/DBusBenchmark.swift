import ArgumentParser
import DBus
import Foundation
import Logging
import Synchronization
import TocsinConfig
import TocsinCore
import TocsinDBusSignalBackend
import TocsinGateway
import TocsinTesting
import TocsinTime
import TocsinModel
import TocsinSystem

/// D-Bus throughput against the bus's own limit, and fire latency from due time to a
/// subscriber's receipt of `Fired`, on a private dbus-daemon with the gateway in this process.
struct DBusBenchmark: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "dbus", abstract: "Gateway call rate and fire latency.")

    @Option(help: "Calls per throughput measurement.") var calls = 20_000
    @Option(help: "Calls kept in flight by the client.") var inflight = 64
    @Option(help: "Notifications pending during the latency measurement.") var pending = 100_000
    @Option(help: "Notifications due at the same instant.") var burst = 1_000

    func run() async throws {
        let bus = try await PrivateBus.start()
        defer { Task { await bus.stop() } }
        let dir = TemporaryDirectory(prefix: "tocsin-bench")
        let logger = Logger(label: "bench") { _ in SwiftLogNoOpLogHandler() }
        let link = BusLink(logger: logger)
        let timer = try TimerFDWakeup()
        var options = CenterOptions(defaultZone: .utc)
        options.maxPending = 10_000_000
        let center = try TocsinCenter(options: options, stateDirectory: dir.path, clock: SystemClock(), timer: timer, logger: logger)
        try await center.start(backends: [DBusSignalBackend(name: "events", emit: link.firedEmitter(), prepare: link.firedPreparer())])
        let loop = Task { await center.run() }
        let gateway = GatewayService(center: center, link: link) { nil }
        let server = try await DBusConnection.connect(address: bus.address)
        try await server.requestName(Gateway.busName)
        try await gateway.attach(server)

        let client = try await DBusConnection.connect(address: bus.address)
        // The bus's own rate: GetId answered by dbus-daemon itself, same client, same concurrency.
        let getId = try await rate(calls: calls) { _ in
            _ = try await client.call(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                                      interface: "org.freedesktop.DBus", member: "GetId")
        }
        let schedule = try await rate(calls: calls) { i in
            _ = try await client.call(destination: Gateway.busName, path: Gateway.objectPath, interface: Gateway.interface,
                                      member: "Schedule", arguments: [.vardict([("key", .string("c\(i)")), ("title", .string("Call \(i)")),
                                                                                ("after", .string("1h"))])])
        }
        print("bus GetId: \(formatted(getId, decimals: 0)) calls/s (\(calls) calls, \(inflight) in flight)")
        print("Schedule: \(formatted(schedule, decimals: 0)) calls/s, ratio \(formatted(schedule / getId, decimals: 2)) of the bus's own rate (each call committed to SQLite before the reply)")
        _ = try await center.cancelAll()

        // Latency: `pending` far-future notifications, then `burst` due at one instant.
        var specs: [NotificationSpec] = []
        for i in 0..<pending {
            var s = NotificationSpec()
            s.key = "p\(i)"
            s.title = "Pending \(i)"
            s.trigger = .after(.hours(Int64(1 + i % 100)))
            specs.append(s)
        }
        _ = try await center.applyConfig(specs)
        specs = []
        let subscriber = try await DBusConnection.connect(address: bus.address)
        let fired = try await subscriber.subscribe(MatchRule(interface: Gateway.interface, member: "Fired", path: Gateway.objectPath))
        let due = SystemClock().now() + .seconds(3)
        for i in 0..<burst {
            var s = NotificationSpec()
            s.key = "b\(i)"
            s.title = "Burst \(i)"
            s.trigger = .at(.instant(due))
            try await center.schedule(s)
        }
        var latencies: [Int64] = []
        for await signal in fired {
            let now = SystemClock().now()
            guard case .string(let key)? = signal.arguments.first, key.hasPrefix("b") else { continue }
            latencies.append((now - due).microseconds)
            if latencies.count == burst { break }
        }
        latencies.sort()
        func pct(_ p: Double) -> String { formatted(Double(latencies[min(latencies.count - 1, Int(Double(latencies.count) * p))]) / 1000, decimals: 1) }
        print("fire latency, \(burst) due at once with \(await center.activeCount + burst) pending: p50 \(pct(0.5)) ms, p99 \(pct(0.99)) ms, max \(formatted(Double(latencies.last ?? 0) / 1000, decimals: 1)) ms (due to Fired received by a subscriber)")
        await center.shutdown()
        loop.cancel()
        server.close()
        client.close()
        subscriber.close()
        await bus.stop()
    }

    /// Calls per second with `inflight` calls outstanding.
    private func rate(calls: Int, _ body: @escaping @Sendable (Int) async throws -> Void) async throws -> Double {
        let next = Counter()
        let clock = ContinuousClock()
        let t = try await clock.measure {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<inflight {
                    group.addTask {
                        while true {
                            let i = next.value.add(1, ordering: .relaxed).oldValue
                            if i >= calls { return }
                            try await body(i)
                        }
                    }
                }
                try await group.waitForAll()
            }
        }
        return Double(calls) / seconds(t)
    }
}

/// Shared call numbering for the client tasks.
private final class Counter: Sendable {
    let value = Atomic<Int>(0)
}
