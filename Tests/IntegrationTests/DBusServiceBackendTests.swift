import Foundation
import DBus
import Testing
import TocsinConfig
import TocsinCore
import TocsinDBusServiceBackend
import TocsinGateway
import TocsinTesting
import TocsinTime

/// The `dbus-service` backend against the example service in `contrib/backends/` (python3 with
/// dbus-python, code we did not write the bus side of), with the whole daemon in-process on a
/// private bus and a virtual clock. The service prints one JSON line per call it receives.
@Suite("dbus-service backend")
struct DBusServiceBackendTests {
    static let t0 = Instant(seconds: 1_772_442_000)
    static let serviceName = "org.example.TocsinBridge"
    static let script = GatewayFixture.repositoryRoot + "/contrib/backends/tocsin-backend-example.py"
    static let config = """
        [daemon]
        missed = "skip"
        timezone = "UTC"

        [backend.bridge]
        type = "dbus-service"
        bus_name = "\(serviceName)"

        [backend.events]
        type = "dbus-signal"
        """

    static func startDaemon(bus: PrivateBus, state: String, clock: VirtualClock) async throws -> InProcessDaemon {
        try await startDaemon(state: state, clock: clock, connect: InProcessDaemon.bus(bus.address))
    }

    /// The daemon with `dbus-signal` and `dbus-service`, the latter on whatever connection the daemon has.
    static func startDaemon(state: String, clock: VirtualClock,
                            connect: @escaping @Sendable () async throws -> DBusConnection) async throws -> InProcessDaemon {
        try await InProcessDaemon.start(.init(config: config, state: state, clock: clock, connect: connect, backends: { link in
            InProcessDaemon.signalBackend(link) + [
                DBusServiceBackendFactory(bus: ServiceBus(current: { link.current }, connections: { link.connections() })),
            ]
        }))
    }

    /// The example service, journalling to its stdout; returns once it owns its name.
    static func service(_ bus: PrivateBus, _ options: String...) async throws -> TestProcess {
        let p = try TestProcess("/usr/bin/python3", ["-u", script, "--address", bus.address, "--bus-name", serviceName] + options)
        _ = try await p.waitForOutput(containing: "ready \(serviceName)", timeout: .seconds(20))
        return p
    }

    func gdbus(_ bus: PrivateBus, _ method: String, _ args: String...) async throws -> TestProcess.Output {
        try await TestProcess.run("gdbus", ["call", "--address", bus.address, "-d", "io.github.tocsin.Gateway",
                                            "-o", "/io/github/tocsin/Gateway", "-m", "io.github.tocsin.Gateway1.\(method)"] + args)
    }

    func schedule(_ bus: PrivateBus, key: String, at: Instant, backends: [String]) async throws {
        let list = backends.map { "'\($0)'" }.joined(separator: ", ")
        let out = try await gdbus(bus, "Schedule", "{'key': <'\(key)'>, 'title': <'Title \(key)'>, 'body': <'Body'>, 'at': <'@\(at.seconds)'>, 'backends': <[\(list)]>, 'user_info': <{'room': '4'}>, 'actions': <{'join': 'Join call'}>}")
        #expect(out.status == .exited(0), "\(out.stderrText)")
    }

    static func monitor(_ bus: PrivateBus, _ rules: String...) async throws -> TestProcess {
        let m = try TestProcess("dbus-monitor", ["--address", bus.address] + rules)
        _ = try await m.waitForOutput(containing: "NameAcquired", timeout: .seconds(20))
        return m
    }

