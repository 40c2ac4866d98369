import Foundation
import Testing
import TocsinTesting

/// `kill -9` in the middle of a burst of `Schedule` calls from several dbus-python clients
/// (`scripts/load.py burst`). Its own suite so `scripts/test.sh` can run it, with the load test,
/// apart from the timing-sensitive suites: four clients and the daemon saturate both cores.
@Suite("Faults: kill -9 mid-burst")
struct FaultBurstTests {
    static let config = FaultKillTests.config

    /// Calls per client: the full 10,000-call burst by default. A smaller burst is over before a
    /// kill can land in it now that the daemon answers thousands of calls a second (1,000 calls
    /// were all answered within the 50 ms between two progress lines); `TOCSIN_BURST_CALLS`
    /// sets another size.
    static let callsPerClient = Int(ProcessInfo.processInfo.environment["TOCSIN_BURST_CALLS"] ?? "") ?? 2500
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
            let dueIn = 12 + total / 500
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
}
