import Foundation
import Testing
import TocsinCore
import TocsinTesting

/// `kill -9` while a burst of firings goes out: 10,000 notifications due at one instant, the
/// `log` backend writing each firing, the daemon killed three times at different depths into
/// the burst (the first burst, then the catch-up bursts of two restarts).
///
/// Deliveries are at most once: a claim is committed before its delivery starts and confirmed in a
/// later transaction, so a claim a crash leaves open may or may not have been delivered. Before,
/// a restart delivered every open claim again, and each firing written before the kill whose
/// confirmation was not yet committed came out twice (361 and 896 of them in the sweep).
@Suite("Faults: kill -9 mid-firing-burst")
struct FaultFiringBurstTests {
    static let total = 10_000

    /// Schedules `total` notifications due together, after a probe that measures this machine's
    /// call rate, so the due instant falls just after the last call whatever the build
    /// (debug, AddressSanitizer, ThreadSanitizer). Prints the due instant in unix seconds.
    static let scheduler = PipelinedSchedule.script(#"""
        total = int(sys.argv[2])
        def run(prefix, count, at):
            schedule_all(count, lambda i: {'key': '%s%d' % (prefix, i), 'title': 't', 'at': at, 'backends': dbus.Array(['log'], signature='s')})
        start = time.time()
        run('probe', 500, '@%d' % (int(start) + 3600))
        rate = 500 / max(time.time() - start, 0.001)
        gw.CancelAll()
        due = int(time.time() + 2 + 1.5 * total / rate) + 1
        run('k', total, '@%d' % due)
        print('due %d rate %d' % (due, rate), flush=True)
        """#)

    @Test("kill -9 three times into a burst of 10,000 firings due together: no firing is delivered twice; each is delivered once or reported interrupted")
    func killMidFiringBurst() async throws {
        try await withTeardown { t in
            let bus = try await PrivateBus.start()
            t.add { await bus.stop() }
            let d = try DaemonUnderTest(config: "[backend.log]\ntype = \"log\"\nformat = \"json\"\n", environment: bus.environment)
            var runs: [TestProcess] = []
            func start() async throws -> TestProcess { try await d.startServing(on: bus, runs: &runs, teardown: t) }
            var daemon = try await start()
            let scheduled = try await TestProcess.run("/usr/bin/python3", ["-c", Self.scheduler, bus.address, "\(Self.total)"])
            try #require(scheduled.status == .exited(0), "\(scheduled.stderrText)")
            print("measured: \(scheduled.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines))")

            // Kill after the first firing line, then twice more into the catch-up bursts.
            var killedAfter: [Int] = []
            for depth in [1, 1_500, 3_000] {
                let seen = Self.firingLines(runs)
                try await daemon.output.wait("\(depth) firings of this run", timeout: .seconds(300)) {
                    Self.count(lines: $0.stdout) >= depth || $0.status != nil
                }
                try #require(daemon.status == nil, "the daemon ended before the kill: \(daemon.stderr.suffix(2000))")
                _ = Glibc.kill(daemon.pid, SIGKILL)
                _ = try await daemon.waitForExit(timeout: .seconds(10))
                killedAfter.append(Self.firingLines(runs) - seen)
                daemon = try await start()
            }
            // The last run settles everything: each key delivered or reported interrupted.
            // The predicate runs under the current run's lock: it reads that run from its argument.
            let earlier = runs.dropLast().map(\.output.value)
            _ = try await daemon.output.wait("every key delivered or reported", timeout: .seconds(300)) { current in
                Self.settled(earlier + [current]).count == Self.total || current.status != nil
            }
            // A marker through the same backend: once it fired, anything a restart would repeat has.
            let marker = try await TestProcess.run("gdbus", ["call", "--address", bus.address, "-d", GatewayFixture.dest, "-o", GatewayFixture.path,
                                                              "-m", "\(GatewayFixture.iface).Schedule", "{'key': <'marker'>, 'title': <'m'>, 'after': <'1s'>}"])
            try #require(marker.status == .exited(0), "\(marker.stderrText)")
            try await daemon.waitForOutput(containing: "\"key\":\"marker\"", timeout: .seconds(60))

            var delivered: [String: Int] = [:]
            for r in runs { for f in r.firings { if let k = f["key"] as? String { delivered[k, default: 0] += 1 } } }
            let interrupted = Self.interruptedKeys(runs.map(\.output.value))
            let twice = delivered.filter { $0.value > 1 }.map(\.key).sorted()
            print("measured: 10,000 due together, kills after \(killedAfter) firings of each run; delivered once \(delivered.count - 1), reported interrupted \(interrupted.count) (of which delivered before the kill \(interrupted.filter { delivered[$0] != nil }.count)), delivered twice \(twice.count)")
            #expect(twice.isEmpty, "delivered more than once: \(twice.prefix(10))")
            let lost = (0..<Self.total).map { "k\($0)" }.filter { delivered[$0] == nil && !interrupted.contains($0) }
            #expect(lost.isEmpty, "neither delivered nor reported: \(lost.prefix(10))")
            #expect(killedAfter.allSatisfy { $0 < Self.total }, "every kill should land inside a burst: \(killedAfter)")
            // What a crash loses is bounded: the first kill lands just after the instant, when up to
            // `aheadLimit` firings claimed before it are being handed over; after that, and in the
            // catch-up bursts of the restarts, claims run at most two slices of 128 ahead of the deliveries.
            let neverDelivered = interrupted.filter { delivered[$0] == nil }.count
            #expect(neverDelivered <= TocsinCenter.aheadLimit + killedAfter.count * 2 * 128, "\(neverDelivered) claims were never handed to the backend")
            let pending = try await TestProcess.run("gdbus", ["call", "--address", bus.address, "-d", GatewayFixture.dest, "-o", GatewayFixture.path,
                                                               "-m", "org.freedesktop.DBus.Properties.Get", GatewayFixture.iface, "Pending"])
            #expect(pending.stdoutText.contains("<uint32 0>"), "nothing of the burst is left pending: \(pending.stdoutText)")
        }
    }

    /// Keys each run's restart reported as interrupted (from the daemon's warning).
    static func interruptedKeys(_ runs: [TestProcess.Output]) -> Set<String> {
        var out: Set<String> = []
        for r in runs {
            for line in r.stderrText.split(separator: "\n") where line.contains("may not have been delivered") {
                if let range = line.range(of: " key=") {
                    out.insert(String(line[range.upperBound...].prefix { $0 != " " }))
                }
            }
        }
        return out
    }

    /// Keys delivered (the log's JSON lines) or reported interrupted, read without a JSON parse:
    /// it runs on every chunk the daemon writes.
    static func settled(_ runs: [TestProcess.Output]) -> Set<String> {
        var keys = interruptedKeys(runs)
        let marker = Array("{\"key\":\"".utf8)
        for r in runs {
            let bytes = r.stdout
            var i = 0
            while i + marker.count < bytes.count {
                if bytes[i] == marker[0], Array(bytes[i..<i + marker.count]) == marker {
                    var j = i + marker.count
                    while j < bytes.count, bytes[j] != 34 { j += 1 }
                    keys.insert(String(decoding: bytes[(i + marker.count)..<j], as: UTF8.self))
                    i = j
                } else {
                    i += 1
                }
            }
        }
        return keys
    }

    static func firingLines(_ runs: [TestProcess]) -> Int { runs.reduce(0) { $0 + count(lines: $1.output.value.stdout) } }

    static func count(lines bytes: [UInt8]) -> Int { bytes.reduce(0) { $1 == 10 ? $0 + 1 : $0 } }
}