    @Test("a firing reaches the service as Deliver(a{sv}) with its fields; Cancel sends Withdraw(key, 'cancelled')")
    func deliverAndWithdraw() async throws {
        try await PrivateBus.with { bus in
            let dir = TemporaryDirectory(prefix: "tocsin-dbsvc")
            let clock = VirtualClock(now: Self.t0)
            let service = try await Self.service(bus)
            let running = try await Self.startDaemon(bus: bus, state: dir.path + "/state", clock: clock)
            let due = Self.t0 + .seconds(30)
            try await schedule(bus, key: "standup", at: due, backends: ["bridge"])
            try await schedule(bus, key: "later", at: Self.t0 + .hours(1), backends: ["bridge"])
            clock.advance(by: .seconds(30))
            await running.daemon.center.tick()
            let out = try await service.waitForOutput(containing: "\"call\": \"Deliver\"", timeout: .seconds(20))
            for field in ["\"key\": \"standup\"", "\"title\": \"Title standup\"", "\"body\": \"Body\"", "\"backend\": \"bridge\"",
                          "\"due\": \(due.microseconds)", "\"occurrence\": 1", "\"late\": false", "\"urgency\": \"normal\"",
                          "\"user_info\": {\"room\": \"4\"}", "\"actions\": {\"join\": \"Join call\"}", "\"alarm\": false"] {
                #expect(out.contains(field), "Deliver lacks \(field): \(out)")
            }
            #expect(!out.contains("\"key\": \"later\""), "a notification not yet due was delivered")
            #expect(try await gdbus(bus, "Cancel", "later").stdoutText.contains("true"))
            let after = try await service.waitForOutput(containing: "\"call\": \"Withdraw\"", timeout: .seconds(20))
            #expect(after.contains("\"key\": \"later\", \"reason\": \"cancelled\""), "\(after)")
            await running.shutdown()
            _ = try? await service.kill()
        }
    }

    @Test("ActionInvoked from the service's owner becomes the gateway's ActionInvoked; the same signal from another connection is ignored")
    func actionsOnlyFromTheOwner() async throws {
        try await PrivateBus.with { bus in
            let dir = TemporaryDirectory(prefix: "tocsin-dbsvc")
            let clock = VirtualClock(now: Self.t0)
            let service = try await Self.service(bus, "--report", "action:join")
            let running = try await Self.startDaemon(bus: bus, state: dir.path + "/state", clock: clock)
            let monitor = try await Self.monitor(bus, "type='signal',interface='io.github.tocsin.Gateway1',member='ActionInvoked'")
            try await schedule(bus, key: "standup", at: Self.t0 + .seconds(30), backends: ["bridge"])

            // An impostor sends the service's signal to the daemon first: addressed to it, so the
            // bus delivers it whatever the match rules say. It has been routed once the impostor's
            // round trip to the bus returns.
            let spoof = try await TestProcess.run("/usr/bin/python3", ["-c", """
                import dbus
                bus = dbus.bus.BusConnection('\(bus.address)')
                msg = dbus.lowlevel.SignalMessage('/io/github/tocsin/Backend', 'io.github.tocsin.Backend1', 'ActionInvoked')
                msg.set_destination('io.github.tocsin.Gateway')
                msg.append('standup', 'spoofed', signature='ss')
                bus.send_message(msg)
                bus.get_object('org.freedesktop.DBus', '/org/freedesktop/DBus').GetId(dbus_interface='org.freedesktop.DBus')
                print('sent', flush=True)
                """])
            #expect(spoof.stdoutText.contains("sent"), "\(spoof.stderrText)")

            clock.advance(by: .seconds(30))
            await running.daemon.center.tick()
            let seen = try await monitor.waitForOutput(containing: "string \"join\"", timeout: .seconds(20))
            #expect(seen.contains("string \"standup\""), "\(seen)")
            #expect(!seen.contains("spoofed"), "a signal from a connection that does not own \(Self.serviceName) was routed: \(seen)")
            await running.shutdown()
            _ = try? await monitor.kill()
            _ = try? await service.kill()
        }
    }

