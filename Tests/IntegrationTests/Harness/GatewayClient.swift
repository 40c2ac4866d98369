import DBus
import TocsinCore
import TocsinSystem
import TocsinGateway
import TocsinTesting
import TocsinTime

/// The daemon as a harness test's body sees it, the same in every `DaemonMode`: calls on the
/// gateway object, its signals, and a clock that moves on when the test lets time pass.
final class GatewayClient: Sendable {
    let mode: DaemonMode
    /// Our own D-Bus layer's connection to the daemon (a bus client, or the peer itself).
    let connection: DBusConnection
    /// The bus both ends are on; nil peer-to-peer, where only our connection reaches the daemon.
    let bus: PrivateBus?
    /// The daemon library, when it runs in this process; nil for the binary.
    let inProcess: InProcessDaemon?
    private let clock: VirtualClock?

    init(mode: DaemonMode, connection: DBusConnection, bus: PrivateBus?, inProcess: InProcessDaemon?, clock: VirtualClock?) {
        self.mode = mode; self.connection = connection; self.bus = bus; self.inProcess = inProcess; self.clock = clock
    }

    /// Calls `member` on the gateway; a D-Bus error reply throws that `DBusError`.
    func call(_ member: MemberName, _ arguments: [DBusValue] = []) async throws -> [DBusValue] {
        try await connection.call(destination: connection.isPeerToPeer ? nil : Gateway.busName, path: Gateway.objectPath,
                                  interface: Gateway.interface, member: member, arguments: arguments, timeout: .seconds(30))
    }

    /// A property of the gateway interface, through org.freedesktop.DBus.Properties.
    func property(_ name: String) async throws -> DBusValue? {
        let reply = try await connection.call(destination: connection.isPeerToPeer ? nil : Gateway.busName, path: Gateway.objectPath,
                                              interface: "org.freedesktop.DBus.Properties", member: "Get",
                                              arguments: [.string(Gateway.interface.rawValue), .string(name)], timeout: .seconds(30))
        return reply.first?.unwrappedVariant
    }

    /// Starts recording the gateway's `member` signals; every one emitted after this returns is seen.
    func signals(_ member: MemberName) async throws -> SignalLog {
        let subscription = try await connection.subscribe(MatchRule(interface: Gateway.interface, member: member,
                                                                    path: Gateway.objectPath))
        return SignalLog(subscription)
    }

    /// The daemon's now: the virtual clock in this process, the wall clock for the binary.
    var now: Instant { clock?.now() ?? SystemClock().now() }

    /// Lets `span` pass for the daemon. In this process that moves the virtual clock and
    /// lets the center act on it at once; the binary runs on the real clock, so there time
    /// passes by itself and the test waits on the daemon's signal (with a deadline) instead.
    func elapse(_ span: TimeSpan) async {
        guard let clock, let inProcess else { return }
        _ = clock.advance(by: span)
        await inProcess.center.tick()
    }

    /// How far ahead a test should put a due time it wants to see fire after a few more calls:
    /// a virtual clock jumps there; the binary's real clock gets there in that long, which must
    /// outlast the calls made meanwhile (a handful of gdbus runs took over 2 s beside the other
    /// suites), so a test checks `beforeDue` when its calls must come first.
    var shortDelay: TimeSpan { clock == nil ? .seconds(6) : .seconds(30) }

    /// Whether `due` is still ahead: the premise of a test whose calls must all come before it.
    func beforeDue(_ due: Instant) -> Bool { now < due }
}

/// The signals one subscription received, in order, to wait on with a deadline.
final class SignalLog: Sendable {
    let received = WaitableState<[DBusSignal]>([])
    private let reader: Task<Void, Never>
    private let subscription: DBusSignalSubscription

    init(_ subscription: DBusSignalSubscription) {
        self.subscription = subscription
        let received = received
        reader = Task {
            for await s in subscription { received.update { $0.append(s) } }
        }
    }

    deinit {
        subscription.cancel()
        reader.cancel()
    }

    /// Waits until a signal whose first argument is `key` arrived; returns it.
    @discardableResult
    func first(key: String, timeout: Duration = .seconds(20)) async throws -> DBusSignal {
        let all = try await received.wait("a signal for '\(key)'", timeout: timeout) { $0.contains { $0.key == key } }
        return all.first { $0.key == key }!
    }

    func keys() -> [String] { received.value.compactMap(\.key) }
}

extension DBusSignal {
    /// The first argument when it is a string: the key, for every gateway signal that has one.
    var key: String? { try? arguments.first?.asString() }
}

extension DBusValue {
    /// An `a{sv}` entry, variant unwrapped.
    subscript(field: String) -> DBusValue? { (try? asStringDictionary())?[field]?.unwrappedVariant }
}
