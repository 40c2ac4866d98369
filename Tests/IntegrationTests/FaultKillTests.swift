import Foundation
import Testing
import TocsinTesting

/// `kill -9` of the daemon (and of the notification server) at the worst moments: in the middle
/// of a burst of calls, while a delivery is running, while an alarm rings. Kill before due and a
/// bus restart are covered by `CrashRecoveryTests` and `BusRestartTests`.
@Suite("Faults: kill -9 mid-burst, mid-delivery, mid-alarm")
struct FaultKillTests {
    static let config = """
        [backend.log]
        type = "log"
        format = "json"

        [backend.events]
        type = "dbus-signal"
        """

    /// Calls per client: 250 in CI; `TOCSIN_BURST_CALLS=2500` for the full 10,000-call burst.
    static let callsPerClient = Int(ProcessInfo.processInfo.environment["TOCSIN_BURST_CALLS"] ?? "") ?? 250
    static let burstClients = 4

    @Test("kill -9 in a burst of Schedule calls from 4 clients: every acknowledged call survives and fires exactly once; refused and undelivered calls never appear")
    func killMidBurst() async throws {
        try await withTeardown { t in
            let bus = try await PrivateBus.start()
            t.add { await bus.stop() }
            let d = try DaemonUnderTest(config: Self.config, environment: bus.environment)
            let first = try d.start(["--bus", bus.address])
            t.add { _ = try? await first.kill() }
            try await first.waitForStderr(containing: "serving the D-Bus API", timeout: .seconds(30))

            let total = Self.burstClients * Self.callsPerClient
            // One due time for all: far enough for the burst, the kill and the restart at CI speed.
            let dueIn = 12 + total / 250
            let due = rfc3339(secondsFromNow: dueIn)
            let logs = TemporaryDirectory(prefix: "tocsin-burst")
            let started = ContinuousClock.now
            let burst = try TestProcess("/usr/bin/python3", [
                GatewayFixture.repositoryRoot + "/scripts/load.py", "burst", "--address", bus.address,
                "--clients", "\(Self.burstClients)", "--calls", "\(Self.callsPerClient)", "--at", due, "--out", logs.path,
            ])
            t.add { _ = try? await burst.kill() }
            // Kill when 40 % of the calls have been answered: mid-burst, with calls in flight.
            let threshold = total * 2 / 5
            _ = try await burst.output.wait("\(threshold) replies", timeout: .seconds(120)) {
                Self.lastReplies($0.stdoutText) >= threshold || $0.status != nil
            }
            try await first.kill()
            let killedAt = ContinuousClock.now
            let answeredBeforeKill = Self.lastReplies(burst.stdout)
            try await burst.waitForOutput(containing: "done\n", timeout: .seconds(120))

            var outcome: [String: [String]] = [:]
            for i in 0..<Self.burstClients {
                let text = try String(contentsOfFile: logs.path + "/client-\(i).log", encoding: .utf8)
                for line in text.split(separator: "\n") {
                    let f = line.split(separator: " ")
                    if f.count >= 2 { outcome[String(f[0]), default: []].append(String(f[1])) }
                }
            }
            let ok = outcome["ok"] ?? [], refused = outcome["refused"] ?? [], lost = outcome["lost"] ?? [], failed = outcome["failed"] ?? []
            let rate = Double(answeredBeforeKill) / max(0.001, Double((killedAt - started).components.seconds) + Double((killedAt - started).components.attoseconds) / 1e18)
            print("measured: burst of \(total) Schedule calls from \(Self.burstClients) clients, kill -9 after \(answeredBeforeKill) answers (~\(Int(rate)) calls/s incl. start-up): "
                  + "\(ok.count) acknowledged, \(refused.count) refused, \(lost.count) lost with the daemon, \(failed.count) never reached it")
            #expect(ok.count + refused.count + lost.count + failed.count == total, "every call ended one way or another")
            #expect(!ok.isEmpty && !refused.isEmpty && !(lost + failed).isEmpty, "the kill should fall mid-burst")

            let second = try d.start(["--bus", bus.address])
            t.add { second.signal(SIGTERM); _ = try? await second.waitForExit(timeout: .seconds(10)) }
            try await second.waitForStderr(containing: "serving the D-Bus API", timeout: .seconds(30))
            let client = StorageClient(bus: bus)
            let listed = try await client.listKeys()
            var firedKeys = Set((first.firings + second.firings).compactMap { $0["key"] as? String })
            let missing = Set(ok).subtracting(listed).subtracting(firedKeys)
            #expect(missing.isEmpty, "acknowledged but neither pending nor fired after the restart: \(missing.sorted().prefix(10))")
            #expect(listed.isDisjoint(with: refused + failed), "refused or undelivered calls are pending: \(listed.intersection(refused + failed).sorted().prefix(10))")

            // A marker due after the burst's due time: once it fired, every burst firing has too.
            _ = try await client.schedule(["burst-marker"], after: "\(dueIn + 2)s")
            try await second.waitForOutput(containing: "\"key\":\"burst-marker\"", timeout: .seconds(dueIn + 60))
            var counts: [String: Int] = [:]
            for f in first.firings + second.firings { if let k = f["key"] as? String { counts[k, default: 0] += 1 } }
            firedKeys = Set(counts.keys)
            let notOnce = ok.filter { counts[$0] != 1 }
            #expect(notOnce.isEmpty, "acknowledged calls not fired exactly once: \(notOnce.prefix(10).map { "\($0)×\(counts[$0] ?? 0)" })")
            let ghosts = (refused + failed).filter { counts[$0] != nil }
            #expect(ghosts.isEmpty, "refused or undelivered calls fired: \(ghosts.prefix(10))")
            let twice = lost.filter { (counts[$0] ?? 0) > 1 }
            #expect(twice.isEmpty, "calls lost with the daemon fired more than once: \(twice.prefix(10))")
            print("measured: after restart \(ok.count) acknowledged fired exactly once; \(lost.filter { counts[$0] == 1 }.count) of \(lost.count) in-flight calls had been committed")
        }
    }