    @Test("Acknowledge from the service's owner stops a snoozed notification (the gateway emits Acknowledged)")
    func acknowledgeFromTheService() async throws {
        try await PrivateBus.with { bus in
            let dir = TemporaryDirectory(prefix: "tocsin-dbsvc")
            let clock = VirtualClock(now: Self.t0)
            // A service that acknowledges whatever is snoozed, as a person answering in a chat would.
            let service = try TestProcess("/usr/bin/python3", ["-u", "-c", """
                import dbus, dbus.service, dbus.mainloop.glib
                from gi.repository import GLib
                dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)
                bus = dbus.bus.BusConnection('\(bus.address)')
                name = dbus.service.BusName('\(Self.serviceName)', bus, do_not_queue=True)
                def snoozed(key, until):
                    msg = dbus.lowlevel.SignalMessage('/io/github/tocsin/Backend', 'io.github.tocsin.Backend1', 'Acknowledge')
                    msg.append(key, signature='s')
                    bus.send_message(msg)
                    print('acknowledged', key, flush=True)
                bus.add_signal_receiver(snoozed, 'Snoozed', 'io.github.tocsin.Gateway1')
                bus.get_object('org.freedesktop.DBus', '/org/freedesktop/DBus').GetId(dbus_interface='org.freedesktop.DBus')
                print('ready', flush=True)
                GLib.MainLoop().run()
                """])
            _ = try await service.waitForOutput(containing: "ready", timeout: .seconds(20))
            let running = try await Self.startDaemon(bus: bus, state: dir.path + "/state", clock: clock)
            let monitor = try await Self.monitor(bus, "type='signal',interface='io.github.tocsin.Gateway1',member='Acknowledged'")
            // Repeating, so it is still there to snooze after its firing.
            let scheduled = try await gdbus(bus, "Schedule", "{'key': <'nap'>, 'title': <'Nap'>, 'every': <'1h'>, 'backends': <['events']>}")
            #expect(scheduled.status == .exited(0), "\(scheduled.stderrText)")
            clock.advance(by: .hours(1))
            await running.daemon.center.tick()
            let snoozed = try await gdbus(bus, "Snooze", "nap", "10min")
            #expect(snoozed.status == .exited(0), "\(snoozed.stderrText)")
            _ = try await service.waitForOutput(containing: "acknowledged nap", timeout: .seconds(20))
            let seen = try await monitor.waitForOutput(containing: "string \"nap\"", timeout: .seconds(20))
            #expect(seen.contains("Acknowledged"), "\(seen)")
            let list = try await gdbus(bus, "List").stdoutText
            #expect(list.contains("'state': <'scheduled'>"), "acknowledged, it waits for its next firing: \(list)")
            await running.shutdown()
            _ = try? await monitor.kill()
            _ = try? await service.kill()
        }
    }

    /// The service started with `--behave BEHAVE`, the daemon on a virtual clock, a monitor of
    /// `Fired`, and two firings due together 30 s in: `key` to the service, `other` to `events`.
    struct DueTogether {
        let dir: TemporaryDirectory
        let clock: VirtualClock
        let service: TestProcess
        let running: InProcessDaemon
        let monitor: TestProcess
        let due: Instant
    }

    func dueTogether(_ bus: PrivateBus, behave: String, key: String) async throws -> DueTogether {
        let dir = TemporaryDirectory(prefix: "tocsin-dbsvc")
        let clock = VirtualClock(now: Self.t0)
        let service = try await Self.service(bus, "--behave", behave)
        let running = try await Self.startDaemon(bus: bus, state: dir.path + "/state", clock: clock)
        let monitor = try await Self.monitor(bus, "type='signal',interface='io.github.tocsin.Gateway1',member='Fired'")
        let due = Self.t0 + .seconds(30)
        try await schedule(bus, key: key, at: due, backends: ["bridge"])
        try await schedule(bus, key: "other", at: due, backends: ["events"])
        return DueTogether(dir: dir, clock: clock, service: service, running: running, monitor: monitor, due: due)
    }

