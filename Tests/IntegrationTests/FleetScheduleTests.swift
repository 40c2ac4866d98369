import Foundation
import Testing
import TocsinTesting

/// `fleet = true`: a notification scheduled, cancelled or snoozed on one machine acts on the
/// other, at the same instants. Two daemons on two private buses and a real mosquitto, driven by
/// `tocsin` and `mosquitto_pub`/`mosquitto_sub`.
@Suite("Fleet scheduling over MQTT", .serialized)
struct FleetScheduleTests {
    /// The config's own alarm is far away: these tests are about run-time notifications.
    private func withFleet(_ body: (MosquittoBroker, FleetMachine, FleetMachine) async throws -> Void) async throws {
        try await FleetMachine.withPair(alarmIn: 86_400, body)
    }

    @Test("`tocsin schedule --fleet --after 2s` on machine-a rings on both at the same due instant")
    func scheduleRingsBoth() async throws {
        try await withFleet { _, a, b in
            let key = try await a.tocsin("schedule", "--fleet", "--key", "tea", "--title", "Tea", "--after", "2s")
            #expect(key.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines) == "tea")
            try await a.waitForEvent("Fired", key: "tea", timeout: .seconds(20))
            try await b.waitForEvent("Fired", key: "tea", timeout: .seconds(20))
            let dueA = try #require(a.events("Fired", key: "tea").first.flatMap(Self.due))
            let dueB = try #require(b.events("Fired", key: "tea").first.flatMap(Self.due))
            #expect(dueA == dueB, "machine-a due \(dueA), machine-b due \(dueB)")
            // machine-b scheduled it without sharing it back: one scheduled message, from machine-a.
            #expect(!b.process.stderr.contains("sharing tea"), "\(b.process.stderr.suffix(2000))")
            #expect(a.process.stderr.components(separatedBy: "mqtt fleet: scheduled/tea/").count == 1, "machine-a acted on a scheduled message")
        }
    }

    @Test("a cancel on machine-a cancels on machine-b; replayed messages neither schedule twice nor bring it back")
    func cancelAndReplay() async throws {
        try await withFleet { broker, a, b in
            // Every scheduled and cancelled message, as anyone on the broker sees them.
            // Line-buffered (stdbuf), so its SUBACK shows before anything is published.
            let sub = try TestProcess("stdbuf", ["-oL", "mosquitto_sub", "-h", "127.0.0.1", "-p", "\(broker.port)", "-q", "1", "-d",
                                                        "-t", "tocsin/scheduled", "-t", "tocsin/cancelled"])
            try await sub.waitForOutput(containing: "SUBACK", timeout: .seconds(10))
            _ = try await a.tocsin("schedule", "--fleet", "--key", "meeting", "--title", "Meeting", "--after", "1h")
            try await b.process.waitForStderr(containing: "mqtt fleet: scheduled/meeting/", timeout: .seconds(10))
            let listed = try await b.waitForList { $0.contains("\"meeting\"") }
            #expect(listed.contains("\"meeting\""))
            // Both machines agree on the instant: the message carried `at`, not `after 1h`.
            let nextA = try await a.nextFire("meeting"), nextB = try await b.nextFire("meeting")
            #expect(nextA != nil && nextA == nextB, "machine-a \(String(describing: nextA)), machine-b \(String(describing: nextB))")

            let lines = try await sub.waitForOutput(containing: "\"kind\":\"scheduled\"", timeout: .seconds(10))
            let scheduled = try #require(lines.split(separator: "\n").first { $0.hasPrefix("{") && $0.contains("\"kind\":\"scheduled\"") })
            let scheduledID = try #require(Self.id(of: String(scheduled)))

            // The scheduled message again, as a broker redelivers it or anyone replays it: no second schedule.
            try await replay(String(scheduled), on: broker)
            try await b.process.waitForStderr(containing: "ignored a redelivered \(scheduledID) from machine-a", timeout: .seconds(10))

            _ = try await a.tocsin("cancel", "meeting")
            try await b.waitForEvent("Cancelled", key: "meeting", timeout: .seconds(10))
            try await sub.waitForOutput(containing: "\"kind\":\"cancelled\"", timeout: .seconds(10))

            // Replayed after the cancel: older than the change in force, so it does not bring it back.
            try await replay(String(scheduled), on: broker)
            let log = try await b.process.waitForStderr(containing: "ignored \(scheduledID) from machine-a: a later change", timeout: .seconds(10))
            #expect(log.components(separatedBy: "mqtt fleet: \(scheduledID) from machine-a").count == 2, "acted more than once: \(log.suffix(3000))")
            let after = try await b.tocsin("list", "--json")
            #expect(!after.stdoutText.contains("\"meeting\""), "the replay brought it back: \(after.stdoutText)")
            #expect(b.events("Cancelled", key: "meeting").count == 1)
        }
    }

