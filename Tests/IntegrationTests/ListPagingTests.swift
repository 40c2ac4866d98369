import Foundation
import Testing
import TocsinTesting

/// Issue 17, second finding: with enough pending, `List` built a reply larger than the bus takes
/// and the bus dropped the daemon ("lost the bus connection; reconnecting"). Shown here on a bus
/// whose messages are limited to 1 MiB, with 400 notifications of about 4 KiB each.
@Suite("List paging and the reply-size guard")
struct ListPagingTests {
    static let busConfig = GatewayFixture.repositoryRoot + "/contrib/test/dbus-session-1mib.conf"
    static let config = GatewayFixture.defaultConfig + "\n[daemon]\nmax_message_size = 1048576\n"
    static let count = 400

    /// Schedules `count` notifications with 4 KiB bodies (about 1.7 MB as one List reply).
    func fill(_ g: GatewayFixture) async throws {
        let out = try await g.python("""
            import dbus
            bus = dbus.bus.BusConnection(ADDRESS)
            gw = dbus.Interface(bus.get_object('io.github.tocsin.Gateway', '/io/github/tocsin/Gateway'), 'io.github.tocsin.Gateway1')
            for i in range(\(Self.count)):
                gw.Schedule(dbus.Dictionary({'key': 'n%04d' % i, 'title': 'title %d' % i, 'body': 'b' * 4096, 'after': '1h'}, signature='sv'))
            """)
        try #require(out.status == .exited(0), "\(out.stderrText)")
    }

    /// The daemon still owns its name and answers Ping.
    func onTheBus(_ g: GatewayFixture) async throws -> Bool {
        let ping = try await TestProcess.run("dbus-send", ["--bus=\(g.bus.address)", "--print-reply", "--dest=\(GatewayFixture.dest)",
                                                           GatewayFixture.path, "org.freedesktop.DBus.Peer.Ping"])
        return ping.status == .exited(0) && g.process.status == nil && !g.process.stderr.contains("lost the bus connection")
    }

    @Test("regression: a List reply larger than the bus allows is refused with LimitsExceeded, and the daemon stays on the bus")
    func listTooLargeForTheBusIsRefused() async throws {
        try await withGateway(config: Self.config, busConfig: Self.busConfig) { g in
            try await fill(g)
            let list = try await g.gdbus("List")
            #expect(list.status != .exited(0))
            #expect(list.stderrText.contains("org.freedesktop.DBus.Error.LimitsExceeded"), "\(list.stderrText)")
            #expect(list.stderrText.contains("ListPage"), "the error says what to use instead: \(list.stderrText)")
            #expect(try await onTheBus(g))
        }
    }

    @Test("tocsin list walks the pages and shows every notification once, soonest first")
    func tocsinListShowsAll() async throws {
        try await withGateway(config: Self.config, busConfig: Self.busConfig) { g in
            try await fill(g)
            let json = try await g.tocsin("list", "--json")
            try #require(json.status == .exited(0), "\(json.stderrText)")
            let items = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout)) as? [[String: Any]])
            let keys = items.compactMap { $0["key"] as? String }
            #expect(keys.count == Self.count)
            #expect(Set(keys) == Set((0..<Self.count).map { String(format: "n%04d", $0) }))
            let times = items.compactMap { $0["next_fire"] as? Int64 }
            #expect(times == times.sorted(), "soonest first")
            let table = try await g.tocsin("list")
            #expect(table.status == .exited(0))
            #expect(table.stdoutText.split(separator: "\n").count == Self.count + 1, "a header and one line per notification")
            #expect(try await onTheBus(g))
        }
    }

    @Test("a non-Tocsin client walks ListPage: pages under the bus limit, each key exactly once, then an empty cursor")
    func foreignClientWalksPages() async throws {
        try await withGateway(config: Self.config, busConfig: Self.busConfig) { g in
            try await fill(g)
            let out = try await g.python("""
                import dbus, json
                bus = dbus.bus.BusConnection(ADDRESS)
                gw = dbus.Interface(bus.get_object('io.github.tocsin.Gateway', '/io/github/tocsin/Gateway'), 'io.github.tocsin.Gateway1')
                keys, pages, cursor = [], [], ''
                while True:
                    items, cursor = gw.ListPage(cursor, dbus.UInt32(0))
                    pages.append(len(items))
                    keys += [str(i['key']) for i in items]
                    if cursor == '':
                        break
                small = gw.ListPage('', dbus.UInt32(7))
                print(json.dumps({'keys': keys, 'pages': pages, 'small': [len(small[0]), str(small[1])]}))
                """)
            try #require(out.status == .exited(0), "\(out.stderrText)")
            let r = try #require(try JSONSerialization.jsonObject(with: Data(out.stdout)) as? [String: Any])
            let keys = r["keys"] as? [String] ?? []
            let pages = r["pages"] as? [Int] ?? []
            #expect(keys == (0..<Self.count).map { String(format: "n%04d", $0) }, "key order, each once")
            #expect(pages.count >= 2, "1.7 MB cannot come in one 1 MiB page: \(pages)")
            #expect(r["small"] as? [AnyHashable] == [7, "n0006"], "a limit of 7 gives 7 and the key to continue after")
            // busctl, another client: the first page by hand.
            let first = try await g.busctl("call", GatewayFixture.dest, GatewayFixture.path, GatewayFixture.iface, "ListPage", "su", "n0397", "0")
            #expect(first.status == .exited(0), "\(first.stderrText)")
            #expect(first.stdoutText.hasPrefix("aa{sv}s 2 "), "the two after n0397: \(first.stdoutText.prefix(40))")
            #expect(first.stdoutText.hasSuffix("\"\"\n"), "and an empty cursor: the walk is over")
            #expect(try await onTheBus(g))
        }
    }
}
