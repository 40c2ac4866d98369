import Foundation
import Testing
import TocsinTesting

/// Calls whose replies or events grow with the schedule, from many clients at once, against the
/// real daemon: concurrent `List` (memory, and the rest of the daemon meanwhile) and `CancelAll`
/// of more notifications than a subscriber's buffer once held.
@Suite("Hostile: calls that grow with the schedule or the input (List storms, mass cancels, huge keys)")
struct HostileStormTests {
    static let pending = 9_000

    /// One dbus-python process: fills the schedule, then measures one `List`, then 20 at once
    /// with `Status` calls and a firing every second meanwhile. Prints one JSON object.
    static let storm = PipelinedSchedule.script(#"""
        total = int(sys.argv[2]); storm = int(sys.argv[3])
        schedule_all(total, lambda i: {'key': 'n%d' % i, 'title': 'n%d' % i, 'body': 'x' * 2048, 'after': '1h', 'backends': dbus.Array(['log'], signature='s')})
        pid = int(gw.Status()['pid'])
        def mem():
            f = dict(l.split(':', 1) for l in open('/proc/%d/status' % pid))
            return int(f['VmRSS'].split()[0]), int(f['VmHWM'].split()[0])
        open('/proc/%d/clear_refs' % pid, 'w').write('5')  # reset the peak to the current RSS
        base, _ = mem()
        n = len(gw.List(timeout=300))
        _, single_peak = mem()
        open('/proc/%d/clear_refs' % pid, 'w').write('5')
        lateness = []
        def fired(key, info):
            if key == 'tick': lateness.append((time.time() - int(info['due']) / 1e6, (int(info['fired']) - int(info['due'])) / 1e6))
        bus.add_signal_receiver(fired, 'Fired', 'io.github.tocsin.Gateway1')
        gw.Schedule(dbus.Dictionary({'key': 'tick', 'title': 't', 'every': '1s', 'backends': dbus.Array(['events'], signature='s')}, signature='sv'))
        # The storm comes from another process: this one's connection only measures, so a
        # Status reply or a Fired signal never queues behind 20 MB replies to the same client.
        # A fresh interpreter, not a fork of this one: a forked child inherits this process's
        # bus connection and GLib state, and may wait for ever on a lock a thread held at fork.
        import subprocess
        client = """
        import sys, dbus, dbus.mainloop.glib
        from gi.repository import GLib
        address, count, total = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
        dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)
        b = dbus.bus.BusConnection(address)
        g = dbus.Interface(b.get_object('io.github.tocsin.Gateway', '/io/github/tocsin/Gateway', introspect=False), 'io.github.tocsin.Gateway1')
        l = GLib.MainLoop(); st = {'open': count, 'bad': 0}
        def one(r=None, e=None):
            if r is None or len(r) != total + 1: st['bad'] += 1
            st['open'] -= 1
            if st['open'] == 0: l.quit()
        for _ in range(count):
            g.List(timeout=600, reply_handler=lambda r: one(r), error_handler=lambda e: one(None, e))
        l.run()
        sys.exit(1 if st['bad'] else 0)
        """
        proc = subprocess.Popen([sys.executable, '-c', client, sys.argv[1], str(storm), str(total)])
        st = {'errors': [], 'status': []}
        def status():
            if proc.poll() is not None: loop.quit(); return False
            t = time.time()
            gw.Status(reply_handler=lambda r: st['status'].append(time.time() - t), error_handler=lambda e: st['errors'].append(str(e)))
            return True
        GLib.timeout_add(100, status)
        loop.run()
        proc.wait()
        st['counts'] = [total + 1] * storm if proc.returncode == 0 else []
        _, storm_peak = mem()
        gw.Cancel('tick')
        # The trim runs on a thread of its own once the last reply is built: wait for it, up to
        # 10 s, for the heap to come within a quarter of one List's peak of where it started.
        first_after, _ = mem(); after = first_after; t0 = time.time()
        while after - base > (single_peak - base) // 4 and time.time() - t0 < 10:
            GLib.timeout_add(50, loop.quit); loop.run()
            after, _ = mem()
        after_wait = time.time() - t0
        print(json.dumps({'base': base, 'single_peak': single_peak, 'storm_peak': storm_peak, 'after': after, 'first_after': first_after, 'after_wait': round(after_wait, 3), 'listed': n,
                          'counts': len(st['counts']), 'status_max': max(st['status'] or [0]), 'status_errors': len(st['errors']), 'first_error': st['errors'][:1], 'claim_late_max': max([l[1] for l in lateness] or [0]),
                          'status_calls': len(st['status']), 'late_max': max([l[0] for l in lateness] or [0]), 'ticks': len(lateness)}))
        """#)

    @Test("20 concurrent List over 9,000 pending (20 MB each): the peak holds about two replies, not 20 (regression: 7.8 GB for 40 over 100,000); Status answers and a firing every second is claimed on time meanwhile (the reply is marshalled off the loop); the heap goes back after")
    func listStorm() async throws {
        try await withGateway { g in
            let out = try await TestProcess.run("/usr/bin/python3", ["-c", Self.storm, g.bus.address, "\(Self.pending)", "20"],
                                                timeout: .seconds(900))
            try #require(out.status == .exited(0), "\(out.stderrText)")
            let r = try #require(try JSONSerialization.jsonObject(with: Data(out.stdoutText.utf8)) as? [String: Any], "\(out.stdoutText)")
            print("measured: \(out.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines))")
            let base = r["base"] as? Int ?? 0, single = (r["single_peak"] as? Int ?? 0) - base
            let storm = (r["storm_peak"] as? Int ?? 0) - base, after = (r["after"] as? Int ?? 0) - base
            #expect(r["listed"] as? Int == Self.pending)
            #expect(r["counts"] as? Int == 20, "every List of the storm returns every notification")
            #expect(single > 0)
            #expect(storm <= 3 * single, "20 concurrent List took \(storm) KiB over the base; one took \(single) KiB")
            // Regression: the thread that marshalled the last reply held its 20 MB of values until
            // it exited, after the trim had run: 17-53 MB stayed over the base under CPU load.
            #expect(after <= single / 4, "after the storm RSS is \(after) KiB over the base; one List peaked at \(single) KiB")
            #expect(r["status_errors"] as? Int == 0, "Status failed during the storm: \(r["first_error"] ?? "-")")
            let statusMax = r["status_max"] as? Double ?? 99
            #expect(statusMax < TimingBudget.scaled(1.0), "a Status call waited \(statusMax) s during the storm")
            #expect((r["ticks"] as? Int ?? 0) >= 1, "no firing during the storm")
            // The daemon fires on time (its `fired` stamp); the signal then waits behind the reply
            // bytes already queued on the daemon's one bus connection (two replies at most, the
            // gate's), which the bus forwards at the speed of the client reading them.
            let claimed = r["claim_late_max"] as? Double ?? 99
            #expect(claimed < TimingBudget.scaled(0.05), "a firing due every second was claimed \(claimed) s late during the storm")
            let received = r["late_max"] as? Double ?? 99
            #expect(received < TimingBudget.scaled(1.0), "a firing due every second reached its subscriber \(received) s late during the storm")
        }
    }

    static let cancels = PipelinedSchedule.script(#"""
        total = int(sys.argv[2])
        schedule_all(total, lambda i: {'key': 'c%d' % i, 'title': 't', 'after': '1h'})
        got = {'cancelled': 0, 'all': [], 'reply': None}
        def cancelled(key): got['cancelled'] += 1
        def cancelled_all(count):
            got['all'].append(int(count)); loop.quit()
        bus.add_signal_receiver(cancelled, 'Cancelled', 'io.github.tocsin.Gateway1')
        bus.add_signal_receiver(cancelled_all, 'CancelledAll', 'io.github.tocsin.Gateway1')
        got['reply'] = int(gw.CancelAll(timeout=120))
        GLib.timeout_add_seconds(60, loop.quit)  # the deadline; CancelledAll ends the wait
        loop.run()
        print(json.dumps(got))
        """#)

    @Test("CancelAll of 20,000: one Cancelled per key for the first 1,000, then CancelledAll(20000) (regression: 10,001 Cancelled and the rest dropped silently)")
    func massCancel() async throws {
        let config = GatewayFixture.defaultConfig + "\n[daemon]\nmax_pending_per_client = 100000\n"
        try await withGateway(config: config) { g in
            let out = try await TestProcess.run("/usr/bin/python3", ["-c", Self.cancels, g.bus.address, "20000"], timeout: .seconds(600))
            try #require(out.status == .exited(0), "\(out.stderrText)")
            print("measured: \(out.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines))")
            let r = try #require(try JSONSerialization.jsonObject(with: Data(out.stdoutText.utf8)) as? [String: Any])
            #expect(r["reply"] as? Int == 20_000)
            #expect(r["all"] as? [Int] == [20_000], "\(r)")
            #expect(r["cancelled"] as? Int == 1_000, "\(r)")
            #expect(try await g.gdbus("List").stdoutText.contains("@aa{sv} []"))
        }
    }

    @Test("Acknowledge, Snooze and Cancel with a 10 MB key: NotFound (or false) with the key cut to 64 characters, not echoed whole (regression: a 100 MB key came back in a 100 MB error after 7 s)")
    func hugeKeysAreNotEchoed() async throws {
        try await withGateway { g in
            let out = try await g.python("""
                import dbus
                bus = dbus.bus.BusConnection(ADDRESS)
                gw = dbus.Interface(bus.get_object('io.github.tocsin.Gateway', '/io/github/tocsin/Gateway'), 'io.github.tocsin.Gateway1')
                key = 'k' * 10_000_000
                for name, call in (('Acknowledge', lambda: gw.Acknowledge(key)), ('Snooze', lambda: gw.Snooze(key, '5m'))):
                    try:
                        call(); print(name, 'accepted')
                    except dbus.DBusException as e:
                        print(name, e.get_dbus_name(), len(e.get_dbus_message()), e.get_dbus_message()[:40])
                print('Cancel', bool(gw.Cancel(key)))
                """)
            try #require(out.status == .exited(0), "\(out.stderrText)")
            let lines = out.stdoutText.split(separator: "\n").map(String.init)
            #expect(lines.count == 3, "\(out.stdoutText)")
            for line in lines.prefix(2) {
                let f = line.split(separator: " ")
                #expect(f.count >= 3 && f[1] == "io.github.tocsin.Error.NotFound", "\(line)")
                #expect((Int(f.count >= 3 ? f[2] : "") ?? .max) < 200, "the error echoes too much: \(line)")
            }
            #expect(lines.last == "Cancel False")
            #expect(try await g.isHealthy())
        }
    }
}