    private static func lastReplies(_ text: String) -> Int {
        guard let line = text.split(separator: "\n").last(where: { $0.hasPrefix("replies ") }) else { return 0 }
        return Int(line.dropFirst(8)) ?? 0
    }

    @Test("kill -9 while an exec delivery runs: re-delivered once after restart (at least once), the recorded log delivery is not repeated, and nothing after it is")
    func killMidDelivery() async throws {
        try await withTeardown { t in
            let bus = try await PrivateBus.start()
            t.add { await bus.stop() }
            let work = TemporaryDirectory(prefix: "tocsin-hook")
            let record = work.path + "/deliveries.txt"
            let hold = work.path + "/hold"
            try "".write(toFile: record, atomically: true, encoding: .utf8)
            try "".write(toFile: hold, atomically: true, encoding: .utf8)
            let config = Self.config + """


                [backend.hook]
                type = "exec"
                timeout = "120s"
                command = ["/bin/sh", "-c", "echo \\"$TOCSIN_KEY $TOCSIN_REASON $TOCSIN_OCCURRENCE\\" >> '\(record)'; if [ -e '\(hold)' ]; then exec sleep 100; fi"]
                """
            let d = try DaemonUnderTest(config: config, environment: bus.environment)
            let tail = try TestProcess("tail", ["-n", "+1", "-F", record])
            t.add { _ = try? await tail.kill() }

            let first = try d.start(["--bus", bus.address, "--log-level", "debug"])
            // The hook's `sleep` is in the daemon's process group: kill both, as a crash of the session would.
            t.add { _ = Glibc.kill(-first.pid, SIGKILL); _ = try? await first.waitForExit(timeout: .seconds(10)) }
            try await first.waitForStderr(containing: "serving the D-Bus API", timeout: .seconds(30))
            let client = StorageClient(bus: bus)
            let scheduled = try await TestProcess.run("gdbus", ["call", "--address", bus.address, "-d", GatewayFixture.dest, "-o", GatewayFixture.path,
                                                                 "-m", "\(GatewayFixture.iface).Schedule",
                                                                 "{'key': <'job'>, 'title': <'Job'>, 'after': <'1s'>, 'backends': <['hook', 'log']>}"])
            try #require(scheduled.status == .exited(0), "\(scheduled.stderrText)")
            try await tail.waitForOutput(containing: "job scheduled 1\n", timeout: .seconds(20))
            try await first.waitForStderr(containing: "delivery recorded backend=log key=job", timeout: .seconds(20))
            // The hook is running (it holds): crash now.
            _ = Glibc.kill(-first.pid, SIGKILL)
            try await first.waitForExit(timeout: .seconds(10))
            #expect(first.firings(key: "job").count == 1)
            try FileManager.default.removeItem(atPath: hold)

            let second = try d.start(["--bus", bus.address, "--log-level", "debug"])
            t.add { _ = try? await second.kill() }
            try await tail.waitForOutput(containing: "job recovered 1\n", timeout: .seconds(30))
            try await second.waitForStderr(containing: "delivery recorded backend=hook key=job", timeout: .seconds(20))
            #expect(second.firings(key: "job").isEmpty, "the log delivery was recorded before the crash and must not repeat")
            try await second.kill()

            let third = try d.start(["--bus", bus.address])
            t.add { third.signal(SIGTERM); _ = try? await third.waitForExit(timeout: .seconds(10)) }
            try await third.waitForStderr(containing: "serving the D-Bus API", timeout: .seconds(30))
            // A marker through the same hook: once it ran, anything the restart would repeat has run too.
            _ = try await client.schedule(["marker"], after: "1s")
            try await tail.waitForOutput(containing: "marker scheduled 1\n", timeout: .seconds(20))
            let lines = try String(contentsOfFile: record, encoding: .utf8).split(separator: "\n")
            #expect(lines == ["job scheduled 1", "job recovered 1", "marker scheduled 1"], "\(lines)")
            #expect(third.firings(key: "job").isEmpty)
        }
    }

