import Foundation
import Testing
import TocsinTesting

/// Many clients at once against the real daemon, with dbus-python clients (`scripts/load.py`).
/// CI runs the short version; `python3 scripts/load.py run --clients 100 --seconds 60` is the
/// long one (figures in docs/RELIABILITY.md).
@Suite("Load: concurrent clients scheduling, listing and cancelling while notifications fire")
struct LoadTests {
    static let clients = 20
    static let seconds = 10

    @Test("20 clients for 10 s: no errors, every scheduled-and-not-cancelled notification fires exactly once, RSS flat after warm-up")
    func concurrentClients() async throws {
        try await withGateway { g in
            let dir = TemporaryDirectory(prefix: "tocsin-load")
            let summaryPath = dir.path + "/summary.json"
            let load = try await TestProcess.run("/usr/bin/python3", [
                GatewayFixture.repositoryRoot + "/scripts/load.py", "load", "--address", g.bus.address,
                "--clients", "\(Self.clients)", "--seconds", "\(Self.seconds)", "--pid", "\(g.process.pid)",
                "--keys", "--out", summaryPath, "--fired", dir.path + "/fired.txt",
            ], timeout: .seconds(Self.seconds * 3 + 90))
            let summary = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: summaryPath))) as? [String: Any],
                                       "\(load.stdoutText) \(load.stderrText)")
            print("measured: load \(load.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines))")
            #expect(load.status == .exited(0), "\(load.stdoutText) \(load.stderrText.suffix(2000))")
            #expect(summary["errors"] as? Int == 0, "\(summary["first_errors"] ?? "")")
            #expect(summary["missing"] as? Int == 0, "\(summary["first_missing"] ?? "")")
            #expect(summary["duplicated"] as? Int == 0, "\(summary["first_duplicated"] ?? "")")
            #expect(summary["fired_after_cancel"] as? Int == 0, "\(summary["first_fired_after_cancel"] ?? "")")
            #expect((summary["calls"] as? Int ?? 0) > 500, "too few calls to call it load: \(summary["calls"] ?? "")")

            // Independently of the Fired signals: the daemon's own log has each expected key once.
            let expected = try #require(summary["expected_keys"] as? [String])
            let cancelled = try #require(summary["cancelled_keys"] as? [String])
            var counts: [String: Int] = [:]
            for f in g.process.firings { if let k = f["key"] as? String { counts[k, default: 0] += 1 } }
            let wrong = expected.filter { counts[$0] != 1 }
            #expect(wrong.isEmpty, "\(wrong.count) expected keys not logged exactly once: \(wrong.prefix(5).map { "\($0)×\(counts[$0] ?? 0)" })")
            let revived = cancelled.filter { counts[$0] != nil }
            #expect(revived.isEmpty, "cancelled but logged: \(revived.prefix(5))")

            let rss = try #require(summary["rss_kib"] as? [String: Any])
            let spread = (rss["warm_max"] as? Int ?? 0) - (rss["warm_min"] as? Int ?? 0)
            #expect(spread < 16 * 1024, "RSS not flat after warm-up: \(rss)")
            #expect(try await g.isHealthy())
        }
    }
}
