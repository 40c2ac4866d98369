import DBus
import Testing
import TocsinTesting
import TocsinTime

/// Behaviours of the gateway stated once and run against the daemon in every `DaemonMode`: the
/// library on a bus, the library serving one peer with no bus daemon, and the built binary.
/// A row that fails names its mode.
@Suite("Daemon in every mode")
struct DaemonModesTests {
    static func spec(_ fields: (String, DBusValue)...) -> DBusValue { .vardict(fields) }

    @Test("Schedule, List and Cancel answer alike; Fired carries the due time, and never comes for a cancelled key",
          arguments: DaemonMode.allCases)
    func scheduleListCancelFired(mode: DaemonMode) async throws {
        try await DaemonHarness.run(mode) { client in
            let fired = try await client.signals("Fired")
            let due = Instant(seconds: (client.now + client.shortDelay).seconds)
            for key in ["a", "b"] {
                let reply = try await client.call("Schedule", [Self.spec(("key", .string(key)), ("title", .string("T \(key)")),
                                                                         ("at", .string("@\(due.seconds)")))])
                #expect(try reply.first?.asString() == key, "\(mode): Schedule answers the key it was given")
            }
            let anonymous = try await client.call("Schedule", [Self.spec(("title", "anon"), ("after", "1h"))])
            #expect(try anonymous.first?.asString().count == 36, "\(mode): a generated key is a UUID")

            let titles = try await listedTitles(client)
            #expect(Set(titles.prefix(2)) == ["T a", "T b"] && titles.last == "anon", "\(mode): List, soonest first: \(titles)")
            #expect(try await client.call("Cancel", ["b"]).first == .boolean(true), "\(mode): Cancel of a pending key")
            #expect(try await client.call("Cancel", ["b"]).first == .boolean(false), "\(mode): Cancel again finds nothing")
            try #require(client.beforeDue(due), "\(mode): the calls took longer than the delay to the due time")

            await client.elapse(client.shortDelay)
            let signal = try await fired.first(key: "a", timeout: .seconds(20))
            #expect(signal.arguments.count == 2 && signal.arguments[1]["due"] == .int64(due.microseconds),
                    "\(mode): Fired says when it was due: \(signal.arguments)")
            #expect(signal.arguments[1]["title"] == .string("T a"), "\(mode)")
            #expect(!fired.keys().contains("b"), "\(mode): a cancelled notification never fires")
            // The one-shot is done once fired; the one an hour away is still there.
            #expect(try await listedTitles(client) == ["anon"], "\(mode): List after the firing")
        }
    }

    @Test("a key scheduled again replaces the first: one firing, with the second's content", arguments: DaemonMode.allCases)
    func rescheduleReplaces(mode: DaemonMode) async throws {
        try await DaemonHarness.run(mode) { client in
            let fired = try await client.signals("Fired")
            let due = Instant(seconds: (client.now + client.shortDelay).seconds)
            for title in ["first", "second"] {
                _ = try await client.call("Schedule", [Self.spec(("key", "k"), ("title", .string(title)), ("at", .string("@\(due.seconds)")))])
            }
            #expect(try await listedTitles(client) == ["second"], "\(mode)")
            try #require(client.beforeDue(due), "\(mode): the calls took longer than the delay to the due time")
            await client.elapse(client.shortDelay)
            let signal = try await fired.first(key: "k", timeout: .seconds(20))
            #expect(signal.arguments[1]["title"] == .string("second"), "\(mode): \(signal.arguments)")
            #expect(fired.keys() == ["k"], "\(mode): fired once")
        }
    }

    @Test("an invalid calendar is refused as InvalidArgs, naming the field, and nothing is scheduled",
          arguments: DaemonMode.allCases)
    func invalidRequest(mode: DaemonMode) async throws {
        try await DaemonHarness.run(mode) { client in
            do {
                _ = try await client.call("Schedule", [Self.spec(("key", "x"), ("title", "t"), ("on_calendar", "not a calendar"))])
                Issue.record("\(mode): an invalid calendar was accepted")
            } catch let e as DBusError {
                #expect(e.name == "org.freedesktop.DBus.Error.InvalidArgs" && e.message.contains("on_calendar"), "\(mode): \(e)")
            }
            #expect(try await listedTitles(client).isEmpty, "\(mode)")
        }
    }

    @Test("a bad History filter is refused naming the field, and the daemon keeps answering", arguments: DaemonMode.allCases)
    func badHistoryFilter(mode: DaemonMode) async throws {
        try await DaemonHarness.run(mode) { client in
            let rows: [(filter: DBusValue, message: String)] = [
                (Self.spec(("kye", "x")), "unknown key 'kye' in the History filter; did you mean 'key'?"),
                (Self.spec(("since", "yesterday")), "'since' in the History filter must be an int64"),
            ]
            for row in rows {
                do {
                    _ = try await client.call("History", [row.filter])
                    Issue.record("\(mode): \(row.message): the filter was accepted")
                } catch let e as DBusError {
                    #expect(e.name == "org.freedesktop.DBus.Error.InvalidArgs" && e.message.contains(row.message), "\(mode): \(e)")
                }
            }
            #expect(try await client.call("History", [Self.spec()]).count == 1, "\(mode): a good filter is still answered")
        }
    }

    @Test("Status and the Pending property count what is pending, and Status names the next one", arguments: DaemonMode.allCases)
    func statusAndPending(mode: DaemonMode) async throws {
        try await DaemonHarness.run(mode) { client in
            #expect(try await client.property("Pending") == .uint32(0), "\(mode)")
            for (key, after) in [("later", "2h"), ("sooner", "1h")] {
                _ = try await client.call("Schedule", [Self.spec(("key", .string(key)), ("title", "t"), ("after", .string(after)))])
            }
            #expect(try await client.property("Pending") == .uint32(2), "\(mode)")
            let status = try #require(try await client.call("Status").first, "\(mode)")
            #expect(status["pending"] == .uint32(2) && status["next_key"] == .string("sooner"), "\(mode): \(status)")
            #expect(try await client.property("Backends") == .array(.string, [.string("events")]), "\(mode)")
        }
    }

    private func listedTitles(_ client: GatewayClient) async throws -> [String] {
        let reply = try await client.call("List")
        return try (reply.first?.asArray() ?? []).map { try ($0["title"] ?? .string("")).asString() }
    }
}
