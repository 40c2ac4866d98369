import DBus
import Foundation
import Synchronization
import TocsinClient
import TocsinClientTesting
import TocsinTesting

/// The two implementations every conformance test runs against.
enum Implementation: String, CaseIterable, Sendable, CustomStringConvertible {
    case inMemory = "in-memory double"
    case daemon = "client on a real daemon"
    var description: String { rawValue }
}

/// One implementation ready for a test: the center, and how time and people act on it. For the
/// double, time is virtual and a click is simulated; for the daemon, time is real (triggers are
/// seconds) and the example `dbus-service` backend clicks `join` on every delivery it gets.
protocol Harness: Sendable {
    var center: any TocsinNotifying { get }
    /// A second client of the same daemon: its notifications are not this center's.
    func otherCenter() -> any TocsinNotifying
    func now() async -> Date
    /// Lets `duration` of the center's time pass (at once for the double; the daemon's clock runs by itself).
    func pass(_ duration: Duration) async
    /// A person choosing `action` on the popup of `key`, already delivered.
    func click(key: String, action: String) async throws
    func stop() async
}

/// Backends both sides know: `events` (the dbus-signal backend, which is what sends `Fired`),
/// `bridge` (the example dbus-service backend, which answers each delivery with an action) and
/// `log` (which delivers without any event).
enum Backends {
    static let events = ["events"]
    static let withBridge = ["events", "bridge"]
    static let log = ["log"]
    static let types: [String: InMemoryNotificationCenter.BackendType] = ["events": .dbusSignal, "bridge": .dbusService, "log": .log]
}

struct InMemoryHarness: Harness {
    let double = InMemoryNotificationCenter(backends: Backends.types)
    var center: any TocsinNotifying { double }
    func otherCenter() -> any TocsinNotifying { InMemoryNotificationCenter(backends: Backends.types) }
    func now() async -> Date { await double.now }
    func pass(_ duration: Duration) async { await double.advance(by: duration) }
    func click(key: String, action: String) async throws { try await double.invokeAction(key: key, action: action) }
    func stop() async {}
}

/// A private bus, the example backend service as `bridge`, and the built `tocsin daemon`.
final class DaemonHarness: Harness {
    static let serviceName = "org.example.TocsinClientBridge"
    static let config = """
        [daemon]
        timezone = "UTC"
        max_pending_per_client = 1000000

        [backend.events]
        type = "dbus-signal"

        [backend.log]
        type = "log"

        [backend.bridge]
        type = "dbus-service"
        bus_name = "\(serviceName)"
        """

    let bus: PrivateBus
    let dir: TemporaryDirectory
    let service: TestProcess
    let daemon: Mutex<TestProcess>
    let center: any TocsinNotifying
    let real: TocsinNotificationCenter

