import ArgumentParser
import DBus
import Foundation
import TocsinCore
import TocsinGateway
import TocsinTesting
import TocsinTime

#if canImport(Glibc)
import Glibc
import TocsinSystem
#endif

/// How close to its instant a notification due alone reaches a subscriber, over `pending`
/// notifications, against the floor measured in the same run: a thread of this process that
/// sleeps until the same kind of instant (`clock_nanosleep` on `CLOCK_REALTIME`, absolute) and
/// emits one signal through the same bus to the same subscriber. The floor is what any daemon pays
/// for a timer wake-up and a bus hop; what Tocsin adds above it is its own.
struct PrecisionBenchmark: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "precision",
        abstract: "Due instant to Fired received, one notification due alone, against a timer-and-signal floor.")

    @Option(help: "The tocsin executable (a release build).") var tocsin = "../.build/release/tocsin"
    @Option(help: "Notifications pending, far in the future, during the measurement.") var pending = 10_000
    @Option(help: "Singles measured, each alone; Tocsin and the floor alternate.") var singles = 40
    @Option(help: "Notifications due together in the burst figure (0: none).") var burst = 1_000
    @Option(help: "Bursts measured; Tocsin and the floor alternate.") var bursts = 3
    @Option(help: "Goal for the p50, in milliseconds.") var goalP50 = 0.3
    @Option(help: "Goal for the p99, in milliseconds.") var goalP99 = 1.0

    func run() async throws {
        guard FileManager.default.isExecutableFile(atPath: tocsin) else {
            throw ValidationError("no executable at \(tocsin); build it with `swift build -c release` or pass --tocsin")
        }
        let bus = try await PrivateBus.start()
        let dir = TemporaryDirectory(prefix: "tocsin-precision")
        let config = dir.path + "/precision.toml"
        try Data("""
            [daemon]
            max_pending = 2000000
            max_pending_per_client = 2000000

            [backend.events]
            type = "dbus-signal"

            """.utf8).write(to: URL(fileURLWithPath: config))
        let daemon = try TestProcess(tocsin, ["daemon", "--config", config, "--state-dir", dir.path + "/state"], environment: bus.environment)
        let client = try await DBusConnection.connect(address: bus.address)
        do { try await waitForName(client) } catch {
            throw ValidationError("\(error); the daemon said: \(daemon.stderr)")
        }
        try await Self.schedule(client, count: pending) { i in
            [("key", .string("p\(i)")), ("title", .string("pending \(i)")), ("after", .string("\(86_400 + i)s"))]
        }
        var probe = try await Probe(address: bus.address)
        let singleLate = try await measureSingles(client, &probe)
        let burstLate = try await measureBursts(client, &probe)
        probe.fired.cancel()
        probe.floorSignals.cancel()
        daemon.signal(SIGTERM)
        _ = try await daemon.kill(timeout: .seconds(10))
        await bus.stop()
        report(singles: singleLate, bursts: burstLate)
    }

    /// What receives both sides' signals, and the connection the floor emits from; the singles
    /// and the bursts share them, as they share the daemon.
    struct Probe {
        let subscriber: DBusConnection
        let fired: DBusSignalSubscription
        let floorSignals: DBusSignalSubscription
        let emitter: DBusConnection
        let floorInterface: InterfaceName
        var firedIterator: AsyncStream<DBusSignal>.Iterator
        var floorIterator: AsyncStream<DBusSignal>.Iterator

        init(address: String) async throws {
            let subscriber = try await DBusConnection.connect(address: address)
            let floorInterface = InterfaceName("io.github.tocsin.Bench1")
            let fired = try await subscriber.subscribe(MatchRule(interface: Gateway.interface, member: "Fired", path: Gateway.objectPath))
            let floorSignals = try await subscriber.subscribe(MatchRule(interface: floorInterface, member: "Tick"))
            emitter = try await DBusConnection.connect(address: address)
            self.subscriber = subscriber
            self.floorInterface = floorInterface
            self.fired = fired
            self.floorSignals = floorSignals
            firedIterator = fired.makeAsyncIterator()
            floorIterator = floorSignals.makeAsyncIterator()
        }
    }

    /// Late by (ms), per measurement, for Tocsin and for the floor.
    typealias Lateness = (tocsin: [Double], floor: [Double])

    private static func schedule(_ client: DBusConnection, _ fields: [(String, DBusValue)]) async throws {
        _ = try await client.call(destination: Gateway.busName, path: Gateway.objectPath, interface: Gateway.interface,
                                  member: "Schedule", arguments: [.vardict(fields)])
    }

    /// `count` notifications, 64 calls in flight, as the peer harness schedules them.
    private static func schedule(_ client: DBusConnection, count: Int,
                                 _ fields: @escaping @Sendable (Int) -> [(String, DBusValue)]) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            for lane in 0..<64 {
                group.addTask {
                    for i in stride(from: lane, to: count, by: 64) { try await schedule(client, fields(i)) }
                }
            }
            try await group.waitForAll()
        }
    }

    private func measureSingles(_ client: DBusConnection, _ probe: inout Probe) async throws -> Lateness {
        var late: Lateness = ([], [])
        let emitter = probe.emitter, floorInterface = probe.floorInterface
        for i in 0..<singles {
            // Tocsin: one `at`, 300 ms ahead, on a millisecond (what `at` carries).
            let due = (SystemClock().now().microseconds / 1000 + 300) * 1000
            try await Self.schedule(client, [("key", .string("s\(i)")), ("title", .string("single \(i)")),
                                             ("at", .string(Self.rfc3339Milliseconds(due)))])
            while let signal = await probe.firedIterator.next() {
                let now = SystemClock().now().microseconds
                guard case .string("s\(i)")? = signal.arguments.first else { continue }
                late.tocsin.append(Double(now - due) / 1000)
                break
            }
            // The floor: the same instant, 300 ms ahead, a thread's absolute sleep and one signal.
            let floorDue = (SystemClock().now().microseconds / 1000 + 300) * 1000
            let thread = Thread {
                var ts = timespec(tv_sec: Int(floorDue / 1_000_000), tv_nsec: Int(floorDue % 1_000_000) * 1000)
                while clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &ts, nil) == EINTR {}
                try? emitter.emit(path: "/io/github/tocsin/Bench1", interface: floorInterface, member: "Tick", arguments: [.string("f\(i)")])
            }
            thread.start()
            if await probe.floorIterator.next() != nil {
                late.floor.append(Double(SystemClock().now().microseconds - floorDue) / 1000)
            }
        }
        return late
    }

    /// Bursts: `burst` due at one instant, to the last one received, against the same floor
    /// sending as many `Fired`-shaped signals, marshalled beforehand, through libdbus in one go.
    private func measureBursts(_ client: DBusConnection, _ probe: inout Probe) async throws -> Lateness {
        var late: Lateness = ([], [])
        let emitter = probe.emitter, floorInterface = probe.floorInterface
        for round in 0..<(burst > 0 ? bursts : 0) {
            let due = (SystemClock().now().microseconds / 1000 + 2000) * 1000
            try await Self.schedule(client, count: burst) { i in
                [("key", .string("b\(round)-\(i)")), ("title", .string("burst \(i)")), ("at", .string(Self.rfc3339Milliseconds(due)))]
            }
            var got = 0
            while got < burst, let signal = await probe.firedIterator.next() {
                guard case .string(let key)? = signal.arguments.first, key.hasPrefix("b\(round)-") else { continue }
                got += 1
                if got == burst { late.tocsin.append(Double(SystemClock().now().microseconds - due) / 1000) }
            }
            let floorDue = (SystemClock().now().microseconds / 1000 + 500) * 1000
            let messages = try (0..<burst).map { i in
                try DBusMessage.signal(path: "/io/github/tocsin/Bench1", interface: floorInterface, member: "Tick") { w in
                    w.string("f\(i)")
                    w.vardict { d in
                        d.string("title", "burst \(i)"); d.string("body", ""); d.int64("due", floorDue); d.int64("fired", floorDue)
                        d.uint32("occurrence", 1); d.boolean("late", false); d.string("reason", "scheduled"); d.string("urgency", "normal")
                        d.stringPairs("user_info", []); d.strings("backends", ["events"])
                    }
                }
            }
            let sender = Thread {
                var ts = timespec(tv_sec: Int(floorDue / 1_000_000), tv_nsec: Int(floorDue % 1_000_000) * 1000)
                while clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &ts, nil) == EINTR {}
                emitter.send(messages)
            }
            sender.start()
            got = 0
            while got < burst, await probe.floorIterator.next() != nil {
                got += 1
                if got == burst { late.floor.append(Double(SystemClock().now().microseconds - floorDue) / 1000) }
            }
        }
        return late
    }

    private func report(singles singleLate: Lateness, bursts burstLate: Lateness) {
        let t = Percentiles(singleLate.tocsin), f = Percentiles(singleLate.floor)
        print("precision: \(singles) singles over \(pending) pending, due instant to Fired received (ms)")
        print("  tocsin  p50 \(formatted(t.p50, decimals: 3))  p99 \(formatted(t.p99, decimals: 3))  max \(formatted(t.max, decimals: 3))")
        print("  floor   p50 \(formatted(f.p50, decimals: 3))  p99 \(formatted(f.p99, decimals: 3))  max \(formatted(f.max, decimals: 3))   (timer + one signal through the bus)")
        print("  tocsin above the floor: p50 +\(formatted(t.p50 - f.p50, decimals: 3)) ms, p99 +\(formatted(t.p99 - f.p99, decimals: 3)) ms")
        if !burstLate.tocsin.isEmpty {
            let tb = burstLate.tocsin.min()!, fb = burstLate.floor.min() ?? .nan
            print("burst: \(burst) due together over \(pending) pending, due instant to the last Fired received, best of \(bursts) (ms)")
            print("  tocsin \(formatted(tb, decimals: 1))  floor \(formatted(fb, decimals: 1)) (as many signals, marshalled beforehand, one libdbus send)  ratio \(formatted(tb / fb, decimals: 2))")
        }
        print("  goal p50 <= \(goalP50) ms: \(t.p50 <= goalP50 ? "PASS" : "FAIL"); goal p99 <= \(goalP99) ms: \(t.p99 <= goalP99 ? "PASS" : "FAIL")")
    }

    /// `at` with the milliseconds the harness's singles use.
    static func rfc3339Milliseconds(_ microseconds: Int64) -> String {
        let whole = Timestamp.rfc3339UTC(Instant(microseconds: microseconds - microseconds % 1_000_000))
        return String(whole.dropLast()) + String(format: ".%03dZ", Int(microseconds % 1_000_000 / 1000))
    }

    private func waitForName(_ client: DBusConnection) async throws {
        let deadline = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < deadline {
            if (try? await client.nameOwner(Gateway.busName)) ?? nil != nil { return }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw ValidationError("the daemon did not take its bus name within 30 s")
    }
}

/// Nearest-rank percentiles of a small sample.
struct Percentiles {
    var p50: Double, p99: Double, max: Double
    init(_ values: [Double]) {
        let s = values.sorted()
        func at(_ q: Double) -> Double { s.isEmpty ? .nan : s[Swift.min(s.count - 1, Int((Double(s.count) * q).rounded(.up)) - 1)] }
        p50 = at(0.5)
        p99 = at(0.99)
        max = s.last ?? .nan
    }
}
