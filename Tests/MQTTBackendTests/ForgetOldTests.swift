import Foundation
import Logging
import Synchronization
import Testing
import TocsinCore
import TocsinTesting
@testable import TocsinMQTTBackend

/// The mqtt backend's maps in memory (the occurrence last delivered per key, the fleet keys) let go
/// of what its file prunes: before, a daemon running for months held an entry for every key it
/// had ever delivered or shared, until its next start.
@Suite("mqtt backend: its maps in memory forget what the file forgets")
struct ForgetOldTests {
    static let day: Int64 = 86_400_000_000
    static let now: Int64 = 1_795_000_000 * 1_000_000
    static let cutoff = now - FleetStore.keepSeenSeconds * 1_000_000

    struct Row: Sendable, CustomTestStringConvertible {
        let name: String
        let delivered: Int64?
        let fleet: (shared: Bool, changed: Int64)?
        let kept: Bool
        var testDescription: String { name }
    }

    static let rows: [Row] = [
        Row(name: "delivered a day ago: kept", delivered: now - day, fleet: nil, kept: true),
        Row(name: "delivered at the cutoff: kept", delivered: cutoff, fleet: nil, kept: true),
        Row(name: "delivered 31 days ago: dropped", delivered: cutoff - day, fleet: nil, kept: false),
        Row(name: "unshared a day ago: kept (a late 'scheduled' must still lose)", delivered: nil, fleet: (false, now - day), kept: true),
        Row(name: "unshared 31 days ago: dropped", delivered: nil, fleet: (false, cutoff - day), kept: false),
        Row(name: "shared 31 days ago: kept (it is in force)", delivered: nil, fleet: (true, cutoff - day), kept: true),
    ]

    @Test("each entry is kept or dropped as the file's rows are", arguments: rows)
    func forgets(_ row: Row) {
        var s = MQTTBackend.State()
        if let due = row.delivered { s.delivered["k"] = (1, due) }
        if let f = row.fleet { s.fleet["k"] = f }
        s.forgetOld(now: Self.now)
        let present = s.delivered["k"] != nil || s.fleet["k"] != nil
        #expect(present == row.kept, "\(row.name)")
    }

    @Test("it runs at most once a day: an entry that ages past the cutoff goes at the next day's run")
    func onceADay() {
        var s = MQTTBackend.State()
        s.forgetOld(now: Self.now)
        s.delivered["old"] = (1, Self.cutoff - 1)
        s.forgetOld(now: Self.now + Self.day - 1)
        #expect(s.delivered["old"] != nil, "a second run within the day")
        s.forgetOld(now: Self.now + Self.day)
        #expect(s.delivered["old"] == nil, "the next day's run")
    }

    struct EchoRow: Sendable, CustomTestStringConvertible {
        let name: String
        let received: Int64?
        let withdrawn: Int64
        let echoed: Int?
        var testDescription: String { name }
    }

    static let echoRows: [EchoRow] = [
        EchoRow(name: "the withdraw of the occurrence it snoozed echoes it", received: 600, withdrawn: 600, echoed: 4),
        EchoRow(name: "one the center refused does not number a later occurrence's snooze", received: 600, withdrawn: 900, echoed: nil),
        EchoRow(name: "nothing received: nothing echoed", received: nil, withdrawn: 600, echoed: nil),
    ]

    @Test("a withdraw takes the received snooze's number only for the occurrence it answered, once", arguments: echoRows)
    func echoes(_ row: EchoRow) {
        var s = MQTTBackend.State()
        if let due = row.received { s.echoes["k"] = .init(snooze: 4, due: due, at: Self.now) }
        #expect(s.takeEcho(key: "k", due: row.withdrawn) == row.echoed, "\(row.name)")
        #expect(s.echoes.isEmpty, "\(row.name): taken or dropped by the withdraw")
    }

    @Test("an echo that never came goes at the daily run; one of the last day stays")
    func staleEchoes() {
        var s = MQTTBackend.State()
        s.echoes["stale"] = .init(snooze: 2, due: 600, at: Self.now - Self.day)
        s.echoes["recent"] = .init(snooze: 1, due: 600, at: Self.now - 1)
        s.forgetOld(now: Self.now)
        #expect(Set(s.echoes.keys) == ["recent"])
    }

    @Test("a delivery forgets what aged out of both maps; the occurrence it delivers is kept")
    func deliveryForgets() async throws {
        let options = MQTTBackendFactory.Options(host: "127.0.0.1", port: 1, clientID: "tocsin-test-forget")
        let backend = MQTTBackend(name: "fleet", options: options, subscribes: true, stateDirectory: nil,
                                  logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
        let now = Int64(Date().timeIntervalSince1970 * 1_000_000)
        let old = now - FleetStore.keepSeenSeconds * 1_000_000 - Self.day
        backend.state.withLock { s in
            s.delivered["gone"] = (3, old)
            s.fleet["unshared"] = (false, old)
            s.fleet["shared"] = (true, old)
        }
        let firing = try #require(BackendConformance.firings(key: "fresh").first)
        // Not started: no broker, so the publish fails; what the delivery records in memory is asked.
        _ = try? await backend.deliver(firing)
        let (delivered, fleet) = backend.state.withLock { (Set($0.delivered.keys), Set($0.fleet.keys)) }
        #expect(delivered == ["fresh"])
        #expect(fleet == ["shared"])
    }
}
