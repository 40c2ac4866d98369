import Testing
@testable import TocsinTime

/// `$TZ` as an input surface (issue 17's sweep): what the daemon's default zone becomes for each
/// kind of value, as glibc (and so `systemd-analyze`) reads it, and which values earn a warning.
@Suite("TZ from the environment")
struct TZEnvironmentTests {
    struct Row: Sendable, CustomTestStringConvertible {
        var tz: String?
        /// The zone's identifier; for a POSIX rule, the rule itself.
        var zone: String
        var warned: Bool
        var testDescription: String { "TZ=\(tz.map { "'\($0)'" } ?? "unset")" }
    }

    static let rows: [Row] = [
        Row(tz: "Europe/Berlin", zone: "Europe/Berlin", warned: false),
        Row(tz: ":Europe/Berlin", zone: "Europe/Berlin", warned: false),
        Row(tz: "/usr/share/zoneinfo/Asia/Tokyo", zone: "Asia/Tokyo", warned: false),
        Row(tz: "CET-1CEST,M3.5.0,M10.5.0/3", zone: "CET-1CEST,M3.5.0,M10.5.0/3", warned: false),
        // regression: a set but empty TZ read /etc/localtime; glibc means UTC by it.
        Row(tz: "", zone: "UTC", warned: false),
        Row(tz: "Invalid/Zone", zone: "UTC", warned: true),
        Row(tz: "../../etc/passwd", zone: "UTC", warned: true),
        Row(tz: "/etc/passwd", zone: "UTC", warned: true),
        Row(tz: ":", zone: "UTC", warned: true),
    ]

    @Test(arguments: rows)
    func defaultZone(_ row: Row) {
        let dir = ZoneInfoDirectory()
        #expect(dir.defaultZone(tz: row.tz).identifier == row.zone, "row \(row.testDescription)")
        #expect((dir.tzProblem(row.tz) != nil) == row.warned, "row \(row.testDescription): \(dir.tzProblem(row.tz) ?? "no warning")")
    }
}
