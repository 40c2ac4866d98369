import Foundation
import Testing
import TocsinTesting

/// A client that sends calls without waiting for each reply (any asynchronous client) sees them
/// take effect in the order it sent them, from its first call on a new connection.
@Suite("Call order: one connection's pipelined calls take effect in the order sent")
struct CallOrderTests {
    @Test("a new connection's Schedule, then Cancel, 20 replacements, List, PostNow, History and Status, all sent before any reply (regression: the Schedule, waiting for the bus to say who the client is, took effect after the Cancel, which found nothing, and fired; List, History and Status answered before the requests sent ahead of them)")
    func pipelinedFromTheFirstCall() async throws {
        try await withGateway { g in
            let out = try await g.python("""
                import json, dbus, dbus.mainloop.glib
                from gi.repository import GLib
                dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)
                loop = GLib.MainLoop()
                results, waiting = {}, [0]
                def call(name, method, *args):
                    waiting[0] += 1
                    def answered(value):
                        results[name] = value
                        waiting[0] -= 1
                        if waiting[0] == 0:
                            loop.quit()
                    method(*args, reply_handler=lambda *r: answered(r[0] if r else None),
                           error_handler=lambda e: answered('error: ' + e.get_dbus_name()))
                for connection in ('first', 'second'):
                    # A new connection each time: the daemon does not know its owner yet.
                    bus = dbus.bus.BusConnection(ADDRESS)
                    gw = dbus.Interface(bus.get_object('io.github.tocsin.Gateway', '/io/github/tocsin/Gateway', introspect=False),
                                        'io.github.tocsin.Gateway1')
                    call(connection + ' schedule', gw.Schedule, dbus.Dictionary({'key': connection + '-gone', 'title': 'must not stay', 'after': '1h'}, signature='sv'))
                    call(connection + ' cancel', gw.Cancel, connection + '-gone')
                    for i in range(20):
                        call('%s replace %d' % (connection, i), gw.Schedule,
                             dbus.Dictionary({'key': connection + '-kept', 'title': 't%d' % i, 'after': '1h'}, signature='sv'))
                    call(connection + ' list', gw.List)
                    call(connection + ' post', gw.PostNow, dbus.Dictionary({'key': connection + '-posted', 'title': 'now'}, signature='sv'))
                    call(connection + ' history', gw.History, dbus.Dictionary({'key': connection + '-posted'}, signature='sv'))
                    call(connection + ' status', gw.Status)
                    GLib.timeout_add_seconds(30, loop.quit)
                    loop.run()
                    listed = sorted((str(n['key']), str(n['title'])) for n in results[connection + ' list'])
                    history = [str(e['event']) for e in results[connection + ' history']]
                    pending = int(results[connection + ' status']['pending'])
                    print(json.dumps({'connection': connection, 'cancel': bool(results[connection + ' cancel']), 'listed': listed,
                                      'history': history, 'pending': pending}))
                """)
            try #require(out.status == .exited(0), "\(out.stderrText)")
            let lines = out.stdoutText.split(separator: "\n").map(String.init)
            try #require(lines.count == 2, "\(out.stdoutText)")
            #expect(lines[0] == #"{"connection": "first", "cancel": true, "listed": [["first-kept", "t19"]], "history": ["fired"], "pending": 1}"#)
            #expect(lines[1] == #"{"connection": "second", "cancel": true, "listed": [["first-kept", "t19"], ["second-kept", "t19"]], "history": ["fired"], "pending": 2}"#)
        }
    }
}
