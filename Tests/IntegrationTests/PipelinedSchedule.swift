/// Python (dbus-python) that the load-shaped tests share: a connection to the gateway on the bus
/// given as `sys.argv[1]`, and `schedule_all(count, spec)`, which sends `count` Schedule calls
/// with at most 128 in flight and returns when all are answered (exiting on the first refusal).
/// `spec(i)` gives the i-th call's fields. Prefixed to each test's own script.
enum PipelinedSchedule {
    static let prelude = #"""
        import sys, json, time, dbus, dbus.mainloop.glib
        from gi.repository import GLib
        dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)
        bus = dbus.bus.BusConnection(sys.argv[1])
        gw = dbus.Interface(bus.get_object('io.github.tocsin.Gateway', '/io/github/tocsin/Gateway', introspect=False), 'io.github.tocsin.Gateway1')
        loop = GLib.MainLoop()
        def schedule_all(count, spec):
            st = {'next': 0, 'open': 0}
            def done(*a):
                st['open'] -= 1; more()
            def fail(e):
                sys.exit('schedule failed: %s' % e)
            def more():
                while st['open'] < 128 and st['next'] < count:
                    i = st['next']; st['next'] += 1; st['open'] += 1
                    gw.Schedule(dbus.Dictionary(spec(i), signature='sv'), signature='a{sv}', timeout=120, reply_handler=done, error_handler=fail)
                if st['open'] == 0 and st['next'] >= count: loop.quit()
            GLib.idle_add(lambda: (more(), False)[1])
            loop.run()

        """#

    /// `script` after the prelude.
    static func script(_ script: String) -> String { prelude + script }
}