    @Test("kill -9 while an alarm rings: after restart it rings on and `tocsin ack` still stops it")
    func killMidAlarm() async throws {
        try await withAlarm(every: "2s", maxRings: 10, soundSeconds: "0.5") { f in
            _ = try await f.tocsin("schedule", "--key", "wake", "--title", "Wake up", "--after", "1s", "--backend", "alarm")
            try await f.watch.wait("new", number: 2, timeout: .seconds(15))
            try await f.process.kill()
            let rangBefore = f.watch.count("new")
            try await f.startDaemon()
            let resumed = try await f.watch.wait("new", number: rangBefore + 1, timeout: .seconds(15))
            let list = try await f.tocsin("list", "--json")
            #expect(list.stdoutText.contains("\"ringing\""), "\(list.stdoutText)")
            _ = try await f.tocsin("ack", "wake")
            try await f.watch.waitForRemoval(of: resumed.index, timeout: .seconds(5))
            let afterAck = f.watch.count("new")
            try await f.marker(after: "5s")
            #expect(f.watch.count("new") == afterAck, "rang after the ack: \(f.watch.events)")
        }
    }

    @Test("the notification server is killed mid-alarm and restarted: popups reach the new server, the sound never stops")
    func notificationServerKilled() async throws {
        let popup = """
            [backend.popup]
            type = "libnotify"
            """
        try await withAlarm(every: "1s", maxRings: 60, soundSeconds: "0.3", extraConfig: popup) { f in try await withTeardown { t in
            let first = try await NotificationServer.mock(bus: f.bus, capabilities: "body actions")
            t.add { await first.stop() }
            // Each firing pops up and starts ringing afresh; rings continue every second in between.
            _ = try await f.tocsin("schedule", "--key", "wake", "--title", "Wake up", "--every", "3s", "--backend", "alarm", "--backend", "popup")
            try await first.process.waitForOutput(containing: "Wake up", timeout: .seconds(20))
            try await f.watch.wait("new", number: 2, timeout: .seconds(15))
            _ = try await first.process.kill()
            let killedAt = f.watch.count("new")
            // Rings go on without a server; the next firing's popup fails and is retried.
            try await f.watch.wait("new", number: killedAt + 3, timeout: .seconds(15))
            let second = try await NotificationServer.mock(bus: f.bus, capabilities: "body actions")
            t.add { await second.stop() }
            try await second.process.waitForOutput(containing: "Wake up", timeout: .seconds(30))
            let end = try await f.watch.wait("new", number: f.watch.count("new") + 1, timeout: .seconds(10))
            _ = try await f.tocsin("ack", "wake")
            let starts = f.watch.events.filter { $0.kind == "new" && $0.at <= end.at }.map(\.at)
            let gaps = zip(starts.dropFirst(), starts).map { $0 - $1 }
            print("measured: \(starts.count) rings across the server's death and restart, longest gap \(String(format: "%.2f", gaps.max() ?? 0)) s (every 1 s)")
            #expect(starts.count >= killedAt + 4)
            #expect((gaps.max() ?? 0) < 1.8, "the sound paused: gaps \(gaps)")
            #expect(f.daemonProcess.value?.status == nil, "the daemon is still running")
        } }
    }
}
