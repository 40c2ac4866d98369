import Foundation
import TocsinTesting
@testable import TocsinTime

/// Runs `systemd-analyze calendar` (the reference implementation) and parses its report.
///
/// One process per (zone, base) handles a whole batch of expressions: systemd prints one block
/// per accepted expression and nothing on stdout for a rejected one. A block names its
/// expression by the "Original form" line, or, when that line is missing, by the normalized
/// form being identical to the input.
enum SystemdOracle {
    struct Elapse: Equatable, CustomStringConvertible {
        var utcSeconds: Int64
        /// The local rendering, e.g. `Mon 2026-05-25 00:00:00 EDT`.
        var local: String
        var description: String { "\(local) (@\(utcSeconds))" }
    }

    struct Result {
        /// nil when systemd accepted the expression but gave up computing an elapse
        /// ("Failed to determine next elapse", its iteration cap); it then prints no block.
        var normalized: String?
        var elapses: [Elapse]
        var gaveUp: Bool { normalized == nil }
    }

    static let executable = "/usr/bin/systemd-analyze"

    /// Results keyed by the original expression; absent keys are expressions systemd rejected.
    static func run(zone: String, base: Int64, iterations: Int, expressions: [String]) throws -> [String: Result] {
        let run = try runBlocking(executable, ["calendar", "--base-time=@\(base)", "--iterations=\(iterations)", "--"] + expressions,
                                  environment: ["TZ": zone, "LANG": "C", "SYSTEMD_COLORS": "0", "PATH": "/usr/bin:/bin"])
        let data = Data(run.stdout.utf8)
        let errData = Data(run.stderr.utf8)
        var results = parse(String(decoding: data, as: UTF8.self))
        let marker = "Failed to determine next elapse for '"
        for line in String(decoding: errData, as: UTF8.self).split(separator: "\n") {
            guard let r = line.range(of: marker), let end = line.range(of: "': ", options: .backwards) else { continue }
            results[String(line[r.upperBound..<end.lowerBound])] = Result(normalized: nil, elapses: [])
        }
        return results
    }

    static func parse(_ text: String) -> [String: Result] {
        var results: [String: Result] = [:]
        var original: String?
        var current: Result?
        var currentKey: String?
        func flush() {
            if let c = current, let k = currentKey { results[k] = c }
            current = nil; currentKey = nil; original = nil
        }
        for raw in text.split(separator: "\n", omittingEmptySubsequences: false) {
            // Only leading spaces are layout: an original form may itself end in spaces.
            let trimmed = String(raw.drop { $0 == " " })
            if trimmed.hasPrefix("Original form: ") {
                flush()
                original = String(trimmed.dropFirst("Original form: ".count))
            } else if trimmed.hasPrefix("Normalized form: ") {
                let n = String(trimmed.dropFirst("Normalized form: ".count))
                if current != nil { flush() }
                let key = original ?? n
                currentKey = key
                current = Result(normalized: n, elapses: [])
            } else if trimmed.hasPrefix("Next elapse: ") || trimmed.hasPrefix("Iter. #") {
                guard let colon = trimmed.range(of: ": ") else { continue }
                let value = String(trimmed[colon.upperBound...])
                if value == "never" { continue }
                current?.elapses.append(Elapse(utcSeconds: utcSeconds(of: value) ?? Int64.min, local: value))
            } else if trimmed.hasPrefix("(in UTC): ") {
                let value = String(trimmed.dropFirst("(in UTC): ".count))
                if let s = utcSeconds(of: value), var c = current, !c.elapses.isEmpty {
                    c.elapses[c.elapses.count - 1].utcSeconds = s
                    current = c
                }
            }
        }
        flush()
        return results
    }

    /// `Www YYYY-MM-DD HH:MM:SS UTC` to Unix seconds; nil for a local rendering in another zone.
    static func utcSeconds(of text: String) -> Int64? {
        let parts = text.split(separator: " ")
        guard parts.count == 4, parts[3] == "UTC" else { return nil }
        let d = parts[1].split(separator: "-").compactMap { Int($0) }
        let t = parts[2].split(separator: ":").compactMap { Int($0) }
        guard d.count == 3, t.count == 3 else { return nil }
        return Int64(CivilMath.days(year: d[0], month: d[1], day: d[2])) * 86_400 + Int64(t[0] * 3600 + t[1] * 60 + t[2])
    }

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
