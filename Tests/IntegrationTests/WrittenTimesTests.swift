import Foundation
import Testing
import TocsinTesting

/// systemd's timestamp forms for a notification's time, through the daemon from clients we did
/// not write (gdbus, busctl) and from `tocsin schedule`: a date and time without a zone is read in
/// the notification's `timezone`, else in the daemon's (`TZ` here).
@Suite("Written times: `--at \"2030-01-01 09:00\"` and its kin through the daemon")
struct WrittenTimesTests {
    /// A half-hour offset without DST: a time read in the wrong zone shows.
    static let daemonZone = ["TZ": "Asia/Kolkata"]

    @Test("each client's local, UTC and zoned forms fall due at the instant meant; a wrong weekday is refused at its column")
    func throughTheDaemon() async throws {
        try await withGateway(environment: Self.daemonZone) { g in
            var out = try await g.gdbus("Schedule", "{'key': <'kolkata'>, 'title': <'t'>, 'at': <'2030-01-01 09:00'>}")
            #expect(out.status == .exited(0), "\(out.stderrText)")
            out = try await g.busctl("call", "io.github.tocsin.Gateway", "/io/github/tocsin/Gateway", "io.github.tocsin.Gateway1",
                                     "Schedule", "a{sv}", "4", "key", "s", "berlin", "title", "s", "t",
                                     "at", "s", "Tue 2030-01-01 09:00:30", "timezone", "s", "Europe/Berlin")
            #expect(out.status == .exited(0), "\(out.stderrText)")
            out = try await g.tocsin("schedule", "--key", "utc", "--title", "t", "--at", "2030-01-01 09:00 UTC")
            #expect(out.status == .exited(0), "\(out.stderrText)")
            out = try await g.tocsin("schedule", "--key", "midnight", "--title", "t", "--at", "2030-01-01")
            #expect(out.status == .exited(0), "\(out.stderrText)")

            out = try await g.gdbus("Schedule", "{'title': <'t'>, 'at': <'Wed 2030-01-01 09:00'>}")
            #expect(out.status != .exited(0))
            #expect(out.stderrText.contains("org.freedesktop.DBus.Error.InvalidArgs"), "\(out.stderrText)")
            #expect(out.stderrText.contains("invalid 'at': 2030-01-01 is a Tuesday, not a Wednesday (column 1 of the value)"), "\(out.stderrText)")

            let json = try await g.tocsin("list", "--json")
            let items = try #require(try JSONSerialization.jsonObject(with: Data(json.stdoutText.utf8)) as? [[String: Any]])
            let next = Dictionary(uniqueKeysWithValues: items.compactMap { i in
                (i["key"] as? String).flatMap { k in (i["next_fire"] as? Int64).map { (k, $0 / 1_000_000) } }
            })
            // 2030-01-01T00:00:00Z is 1893456000.
            let y2030: Int64 = 1_893_456_000
            let expected: [String: Int64] = [
                "kolkata": y2030 + 12_600,    // 09:00 IST = 03:30Z
                "berlin": y2030 + 28_830,     // 09:00:30 CET = 08:00:30Z
                "utc": y2030 + 32_400,        // 09:00Z
                "midnight": y2030 - 19_800,   // 00:00 IST = 18:30Z the day before
            ]
            #expect(next == expected,
                    "\(json.stdoutText)")
        }
    }
}