    static var repositoryRoot: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path
    }

    private init(bus: PrivateBus, dir: TemporaryDirectory, service: TestProcess, daemon: TestProcess, pageSize: Int) {
        self.bus = bus
        self.dir = dir
        self.service = service
        self.daemon = Mutex(daemon)
        real = TocsinNotificationCenter(bus: .address(bus.address), pageSize: pageSize)
        center = real
    }

    static func start(pageSize: Int = 10_000, busConfig: String = PrivateBus.defaultConfigFile,
                      config: String = DaemonHarness.config) async throws -> DaemonHarness {
        let bus = try await PrivateBus.start(configFile: busConfig)
        do {
            let dir = TemporaryDirectory(prefix: "tocsin-client")
            try dir.write("config.toml", config)
            let service = try TestProcess("/usr/bin/python3", [
                "-u", repositoryRoot + "/contrib/backends/tocsin-backend-example.py", "--address", bus.address,
                "--bus-name", serviceName, "--report", "action:join",
            ])
            _ = try await service.waitForOutput(containing: "ready \(serviceName)", timeout: .seconds(30))
            let daemon = try await startDaemon(bus: bus, dir: dir)
            return DaemonHarness(bus: bus, dir: dir, service: service, daemon: daemon, pageSize: pageSize)
        } catch {
            await bus.stop()
            throw error
        }
    }

    static func daemonArguments(dir: TemporaryDirectory) -> [String] {
        ["daemon", "--config", dir.path + "/config.toml", "--state-dir", dir.path + "/state"]
    }

    static func daemonEnvironment(dir: TemporaryDirectory) -> [String: String] {
        ["HOME": dir.path, "XDG_CONFIG_HOME": dir.path + "/config", "XDG_STATE_HOME": dir.path + "/state-home",
         "TZ": "UTC", "NOTIFY_SOCKET": ""]
    }

    /// `address`: where the daemon connects, by default the bus's full address (with its guid).
    static func startDaemon(bus: PrivateBus, dir: TemporaryDirectory, address: String? = nil) async throws -> TestProcess {
        let p = try TestProcess(Products.executable("tocsin"), daemonArguments(dir: dir) + ["--bus", address ?? bus.address],
                                environment: daemonEnvironment(dir: dir).merging(bus.environment) { $1 })
        let text = "serving the D-Bus API"
        let state = try await p.output.wait("'\(text)' from tocsin daemon", timeout: .seconds(30)) {
            $0.stderrText.contains(text) || $0.status != nil
        }
        guard state.stderrText.contains(text) else { throw TestProcessError("tocsin daemon ended: \(state.stderrText.suffix(2000))") }
        return p
    }

    /// Stops the daemon (SIGTERM, as systemd would) and starts it again on the same state.
    func restartDaemon() async throws {
        let old = daemon.withLock { $0 }
        old.signal(SIGTERM)
        _ = try await old.waitForExit(timeout: .seconds(20))
        let new = try await Self.startDaemon(bus: bus, dir: dir)
        daemon.withLock { $0 = new }
    }

    /// Kills the daemon with SIGKILL, as a crash would, and starts it again on the same state.
    func crashDaemon() async throws {
        let old = daemon.withLock { $0 }
        old.signal(SIGKILL)
        _ = try await old.waitForExit(timeout: .seconds(20))
        let new = try await Self.startDaemon(bus: bus, dir: dir)
        daemon.withLock { $0 = new }
    }

    func otherCenter() -> any TocsinNotifying { TocsinNotificationCenter(bus: .address(bus.address)) }
    func now() async -> Date { Date() }
    func pass(_ duration: Duration) async {}
    func click(key: String, action: String) async throws {}

    func stop() async {
        let p = daemon.withLock { $0 }
        p.signal(SIGTERM)
        _ = try? await p.waitForExit(timeout: .seconds(10))
        _ = try? await service.kill()
        await bus.stop()
    }
}

/// Runs `body` with a fresh harness of `implementation` and always stops it.
func withHarness(_ implementation: Implementation, pageSize: Int = 10_000,
                 _ body: (any Harness) async throws -> Void) async throws {
    let h: any Harness
    switch implementation {
    case .inMemory: h = InMemoryHarness()
    case .daemon: h = try await DaemonHarness.start(pageSize: pageSize)
    }
    do {
        try await body(h)
        await h.stop()
    } catch {
        await h.stop()
        throw error
    }
}

/// Events as they arrive, for waiting on with a deadline.
final class EventLog: Sendable {
    let state = WaitableState<[NotificationEvent]>([])
    private let task: Mutex<Task<Void, Never>?> = Mutex(nil)

    init(_ stream: AsyncStream<NotificationEvent>) {
        let state = self.state
        task.withLock {
            $0 = Task {
                for await e in stream { state.update { $0.append(e) } }
            }
        }
    }

    deinit { task.withLock { $0 }?.cancel() }

    var events: [NotificationEvent] { state.value }

    /// Waits until an event satisfies `predicate`; returns it.
    @discardableResult
    func wait(_ what: String, timeout: Duration = .seconds(30),
              _ predicate: @escaping @Sendable (NotificationEvent) -> Bool) async throws -> NotificationEvent {
        let events = try await state.wait(what, timeout: timeout) { $0.contains(where: predicate) }
        return events.first(where: predicate)!
    }

    /// The `fired` events of `key` so far.
    func fired(_ key: String) -> [FiredNotification] {
        events.compactMap { if case .fired(let f) = $0, f.key == key { f } else { nil } }
    }
}

extension NotificationEvent {
    var isFired: Bool { if case .fired = self { true } else { false } }
}