    @Test("with the broker down, `schedule --fleet` answers at once and the notification reaches machine-b after the broker is back, and survives its reload")
    func brokerDown() async throws {
        try await withFleet { broker, a, b in
            // machine-b's session must survive the crash: it is what queues the message for it.
            try await broker.waitUntilSaved(subscriptionsOf: "machine-b", count: 4, timeout: .seconds(10))
            try await broker.crash()
            try await a.process.waitForStderr(containing: "mqtt fleet: lost the broker", timeout: .seconds(10))
            let start = ContinuousClock.now
            _ = try await a.tocsin("schedule", "--fleet", "--key", "late-tea", "--title", "Tea", "--after", "1h")
            let local = ContinuousClock.now - start
            #expect(local < TimingBudget.scaled(.seconds(1)), "schedule --fleet took \(local) with the broker down")
            #expect(try await a.nextFire("late-tea") != nil)
            try await broker.run()
            try await b.process.waitForStderr(containing: "mqtt fleet: scheduled/late-tea/", timeout: .seconds(30))
            let listed = try await b.waitForList { $0.contains("\"late-tea\"") }
            #expect(listed.contains("\"late-tea\""), "machine-b: \(listed)")
            let nextA = try await a.nextFire("late-tea"), nextB = try await b.nextFire("late-tea")
            #expect(nextA == nextB)
            // A reload of machine-b replaces its config notifications only: the one from the fleet stays.
            b.process.signal(SIGHUP)
            try await b.process.waitForStderr(containing: "reloaded", timeout: .seconds(20))
            #expect(try await b.nextFire("late-tea") == nextA, "machine-b lost it in a reload")
        }
    }

    @Test("a snooze for 90s on machine-a makes machine-b's next ring due 90s later, not its default 5 min")
    func snoozeDuration() async throws {
        try await withFleet { _, a, b in
            _ = try await a.tocsin("schedule", "--fleet", "--key", "oven", "--title", "Oven", "--after", "2s",
                                   "--backend", "alarm", "--backend", "events", "--backend", "fleet")
            try await a.waitForEvent("Fired", key: "oven", timeout: .seconds(20))
            try await b.waitForEvent("Fired", key: "oven", timeout: .seconds(20))
            let before = Int64(Date().timeIntervalSince1970 * 1_000_000)
            _ = try await a.tocsin("snooze", "oven", "90s")
            let after = Int64(Date().timeIntervalSince1970 * 1_000_000)
            try await a.waitForEvent("Snoozed", key: "oven", timeout: .seconds(5))
            try await b.waitForEvent("Snoozed", key: "oven", timeout: .seconds(10))
            let untilA = try #require((a.events("Snoozed", key: "oven").first?["until"] as? NSNumber)?.int64Value)
            let untilB = try #require((b.events("Snoozed", key: "oven").first?["until"] as? NSNumber)?.int64Value)
            #expect(untilA == untilB, "machine-a until \(untilA), machine-b until \(untilB)")
            #expect(untilA >= before + 90_000_000 && untilA <= after + 90_000_000, "until \(untilA) is not 90 s after the snooze")
            // machine-b's next ring is due then.
            let nextB = try await b.nextFire("oven")
            #expect(nextB == untilA, "machine-b rings next at \(String(describing: nextB)), expected \(untilA)")
        }
    }

    private func replay(_ payload: String, on broker: MosquittoBroker) async throws {
        let pub = try await TestProcess.run("mosquitto_pub", ["-h", "127.0.0.1", "-p", "\(broker.port)", "-q", "1",
                                                              "-t", "tocsin/scheduled", "-m", payload])
        #expect(pub.status == .exited(0), "\(pub.stderrText)")
    }

    static func due(_ event: [String: Any]) -> Int64? {
        ((event["info"] as? [String: Any])?["due"] as? NSNumber)?.int64Value
    }

    static func id(of payload: String) -> String? {
        ((try? JSONSerialization.jsonObject(with: Data(payload.utf8))) as? [String: Any])?["id"] as? String
    }
}

extension FleetMachine {
    /// The `tocsin watch --json` lines of `event` about `key`, decoded.
    func events(_ event: String, key: String) -> [[String: Any]] {
        watch.stdout.split(separator: "\n").compactMap { line in
            guard let d = (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any],
                  d["event"] as? String == event, d["key"] as? String == key else { return nil }
            return d
        }
    }

    /// `tocsin list --json` until `predicate` holds or the deadline passes: a message is applied by
    /// the receiving center after the backend logs it, and no event says "scheduled".
    func waitForList(timeout: Duration = .seconds(10), _ predicate: (String) -> Bool) async throws -> String {
        let deadline = ContinuousClock.now + timeout
        while true {
            let out = try await tocsin("list", "--json").stdoutText
            if predicate(out) || ContinuousClock.now > deadline { return out }
            await Task.yield()
        }
    }

    /// The `next_fire` of `key` in `tocsin list --json`.
    func nextFire(_ key: String) async throws -> Int64? {
        let out = try await tocsin("list", "--json").stdoutText
        guard let items = (try? JSONSerialization.jsonObject(with: Data(out.utf8))) as? [[String: Any]] else { return nil }
        let item = items.first { $0["key"] as? String == key }
        return (item?["next_fire"] as? NSNumber)?.int64Value
    }
}
