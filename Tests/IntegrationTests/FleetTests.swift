import Foundation
import Testing
import TocsinTesting

/// One machine of a fleet: its own private bus, a `tocsin daemon` with an alarm and the mqtt
/// backend named by `[fleet]`, and `tocsin watch --json` on its bus.
final class FleetMachine: Sendable {
    let name: String
    let bus: PrivateBus
    let daemon: DaemonUnderTest
    let process: TestProcess
    let watch: TestProcess

    private init(name: String, bus: PrivateBus, daemon: DaemonUnderTest, process: TestProcess, watch: TestProcess) {
        self.name = name; self.bus = bus; self.daemon = daemon; self.process = process; self.watch = watch
    }

    /// `at`: the alarm's due time, the same on every machine (one config, as a household would share it).
    /// `login`: extra `[backend.fleet]` lines (username, password_file).
    static func start(name: String, broker: MosquittoBroker, sound: String, at: String, login: String = "") async throws -> FleetMachine {
        let bus = try await PrivateBus.start()
        do {
            let config = """
                [backend.alarm]
                type = "sound"
                file = "\(sound)"
                every = "1s"
                max_rings = 100
                player = ["sh", "-c", "sleep 0.2", "{file}"]

                [backend.events]
                type = "dbus-signal"

                [backend.log]
                type = "log"
                format = "json"

                [backend.fleet]
                type = "mqtt"
                url = "\(broker.url)"
                client_id = "\(name)"
                reconnect_max = "1s"
                \(login)

                [fleet]
                backend = "fleet"

                [[notification]]
                key = "wake"
                title = "Wake up"
                at = \(at)
                backends = ["alarm", "events", "fleet"]
                """
            let daemon = try DaemonUnderTest(config: config, environment: bus.environment)
            let watch = try TestProcess(Products.executable("tocsin"), ["watch", "--json", "--bus", bus.address])
            let p = try daemon.start(["--bus", bus.address])
            try await p.waitForStderr(containing: "mqtt fleet: connected to 127.0.0.1:\(broker.port)", timeout: .seconds(30))
            return FleetMachine(name: name, bus: bus, daemon: daemon, process: p, watch: watch)
        } catch {
            await bus.stop()
            throw error
        }
    }

    func tocsin(_ args: String...) async throws -> TestProcess.Output {
        let out = try await TestProcess.run(Products.executable("tocsin"), args + ["--bus", bus.address])
        guard out.status == .exited(0) else { throw TestProcessError("tocsin \(args.joined(separator: " ")) on \(name): \(out.stderrText)") }
        return out
    }

    /// Waits for a `tocsin watch --json` line of `event` about `key`.
    func waitForEvent(_ event: String, key: String = "wake", timeout: Duration) async throws {
        try await watch.waitForOutput(containing: "{\"event\":\"\(event)\",\"key\":\"\(key)\"", timeout: timeout)
    }

    /// Waits until `tocsin watch` printed `count` lines of `event` about `key`.
    func waitForEvent(_ event: String, key: String = "wake", count: Int, timeout: Duration) async throws {
        let needle = "{\"event\":\"\(event)\",\"key\":\"\(key)\""
        _ = try await watch.output.wait("\(count) × \(needle) on \(name)", timeout: timeout) {
            $0.stdoutText.components(separatedBy: needle).count - 1 >= count
        }
    }

    func hasEvent(_ event: String, key: String = "wake") -> Bool {
        watch.stdout.contains("{\"event\":\"\(event)\",\"key\":\"\(key)\"")
    }

    func stop() async {
        process.signal(SIGTERM)
        _ = try? await process.waitForExit(timeout: .seconds(10))
        _ = try? await watch.kill()
        await bus.stop()
    }
}

