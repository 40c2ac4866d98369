/// How our instants look in systemd-analyze's rendering, for the differential tests' messages, and
/// the generators and zone scans they share. The oracle itself is `SystemdOracle` in TocsinTesting.
import TocsinTesting
@testable import TocsinTime

extension SystemdOracle {
    /// Our rendering of an instant the way systemd-analyze prints it.
    static func render(_ instant: Instant, in zone: TimeZoneRules) -> String {
        let c = zone.civil(instant)
        let days = CivilMath.days(year: c.year, month: c.month, day: c.day)
        let names = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
        func p(_ v: Int, _ w: Int = 2) -> String { String(repeating: "0", count: max(0, w - String(v).count)) + String(v) }
        return "\(names[CivilMath.weekday(days: days)]) \(p(c.year, 4))-\(p(c.month))-\(p(c.day)) \(p(c.hour)):\(p(c.minute)):\(p(c.second)) \(zone.abbreviation(at: instant))"
    }
}


/// Deterministic generator so generated cases are reproducible from the seed in failure messages.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

enum Zones {
    static let directory = ZoneInfoDirectory()
    static func load(_ name: String) -> TimeZoneRules? { try? directory.rules(named: name) }

    /// Instants (Unix seconds) in [from, to) where the zone's UTC offset changes, found by scanning.
    static func transitions(_ zone: TimeZoneRules, from: Int64, to: Int64) -> [Int64] {
        var out: [Int64] = []
        var t = from
        var previous = zone.utcOffset(at: Instant(seconds: t))
        while t < to {
            let next = t + 900
            let o = zone.utcOffset(at: Instant(seconds: next))
            if o != previous {
                var lo = t, hi = next
                while hi - lo > 1 {
                    let mid = (lo + hi) / 2
                    if zone.utcOffset(at: Instant(seconds: mid)) == previous { lo = mid } else { hi = mid }
                }
                out.append(hi)
                previous = o
            }
            t = next
        }
        return out
    }
}
