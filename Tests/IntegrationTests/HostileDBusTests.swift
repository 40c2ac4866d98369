import Foundation
import Testing
import TocsinTesting

/// Issue 17's sweep of the D-Bus surface, as a hostile client would try it (dbus-python, which we
/// did not write): each row is one call and the error it must get; after all rows the daemon must
/// still answer. Then clients that leave before their replies, and many clients coming and going.
@Suite("D-Bus as an input surface")
struct HostileDBusTests {
    struct Row: Sendable, CustomTestStringConvertible {
        var name: String
        /// A Python expression: `call(member, signature, arguments)` sends exactly that.
        var call: String
        /// The D-Bus error name the call must get; nil: it succeeds.
        var error: String?
        /// Words the error message must contain.
        var mentions: [String] = []
        var testDescription: String { name }
    }

    static let invalidArgs = "org.freedesktop.DBus.Error.InvalidArgs"

    static let rows: [Row] = [
        Row(name: "Schedule with a string instead of a{sv}", call: "call('Schedule', 's', ['title'])", error: invalidArgs, mentions: ["a{sv}"]),
        Row(name: "Schedule with two arguments", call: "call('Schedule', 'a{sv}s', [{'title': 'x'}, 'extra'])", error: invalidArgs),
        Row(name: "Cancel with an int32", call: "call('Cancel', 'i', [5])", error: invalidArgs, mentions: ["'s'"]),
        Row(name: "CancelAll with an argument", call: "call('CancelAll', 's', ['x'])", error: invalidArgs),
        Row(name: "List with an argument", call: "call('List', 's', ['x'])", error: invalidArgs),
        Row(name: "ListPage with swapped arguments", call: "call('ListPage', 'us', [0, ''])", error: invalidArgs, mentions: ["'su'"]),
        Row(name: "PostNow with a{ss}", call: "call('PostNow', 'a{ss}', [{'title': 'x'}])", error: invalidArgs),
        Row(name: "Acknowledge with a byte array", call: "call('Acknowledge', 'ay', [b'k'])", error: invalidArgs),
        Row(name: "Snooze with one argument", call: "call('Snooze', 's', ['k'])", error: invalidArgs),
        Row(name: "Reload with an argument", call: "call('Reload', 'b', [True])", error: invalidArgs),
        Row(name: "an unknown method", call: "call('Explode', '', [])", error: "org.freedesktop.DBus.Error.UnknownMethod"),
        Row(name: "a read-only property set", call: "call('Set', 'ssv', ['io.github.tocsin.Gateway1', 'Pending', dbus.UInt32(0)], iface='org.freedesktop.DBus.Properties')",
            error: "org.freedesktop.DBus.Error.PropertyReadOnly"),
        Row(name: "an unknown property set", call: "call('Set', 'ssv', ['io.github.tocsin.Gateway1', 'Volume', dbus.UInt32(0)], iface='org.freedesktop.DBus.Properties')",
            error: "org.freedesktop.DBus.Error.UnknownProperty", mentions: ["Volume"]),
        Row(name: "a property set on an unknown interface", call: "call('Set', 'ssv', ['io.github.tocsin.Nothing', 'Pending', dbus.UInt32(0)], iface='org.freedesktop.DBus.Properties')",
            error: "org.freedesktop.DBus.Error.UnknownInterface", mentions: ["io.github.tocsin.Nothing"]),
        Row(name: "an empty title", call: "call('Schedule', 'a{sv}', [dbus.Dictionary({'title': '', 'after': '1h'}, signature='sv')])",
            error: invalidArgs, mentions: ["'title' must not be empty"]),
        Row(name: "an empty action id", call: "call('Schedule', 'a{sv}', [dbus.Dictionary({'title': 'x', 'after': '1h', 'actions': dbus.Dictionary({'': 'L'}, signature='sv')}, signature='sv')])",
            error: invalidArgs, mentions: ["action id in 'actions' must not be empty"]),
        Row(name: "an empty user_info key", call: "call('Schedule', 'a{sv}', [dbus.Dictionary({'title': 'x', 'after': '1h', 'user_info': dbus.Dictionary({'': 'v'}, signature='sv')}, signature='sv')])",
            error: invalidArgs, mentions: ["key in 'user_info' must not be empty"]),
        Row(name: "invalid UTF-8 in a byte array as the title",
            call: "call('Schedule', 'a{sv}', [dbus.Dictionary({'title': dbus.ByteArray(b'\\\\xff\\\\xfe'), 'after': '1h'}, signature='sv')])",
            error: invalidArgs, mentions: ["'title'"]),
        Row(name: "invalid UTF-8 in a byte array as a user_info value",
            call: "call('Schedule', 'a{sv}', [dbus.Dictionary({'title': 'x', 'after': '1h', 'user_info': dbus.Dictionary({'k': dbus.ByteArray(b'\\\\xc3')}, signature='sv')}, signature='sv')])",
            error: invalidArgs, mentions: ["user_info"]),
        Row(name: "arrays nested 30 deep as user_info",
            call: "call('Schedule', 'a{sv}', [dbus.Dictionary({'title': 'x', 'after': '1h', 'user_info': functools.reduce(lambda a, _: dbus.Array([a], signature=None), range(30), dbus.Array(['x'], signature='s'))}, signature='sv')])",
            error: invalidArgs, mentions: ["user_info"]),
        Row(name: "variants nested 60 deep as the title",
            call: "call('Schedule', 'a{sv}', [dbus.Dictionary({'title': functools.reduce(lambda a, _: dbus.Struct([a], signature='v'), range(28), 'x'), 'after': '1h'}, signature='sv')])",
            error: invalidArgs, mentions: ["title"]),
        Row(name: "user_info with 100,000 entries",
            call: "call('Schedule', 'a{sv}', [dbus.Dictionary({'title': 'x', 'after': '1h', 'user_info': dbus.Dictionary({'k%d' % i: 'v' for i in range(100000)}, signature='sv')}, signature='sv')])",
            error: invalidArgs, mentions: ["'user_info' has 100000 entries"]),
        Row(name: "actions with 100,000 entries",
            call: "call('Schedule', 'a{sv}', [dbus.Dictionary({'title': 'x', 'after': '1h', 'actions': dbus.Dictionary({'a%d' % i: 'L' for i in range(100000)}, signature='sv')}, signature='sv')])",
            error: invalidArgs, mentions: ["'actions' has 100000 entries"]),
        Row(name: "remind_before with 100,000 offsets",
            call: "call('Schedule', 'a{sv}', [dbus.Dictionary({'title': 'x', 'at': '2099-01-01T00:00:00Z', 'remind_before': dbus.Array(['%ds' % i for i in range(100000)], signature='s')}, signature='sv')])",
            error: invalidArgs, mentions: ["'remind_before' has 100000 offsets"]),
        Row(name: "backends with 100,000 names",
            call: "call('Schedule', 'a{sv}', [dbus.Dictionary({'title': 'x', 'after': '1h', 'backends': dbus.Array(['b%d' % i for i in range(100000)], signature='s')}, signature='sv')])",
            error: invalidArgs, mentions: ["'backends' has 100000 entries"]),
        Row(name: "regression: backends naming 'log' 100,000 times (each firing was delivered that often)",
            call: "call('Schedule', 'a{sv}', [dbus.Dictionary({'title': 'x', 'after': '1h', 'backends': dbus.Array(['log'] * 100000, signature='s')}, signature='sv')])",
            error: invalidArgs, mentions: ["'backends' has 100000 entries; the limit is 64"]),
        Row(name: "regression: backends naming 'log' twice",
            call: "call('Schedule', 'a{sv}', [dbus.Dictionary({'title': 'x', 'after': '1h', 'backends': dbus.Array(['log', 'events', 'log'], signature='s')}, signature='sv')])",
            error: invalidArgs, mentions: ["'backends' names 'log' twice"]),
        Row(name: "regression: a 10 MB icon (stored and sent to popups on every firing)",
            call: "call('Schedule', 'a{sv}', [dbus.Dictionary({'title': 'x', 'after': '1h', 'icon': 'i' * 10000000}, signature='sv')])",
            error: invalidArgs, mentions: ["'icon' is 10000000 bytes; the limit is 4096"]),
        Row(name: "regression: a 1 MB category",
            call: "call('Schedule', 'a{sv}', [dbus.Dictionary({'title': 'x', 'after': '1h', 'category': 'c' * 1000000}, signature='sv')])",
            error: invalidArgs, mentions: ["'category' is 1000000 bytes"]),
        Row(name: "regression: a 1 MB sound name",
            call: "call('Schedule', 'a{sv}', [dbus.Dictionary({'title': 'x', 'after': '1h', 'sound': 's' * 1000000}, signature='sv')])",
            error: invalidArgs, mentions: ["'sound' is 1000000 bytes"]),
        Row(name: "regression: an action label of 1 MB",
            call: "call('Schedule', 'a{sv}', [dbus.Dictionary({'title': 'x', 'after': '1h', 'actions': dbus.Dictionary({'open': 'L' * 1000000}, signature='sv')}, signature='sv')])",
            error: invalidArgs, mentions: ["action 'open' has an id of 4 and a label of 1000000 bytes"]),
        Row(name: "every limit at its value is accepted",
            call: "call('Schedule', 'a{sv}', [dbus.Dictionary({'key': 'k' * 255, 'title': 't' * 4096, 'body': 'b' * 65536, 'after': '1h', 'icon': 'i' * 4096, 'category': 'c' * 4096, 'sound': 's' * 4096, 'backends': dbus.Array(['log', 'events'], signature='s'), 'actions': dbus.Dictionary({'a%02d' % i: 'L' * 4096 for i in range(16)}, signature='sv'), 'user_info': dbus.Dictionary({'u%02d' % i: 'v' * 1000 for i in range(64)}, signature='sv')}, signature='sv')])",
            error: nil),
        Row(name: "a 1 MB key to Cancel", call: "call('Cancel', 's', ['k' * 1000000])", error: nil),
        Row(name: "a 1 MB cursor to ListPage", call: "call('ListPage', 'su', ['k' * 1000000, 0])", error: nil),
        Row(name: "ListPage asking for 4 billion", call: "call('ListPage', 'su', ['', 4294967295])", error: nil),
    ]