/// Two daemons on two private buses sharing a real mosquitto on 127.0.0.1.
@Suite("Fleet over MQTT", .serialized)
struct FleetTests {
    private func withFleet(user: (name: String, password: String)? = nil, tls: Bool = false,
                           _ body: (MosquittoBroker, FleetMachine, FleetMachine) async throws -> Void) async throws {
        try await FleetMachine.withPair(user: user, tls: tls, alarmIn: 5, body)
    }

    @Test("an alarm rings on both machines; `tocsin ack` on one stops both within a second")
    func ackStopsBoth() async throws {
        try await withFleet { broker, a, b in
            try await a.waitForEvent("Fired", timeout: .seconds(20))
            try await b.waitForEvent("Fired", timeout: .seconds(20))
            for m in [a, b] {
                let list = try await m.tocsin("list", "--json")
                #expect(list.stdoutText.contains("\"wake\""), "\(m.name) is not ringing: \(list.stdoutText)")
            }

            let start = ContinuousClock.now
            _ = try await a.tocsin("ack", "wake")
            try await b.waitForEvent("Acknowledged", timeout: .seconds(10))
            let elapsed = ContinuousClock.now - start
            print("measured: machine-b acknowledged \(elapsed) after `tocsin ack` started on machine-a")
            #expect(elapsed < TimingBudget.scaled(.seconds(1)), "machine-b stopped \(elapsed) after the ack on machine-a")
            #expect(a.hasEvent("Acknowledged"))
            let list = try await b.tocsin("list", "--json")
            #expect(!list.stdoutText.contains("\"wake\""), "machine-b still holds the alarm: \(list.stdoutText)")
            // The broker saw both daemons, and only loopback clients.
            let connections = broker.log.split(separator: "\n").filter { $0.contains("New connection from ") }
            #expect(connections.count >= 2, "\(broker.log)")
            #expect(connections.allSatisfy { $0.contains("New connection from 127.0.0.1:") }, "\(connections)")
        }
    }