    @Test("a hung service costs its firing the timeout and a retry; other firings due with it go out at once")
    func hungServiceNeverStalls() async throws {
        try await PrivateBus.with { bus in
            let f = try await dueTogether(bus, behave: "hang", key: "hung")
            let (clock, service, running, monitor, due) = (f.clock, f.service, f.running, f.monitor, f.due)
            try await schedule(bus, key: "next", at: due + .seconds(5), backends: ["events"])
            clock.advance(by: .seconds(30))
            await running.daemon.center.tick()
            _ = try await service.waitForOutput(containing: "\"key\": \"hung\"", timeout: .seconds(20))
            _ = try await monitor.waitForOutput(containing: "string \"other\"", timeout: .seconds(20))
            // The scheduler moves on while Deliver hangs: the next firing is on time.
            clock.advance(by: .seconds(5))
            await running.daemon.center.tick()
            _ = try await monitor.waitForOutput(containing: "string \"next\"", timeout: .seconds(20))
            #expect(service.stdout.components(separatedBy: "\"call\": \"Deliver\"").count == 2, "one attempt before the timeout")

            // The delivery timeout (10 s from the attempt) abandons the call, the retry comes 1 s later.
            clock.advance(to: due + DeliveryPolicy().timeout)
            await clock.waitForSleepers()
            clock.advance(by: DeliveryPolicy().retryDelays[0])
            try await service.output.wait("the retry's Deliver", timeout: .seconds(20)) {
                $0.stdoutText.components(separatedBy: "\"key\": \"hung\"").count == 3
            }
            await running.shutdown()
            _ = try? await monitor.kill()
            _ = try? await service.kill()
        }
    }

    @Test("a service that crashes in Deliver costs only that firing: others due with it go out, and Status names the missing service")
    func crashedService() async throws {
        try await PrivateBus.with { bus in
            let f = try await dueTogether(bus, behave: "crash", key: "crash")
            let (clock, service, running, monitor) = (f.clock, f.service, f.running, f.monitor)
            clock.advance(by: .seconds(30))
            await running.daemon.center.tick()
            #expect(try await service.waitForExit(timeout: .seconds(20)) == .exited(3))
            #expect(service.stdout.contains("\"key\": \"crash\""), "the service never saw the firing: \(service.stdout)")
            _ = try await monitor.waitForOutput(containing: "string \"other\"", timeout: .seconds(20))
            let status = try await gdbus(bus, "Status").stdoutText
            #expect(status.contains("'bridge': '\(Self.serviceName) is not on the bus'"), "\(status)")
            #expect(status.contains("'events': 'ok'"), "\(status)")
            await running.shutdown()
            _ = try? await monitor.kill()
        }
    }

    @Test("after the bus restarts, the daemon listens for the service's signals on the new connection")
    func listensAgainAfterReconnect() async throws {
        let listen = try PrivateBus.temporarySocketAddress()
        let bus = try await PrivateBus.start(listenAddress: listen)
        let dir = TemporaryDirectory(prefix: "tocsin-dbsvc")
        let clock = VirtualClock(now: Self.t0)
        // The test decides when the daemon may connect again, so it can watch the new bus first.
        let mayConnect = WaitableState(true)
        let running = try await Self.startDaemon(state: dir.path + "/state", clock: clock) {
            try await mayConnect.wait("the test letting the daemon connect", timeout: .seconds(60)) { $0 }
            return try await DBusConnection.connect(address: listen)
        }
        mayConnect.update { $0 = false }
        try await bus.crash()

        let again = try await PrivateBus.start(listenAddress: listen)
        do {
            try await afterRestart(again, running: running, clock: clock, mayConnect: mayConnect)
        } catch {
            await running.shutdown()
            await again.stop()
            throw error
        }
        await again.stop()
    }

    private func afterRestart(_ again: PrivateBus, running: InProcessDaemon, clock: VirtualClock,
                              mayConnect: WaitableState<Bool>) async throws {
        let monitor = try await Self.monitor(again, "type='method_call',member='AddMatch'",
                                             "type='signal',interface='io.github.tocsin.Gateway1',member='ActionInvoked'")
        mayConnect.update { $0 = true }
        _ = try await monitor.waitForOutput(containing: "interface='io.github.tocsin.Backend1'", timeout: .seconds(30))
        let service = try await Self.service(again, "--report", "action:join")
        try await schedule(again, key: "after-restart", at: Self.t0 + .seconds(30), backends: ["bridge"])
        clock.advance(by: .seconds(30))
        await running.daemon.center.tick()
        let seen = try await monitor.waitForOutput(containing: "string \"join\"", timeout: .seconds(20))
        #expect(seen.contains("string \"after-restart\""), "\(seen)")
        await running.shutdown()
        _ = try? await monitor.kill()
        _ = try? await service.kill()
    }

