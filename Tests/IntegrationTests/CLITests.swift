import Foundation
import Testing
import TocsinTesting

@Suite("tocsin CLI against a running daemon")
struct CLITests {
    @Test("schedule, list, cancel, post, ack and watch")
    func roundTrip() async throws {
        let config = """
            [backend.events]
            type = "dbus-signal"
            """
        try await withGateway(config: config) { g in
            let watch = try TestProcess(Products.executable("tocsin"), ["watch", "--json", "--bus", g.bus.address])
            // `watch` subscribes before it prints anything; wait on a signal it must see instead of on time.
            var s = try await g.tocsin("schedule", "--key", "tea", "--title", "Tea", "--after", "1h", "--user-info", "cup=green")
            #expect(s.status == .exited(0), "\(s.stderrText)")
            #expect(s.stdoutText == "tea\n")
            let list = try await g.tocsin("list")
            #expect(list.stdoutText.contains("tea"))
            #expect(list.stdoutText.contains("at "))
            let json = try await g.tocsin("list", "--json")
            let items = try #require(try JSONSerialization.jsonObject(with: Data(json.stdoutText.utf8)) as? [[String: Any]])
            #expect(items.first?["key"] as? String == "tea")
            #expect((items.first?["user_info"] as? [String: String]) == ["cup": "green"])

            s = try await g.tocsin("cancel", "tea")
            #expect(s.status == .exited(0))
            s = try await g.tocsin("cancel", "tea")
            #expect(s.status == .exited(1))
            #expect(s.stderrText == "error: no pending notification with key 'tea'\n")

            s = try await g.tocsin("post", "--key", "now", "--title", "Right now")
            #expect(s.stdoutText == "now\n")
            try await watch.waitForOutput(containing: "\"event\":\"Cancelled\",\"key\":\"tea\"", timeout: .seconds(20))
            try await watch.waitForOutput(containing: "\"event\":\"Fired\",\"key\":\"now\"", timeout: .seconds(20))
            _ = try await watch.kill()
        }
    }

    @Test("bad input is one clear line and a non-zero exit")
    func badInput() async throws {
        try await withGateway { g in
            let s = try await g.tocsin("schedule", "--title", "x", "--every", "0")
            #expect(s.status == .exited(1))
            #expect(s.stderrText == "error: invalid 'every': the interval must be longer than zero\n")
            let a = try await g.tocsin("schedule", "--title", "x", "--after", "1h", "--action", "noequals")
            #expect(a.status != .exited(0))
            #expect(a.stderrText.contains("--action takes KEY=VALUE, got 'noequals'"))
        }
    }

    @Test("no daemon: says so and how to start it")
    func noDaemon() async throws {
        let bus = try await PrivateBus.start()
        let out = try await TestProcess.run(Products.executable("tocsin"), ["list", "--bus", bus.address])
        await bus.stop()
        #expect(out.status == .exited(1))
        #expect(out.stderrText.contains("the Tocsin daemon is not running on \(bus.address); start it with 'tocsin daemon'"))
    }
}