    @Test("every method: wrong signatures, deep nesting, huge containers, invalid UTF-8; the daemon still answers")
    func rowsOfBadCalls() async throws {
        try await withGateway { g in
            let table = Self.rows.enumerated().map { "(\($0.offset), lambda: \($0.element.call))" }.joined(separator: ",\n")
            let out = try await g.python("""
                import dbus, functools, json
                bus = dbus.bus.BusConnection(ADDRESS)
                obj = bus.get_object('io.github.tocsin.Gateway', '/io/github/tocsin/Gateway')
                gw = dbus.Interface(obj, 'io.github.tocsin.Gateway1')
                def call(member, signature, args, iface='io.github.tocsin.Gateway1'):
                    # Sent exactly as given: no introspection, no coercion by the binding.
                    return bus.call_blocking('io.github.tocsin.Gateway', '/io/github/tocsin/Gateway', iface, member, signature, args, timeout=60)
                for i, f in [\(table)]:
                    try:
                        f()
                        print(json.dumps([i, None, '']))
                    except dbus.DBusException as e:
                        print(json.dumps([i, e.get_dbus_name(), (e.get_dbus_message() or '')[:2000]]))
                    except Exception as e:
                        print(json.dumps([i, 'python:' + type(e).__name__, str(e)[:2000]]))
                """)
            try #require(out.status == .exited(0), "\(out.stderrText)")
            var results: [Int: (String?, String)] = [:]
            for line in out.stdoutText.split(separator: "\n") {
                guard let a = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [Any], let i = a[0] as? Int else { continue }
                results[i] = (a[1] as? String, a[2] as? String ?? "")
            }
            for (i, row) in Self.rows.enumerated() {
                guard let (name, message) = results[i] else { Issue.record("row '\(row.name)': no result"); continue }
                #expect(name == row.error, "row '\(row.name)': got \(name ?? "success") \(message.prefix(300))")
                for m in row.mentions { #expect(message.contains(m), "row '\(row.name)': should mention \(m): \(message.prefix(300))") }
            }
            #expect(try await g.isHealthy())
        }
    }

    @Test("clients that leave before their replies, and 300 clients coming and going: the daemon answers, forgets them, stays small")
    func clientsThatLeave() async throws {
        try await withGateway { g in
            let out = try await g.python("""
                import dbus, dbus.mainloop.glib
                # 20 clients each pipeline 50 Schedule calls and disconnect without reading a reply.
                for c in range(20):
                    bus = dbus.bus.BusConnection(ADDRESS)
                    gw = dbus.Interface(bus.get_object('io.github.tocsin.Gateway', '/io/github/tocsin/Gateway'), 'io.github.tocsin.Gateway1')
                    for i in range(50):
                        gw.Schedule(dbus.Dictionary({'key': 'gone-%d-%d' % (c, i), 'title': 'x', 'after': '1h'}, signature='sv'),
                                    reply_handler=lambda *a: None, error_handler=lambda *a: None)
                    bus.close()
                # 300 clients in turn: connect, schedule one, leave.
                for c in range(300):
                    bus = dbus.bus.BusConnection(ADDRESS)
                    gw = dbus.Interface(bus.get_object('io.github.tocsin.Gateway', '/io/github/tocsin/Gateway'), 'io.github.tocsin.Gateway1')
                    gw.Schedule(dbus.Dictionary({'key': 'visit-%d' % c, 'title': 'x', 'after': '1h'}, signature='sv'))
                    bus.close()
                """)
            try #require(out.status == .exited(0), "\(out.stderrText)")
            #expect(try await g.isHealthy())
            let pending = try await g.busctl("get-property", GatewayFixture.dest, GatewayFixture.path, GatewayFixture.iface, "Pending")
            let n = Int(pending.stdoutText.split(separator: " ").last?.trimmingCharacters(in: .whitespacesAndNewlines) ?? "") ?? -1
            // The 300 visits are all there; of the abandoned calls, those that reached the daemon.
            #expect(n >= 300 && n <= 1300, "pending: \(pending.stdoutText)")
            #expect(!g.process.stderr.contains("lost the bus connection"))
        }
    }
}