    @Test("after a reload rebuilds the backend, each action from the service is routed once, not once per instance built")
    func reloadKeepsOneListener() async throws {
        try await PrivateBus.with { bus in
            let dir = TemporaryDirectory(prefix: "tocsin-dbsvc")
            let clock = VirtualClock(now: Self.t0)
            let service = try await Self.service(bus, "--report", "action:join")
            let running = try await Self.startDaemon(bus: bus, state: dir.path + "/state", clock: clock)
            let monitor = try await Self.monitor(bus, "type='signal',interface='io.github.tocsin.Gateway1',member='ActionInvoked'")
            for _ in 0..<2 {
                let problem = await running.daemon.reload()
                #expect(problem == nil, "\(problem?.message ?? "")")
            }
            try await schedule(bus, key: "first", at: Self.t0 + .seconds(30), backends: ["bridge"])
            try await schedule(bus, key: "second", at: Self.t0 + .seconds(60), backends: ["bridge"])
            clock.advance(by: .seconds(30))
            await running.daemon.center.tick()
            _ = try await monitor.waitForOutput(containing: "string \"first\"", timeout: .seconds(20))
            // A later action marks the point by which a duplicate of the first would have come.
            clock.advance(by: .seconds(30))
            await running.daemon.center.tick()
            let seen = try await monitor.waitForOutput(containing: "string \"second\"", timeout: .seconds(20))
            #expect(seen.components(separatedBy: "string \"first\"").count == 2, "the first action was routed more than once: \(seen)")
            #expect(seen.components(separatedBy: "string \"second\"").count == 2, "\(seen)")
            await running.shutdown()
            _ = try? await monitor.kill()
            _ = try? await service.kill()
        }
    }

    @Test("the example service serves exactly contrib/io.github.tocsin.Backend1.xml, whose members are the ones the backend uses")
    func exampleMatchesTheInterface() async throws {
        try await PrivateBus.with { bus in
            let service = try await Self.service(bus)
            let served = try await TestProcess.run("gdbus", ["introspect", "--address", bus.address, "--dest", Self.serviceName,
                                                             "--object-path", Backend1.objectPath.rawValue, "--xml"])
            #expect(served.status == .exited(0), "\(served.stderrText)")
            let dir = TemporaryDirectory(prefix: "tocsin-dbsvc")
            let servedFile = try dir.write("served.xml", served.stdoutText)
            // Members in order, each with its arguments' direction and type: what a client depends on.
            let shape = try await TestProcess.run("/usr/bin/python3", ["-c", """
                import sys, xml.etree.ElementTree as ET
                def shape(path):
                    iface = [i for i in ET.parse(path).getroot() if i.get('name') == 'io.github.tocsin.Backend1'][0]
                    return sorted((m.tag, m.get('name'), tuple((a.get('direction') or ('out' if m.tag == 'signal' else 'in'), a.get('type'))
                                                           for a in m if a.tag == 'arg')) for m in iface)
                print(shape(sys.argv[1]))
                print(shape(sys.argv[2]))
                """, servedFile, GatewayFixture.repositoryRoot + "/contrib/io.github.tocsin.Backend1.xml"])
            let lines = shape.stdoutText.split(separator: "\n")
            #expect(lines.count == 2 && lines[0] == lines[1], "served vs committed:\n\(shape.stdoutText)\(shape.stderrText)")
            let committed = String(lines.last ?? "")
            for member in [Backend1.deliver, Backend1.withdraw, Backend1.actionInvoked, Backend1.acknowledge] {
                #expect(committed.contains("'\(member)'"), "\(member) is not in the committed interface")
            }
            #expect(committed.contains("('method', 'Deliver', (('in', 'a{sv}'),))"), "\(committed)")
            #expect(committed.contains("('method', 'Withdraw', (('in', 's'), ('in', 's')))"), "\(committed)")
            _ = try? await service.kill()
        }
    }
}
