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
        /// Whether the signal built ahead is the one sent.
        let sentAsBuilt: Bool
        var testDescription: String { name }
    }

    static let rows: [Row] = {
        let tea = firing("tea", title: "Tea")
        var late = tea
        late.reason = .late
        late.fired = due + .seconds(5)
        var quiet = tea
        quiet.backends = ["signals", "desktop"]
        return [
            Row(name: "unchanged: the signal built ahead", prepared: tea, delivered: tea, sentAsBuilt: true),
            Row(name: "replaced since: the new title", prepared: tea, delivered: firing("tea", title: "Replaced"), sentAsBuilt: false),
            Row(name: "late: its own time and late flag", prepared: tea, delivered: late, sentAsBuilt: false),
            Row(name: "routed otherwise (quiet hours): its own backends", prepared: quiet, delivered: tea, sentAsBuilt: false),
            // Equal as Swift strings (canonically equivalent), not the same bytes.
            Row(name: "replaced by another spelling of the same title: the new bytes",
                prepared: firing("tea", title: "Caf\u{E9}"), delivered: firing("tea", title: "Cafe\u{301}"), sentAsBuilt: false),
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
        #expect(link.preparedFired.waiting == 1, "row \(row.name)")
        let errors = link.firedEmitter()([row.delivered]).errors
        #expect(errors.count == 1 && errors[0] == nil, "row \(row.name): \(errors)")
        #expect(link.preparedFired.waiting == 0, "row \(row.name): the prepared signal was kept")
        #expect(link.preparedFired.used == (row.sentAsBuilt ? 1 : 0), "row \(row.name)")

        let signal = try await withTimeout(.seconds(20), "Fired") {
            var it = fired.makeAsyncIterator()
            return await it.next()
        }
        let expected = try GatewayService.firedSignal(row.delivered, backends: row.delivered.backends).arguments()
        #expect(signal?.arguments == expected, "row \(row.name)")
        #expect(Self.titleBytes(signal?.arguments) == Array(row.delivered.notification.title.utf8), "row \(row.name)")
    }

    /// The `title` of a `Fired` signal's info, as the bytes that came over the bus.
    static func titleBytes(_ arguments: [DBusValue]?) -> [UInt8]? {
        guard case .dictionary(_, _, let entries)? = arguments?.last else { return nil }
        for e in entries {
            if case .string("title") = e.key, case .variant(.string(let title)) = e.value { return Array(title.utf8) }
        }
        return nil
    }

    @Test("signals built for claims that never go out do not accumulate")
    func bounded() async throws {
        let link = BusLink(logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
        let limit = 2 * TocsinCenter.aheadLimit
        link.firedPreparer()((0..<limit).map { Self.firing("k\($0)", title: "T") })
        #expect(link.preparedFired.waiting == limit)
        link.firedPreparer()([Self.firing("one-more", title: "T")])
        #expect(link.preparedFired.waiting == 1, "past the limit, the older ones are dropped")
        // With no connection nothing is sent, and nothing prepared is used up.
        let handOff = link.firedEmitter()([Self.firing("one-more", title: "T")])
        #expect(handOff.errors.first??.code == .unavailable)
        #expect(handOff.departure == nil, "nothing was sent, so nothing is waited for")
        #expect(link.preparedFired.waiting == 1)
        // A claim dropped long ago: its signal goes with the next preparation.
        var later = Self.firing("later", title: "T")
        later.due = Self.due + .seconds(120)
        later.fired = later.due
        link.firedPreparer()([later])
        #expect(link.preparedFired.waiting == 1, "the stale one was kept")
    }
}