    @Test("killing and restarting the broker mid-run loses nothing; a redelivered acknowledge acts once")
    func brokerRestart() async throws {
        try await withFleet { broker, a, b in
            try await a.waitForEvent("Fired", timeout: .seconds(20))
            try await b.waitForEvent("Fired", timeout: .seconds(20))

            try await broker.crash()
            try await a.process.waitForStderr(containing: "mqtt fleet: lost the broker", timeout: .seconds(10))
            // Local answers do not wait for the broker.
            let start = ContinuousClock.now
            _ = try await a.tocsin("ack", "wake")
            try await a.waitForEvent("Acknowledged", timeout: .seconds(5))
            let local = ContinuousClock.now - start
            #expect(local < TimingBudget.scaled(.seconds(1)), "the ack on machine-a took \(local) with the broker down")
            #expect(!b.hasEvent("Acknowledged"), "machine-b heard the ack with no broker")

            try await broker.run()
            // machine-a sends the ack it owes once it reconnects; the broker kept machine-b's session.
            try await b.waitForEvent("Acknowledged", timeout: .seconds(20))
            let acted = try await b.process.waitForStderr(containing: " from machine-a", timeout: .seconds(5))
            let line = try #require(acted.split(separator: "\n").first { $0.contains("mqtt fleet: acknowledged/wake/") && $0.contains(" from machine-a") })
            let id = String(try #require(line.split(separator: " ").first { $0.hasPrefix("acknowledged/wake/") }))
            let parts = id.split(separator: "/")
            try #require(parts.count == 4, "id \(id)")

            // The same message again, as a broker redelivers it: machine-b must not act on it twice.
            let payload = #"{"version":1,"id":"\#(id)","kind":"acknowledged","key":"wake","occurrence":\#(parts[3]),"due":\#(parts[2]),"origin":"machine-a"}"#
            let pub = try await TestProcess.run("mosquitto_pub", ["-h", "127.0.0.1", "-p", "\(broker.port)", "-q", "1",
                                                                  "-t", "tocsin/acknowledged", "-m", payload])
            #expect(pub.status == .exited(0), "\(pub.stderrText)")
            let log = try await b.process.waitForStderr(containing: "ignored a redelivered \(id) from machine-a", timeout: .seconds(10))
            #expect(log.components(separatedBy: "mqtt fleet: \(id) from machine-a").count == 2, "acted more than once: \(log)")
            #expect(b.watch.stdout.components(separatedBy: "{\"event\":\"Acknowledged\",\"key\":\"wake\"").count == 2, "\(b.watch.stdout)")
        }
    }

    @Test("a reload keeps an unchanged mqtt backend connected and replaces a changed one; after it a snooze crosses the fleet, and an ack after the snooze ends still does")
    func reloadAndSnooze() async throws {
        try await withFleet { _, a, b in
            // The same file again: every backend is kept, the broker connection with it.
            a.process.signal(SIGHUP)
            let same = try await a.process.waitForStderr(containing: "reloaded", timeout: .seconds(20))
            #expect(same.contains("unchanged_backends=alarm,events,fleet,log"), "\(same)")
            // The mqtt table changed: that backend is replaced by a new instance with the same client id.
            let config = try String(contentsOfFile: a.daemon.configPath, encoding: .utf8)
            try a.daemon.rewrite(config: config.replacingOccurrences(of: "reconnect_max = \"1s\"", with: "reconnect_max = \"2s\""))
            a.process.signal(SIGHUP)
            try await a.process.waitForStderr(containing: "unchanged_backends=alarm,events,log", timeout: .seconds(20))
            try await a.waitForEvent("Fired", timeout: .seconds(20))
            try await b.waitForEvent("Fired", timeout: .seconds(20))

            let start = ContinuousClock.now
            _ = try await b.tocsin("snooze", "wake", "2s")
            try await a.waitForEvent("Snoozed", timeout: .seconds(10))
            let elapsed = ContinuousClock.now - start
            #expect(elapsed < TimingBudget.scaled(.seconds(1)), "machine-a snoozed \(elapsed) after the snooze on machine-b")
            // Both snoozed until the same instant (the message carries it); machine-b's 2 s end and
            // it rings again (due: the snooze's end), and its ack still names the original occurrence.
            try await b.waitForEvent("Fired", count: 2, timeout: .seconds(30))
            // A second snooze of the same occurrence is news, not a redelivery of the first.
            _ = try await b.tocsin("snooze", "wake", "2s")
            try await a.waitForEvent("Snoozed", count: 2, timeout: .seconds(10))
            try await b.waitForEvent("Fired", count: 3, timeout: .seconds(30))

            _ = try await b.tocsin("ack", "wake")
            try await a.waitForEvent("Acknowledged", timeout: .seconds(10))
            let list = try await a.tocsin("list", "--json")
            #expect(!list.stdoutText.contains("\"wake\""), "machine-a still holds the alarm: \(list.stdoutText)")
            // Two connections in all: none for the unchanged reload, one for the replacing one,
            // whose predecessor disconnected, so no session takeover loop (each takeover would
            // log another connect).
            let connects = a.process.stderr.components(separatedBy: "mqtt fleet: connected to").count - 1
            #expect(connects == 2, "machine-a connected \(connects) times: \(a.process.stderr.suffix(3000))")
        }
    }

    @Test("an ack given while the broker is down survives a restart of the daemon that owes it")
    func outboxSurvivesRestart() async throws {
        try await withFleet { broker, a, b in
            try await a.waitForEvent("Fired", timeout: .seconds(20))
            try await b.waitForEvent("Fired", timeout: .seconds(20))
            try await broker.crash()
            try await a.process.waitForStderr(containing: "mqtt fleet: lost the broker", timeout: .seconds(10))
            _ = try await a.tocsin("ack", "wake")
            try await a.waitForEvent("Acknowledged", timeout: .seconds(5))

            // machine-a stops with the ack unsent; its client's memory is gone with it.
            a.process.signal(SIGTERM)
            #expect(try await a.process.waitForExit(timeout: .seconds(10)) == .exited(0))
            try await broker.run()
            let restarted = try a.daemon.start(["--bus", a.bus.address])
            try await restarted.waitForStderr(containing: "mqtt fleet: connected", timeout: .seconds(30))
            // machine-a connects at once, machine-b is still in its backoff: the message reaches
            // machine-b through the session the broker kept for it on disk.
            try await b.waitForEvent("Acknowledged", timeout: .seconds(20))
            restarted.signal(SIGTERM)
            _ = try? await restarted.waitForExit(timeout: .seconds(10))
        }
    }

    @Test("over TLS (mqtts, ca_file) with a password-protected broker, `Acknowledge` over D-Bus (gdbus) on machine-b stops machine-a")
    func tlsPasswordAndDBus() async throws {
        try await withFleet(user: ("tocsin", "s3cret pass"), tls: true) { broker, a, b in
            try await a.waitForEvent("Fired", timeout: .seconds(20))
            try await b.waitForEvent("Fired", timeout: .seconds(20))
            let start = ContinuousClock.now
            let out = try await TestProcess.run("gdbus", ["call", "--address", b.bus.address, "-d", GatewayFixture.dest,
                                                          "-o", GatewayFixture.path, "-m", "\(GatewayFixture.iface).Acknowledge", "wake"])
            #expect(out.status == .exited(0), "\(out.stderrText)")
            try await a.waitForEvent("Acknowledged", timeout: .seconds(10))
            let elapsed = ContinuousClock.now - start
            #expect(elapsed < TimingBudget.scaled(.seconds(1)), "machine-a stopped \(elapsed) after the D-Bus ack on machine-b")
            // A client without the password is refused: the broker really checks.
            let anonymous = try await TestProcess.run("mosquitto_pub", ["-h", "127.0.0.1", "-p", "\(broker.port)", "-q", "1",
                                                                        "--cafile", broker.caFile ?? "",
                                                                        "-t", "tocsin/acknowledged", "-m", "x"])
            #expect(anonymous.status != .exited(0), "an anonymous client could publish")
            #expect(anonymous.stderrText.lowercased().contains("not authorised") || anonymous.stderrText.lowercased().contains("not authorized"),
                    "refused for another reason: \(anonymous.stderrText)")
        }
    }
}

