import DBus
import Logging
import Testing
import TocsinCore
import TocsinGateway
import TocsinTesting
import TocsinTime

/// The `dbus-signal` backend's signals built ahead of the instant (`BusLink.firedPreparer`): what
/// goes out must be the firing as delivered, whatever was built before it.
@Suite("Fired signals built ahead", .timeLimit(.minutes(2)))
struct FiredPreparedTests {
    static let due = Instant(seconds: 1_800_000_000)

    static func firing(_ key: String, title: String) -> Firing {
        var f = Firing(notification: Notification(key: key, title: title, trigger: .at(due)),
                       occurrence: Occurrence(instant: due, number: 1), due: due, fired: due, reason: .scheduled)
        f.backends = ["signals"]
        return f
    }

    struct Row: CustomTestStringConvertible, Sendable {
        let name: String
        /// What was prepared, and what is then delivered under the same key.
        let prepared: Firing
        let delivered: Firing
        var testDescription: String { name }
    }

    static let rows: [Row] = {
        let tea = firing("tea", title: "Tea")
        var late = tea
        late.reason = .late
        late.fired = due + .seconds(5)
        return [
            Row(name: "unchanged: the signal built ahead", prepared: tea, delivered: tea),
            Row(name: "replaced since: the new title", prepared: tea, delivered: firing("tea", title: "Replaced")),
            Row(name: "late: its own time and late flag", prepared: tea, delivered: late),
        ]
    }()

    @Test("the signal sent carries the firing as delivered", arguments: rows)
    func sentAsDelivered(_ row: Row) async throws {
        let bus = try await PrivateBus.start()
        defer { Task { await bus.stop() } }
        let link = BusLink(logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
        let sender = try await DBusConnection.connect(address: bus.address)
        defer { sender.close() }
        link.set(sender)
        let listener = try await DBusConnection.connect(address: bus.address)
        defer { listener.close() }
        let fired = try await listener.subscribe(MatchRule(interface: Gateway.interface, member: "Fired", path: Gateway.objectPath))
        defer { fired.cancel() }

        link.firedPreparer()([row.prepared])
        #expect(link.preparedFiredCount == 1, "row \(row.name)")
        let errors = link.firedEmitter()([row.delivered])
        #expect(errors.count == 1 && errors[0] == nil, "row \(row.name): \(errors)")
        #expect(link.preparedFiredCount == 0, "row \(row.name): the prepared signal was kept")

        let signal = try await withTimeout(.seconds(20), "Fired") {
            var it = fired.makeAsyncIterator()
            return await it.next()
        }
        let expected = try GatewayService.firedSignal(row.delivered, backends: row.delivered.backends).arguments()
        #expect(signal?.arguments == expected, "row \(row.name)")
    }

    @Test("signals built for claims that never go out do not accumulate")
    func bounded() async throws {
        let link = BusLink(logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
        let limit = 2 * TocsinCenter.aheadLimit
        link.firedPreparer()((0..<limit).map { Self.firing("k\($0)", title: "T") })
        #expect(link.preparedFiredCount == limit)
        link.firedPreparer()([Self.firing("one-more", title: "T")])
        #expect(link.preparedFiredCount <= limit)
        // With no connection nothing is sent, and nothing prepared is used up.
        let errors = link.firedEmitter()([Self.firing("one-more", title: "T")])
        #expect(errors.first??.code == .unavailable)
    }
}