extension FleetMachine {
    /// machine-a and machine-b on a new broker, each with the config's alarm due `alarmIn` seconds
    /// from now (a WAV of 0.2 s made by sox); all three are stopped however `body` ends.
    static func withPair(user: (name: String, password: String)? = nil, tls: Bool = false, alarmIn: Int,
                         _ body: (MosquittoBroker, FleetMachine, FleetMachine) async throws -> Void) async throws {
        let broker = try await MosquittoBroker.start(user: user, tls: tls)
        var login = broker.caFile.map { "ca_file = \"\($0)\"\n" } ?? ""
        if let user {
            let file = try broker.dir.write("client-password", user.password + "\n")
            login += "username = \"\(user.name)\"\npassword_file = \"\(file)\""
        }
        let sound = try broker.dir.write("ring.wav", "")
        let sox = try await TestProcess.run("sox", ["-n", "-r", "8000", "-c", "1", "-b", "16", sound, "synth", "0.2", "sine", "880"])
        guard sox.status == .exited(0) else { throw TestProcessError("sox: \(sox.stderrText)") }
        let at = rfc3339(secondsFromNow: alarmIn)
        var machines: [FleetMachine] = []
        do {
            machines.append(try await FleetMachine.start(name: "machine-a", broker: broker, sound: sound, at: at, login: login))
            machines.append(try await FleetMachine.start(name: "machine-b", broker: broker, sound: sound, at: at, login: login))
            try await body(broker, machines[0], machines[1])
        } catch {
            for m in machines { await m.stop() }
            await broker.stop()
            throw error
        }
        for m in machines { await m.stop() }
        await broker.stop()
    }
}
