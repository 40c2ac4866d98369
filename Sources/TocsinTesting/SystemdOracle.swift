import Foundation

/// Runs `systemd-analyze calendar` (the reference implementation) and parses its report.
///
/// One process per (zone, base) handles a whole batch of expressions: systemd prints one block
/// per accepted expression and nothing on stdout for a rejected one. A block names its
/// expression by the "Original form" line, or, when that line is missing, by the normalized
/// form being identical to the input.
public enum SystemdOracle: Sendable {
    public struct Elapse: Equatable, Sendable, CustomStringConvertible {
        public var utcSeconds: Int64
        /// The local rendering, e.g. `Mon 2026-05-25 00:00:00 EDT`.
        public var local: String
        public var description: String { "\(local) (@\(utcSeconds))" }
    }

    public struct Result: Sendable {
        /// nil when systemd accepted the expression but gave up computing an elapse
        /// ("Failed to determine next elapse", its iteration cap); it then prints no block.
        public var normalized: String?
        public var elapses: [Elapse]
        public var gaveUp: Bool { normalized == nil }
    }

    public static let executable = "/usr/bin/systemd-analyze"

    /// Results keyed by the original expression; absent keys are expressions systemd rejected.
    public static func run(zone: String, base: Int64, iterations: Int, expressions: [String]) throws -> [String: Result] {
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

    public static func parse(_ text: String) -> [String: Result] {
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
    public static func utcSeconds(of text: String) -> Int64? {
        let parts = text.split(separator: " ")
        guard parts.count == 4, parts[3] == "UTC" else { return nil }
        let d = parts[1].split(separator: "-").compactMap { Int($0) }
        let t = parts[2].split(separator: ":").compactMap { Int($0) }
        guard d.count == 3, t.count == 3 else { return nil }
        return daysSinceEpoch(year: d[0], month: d[1], day: d[2]) * 86_400 + Int64(t[0] * 3600 + t[1] * 60 + t[2])
    }

    /// Days from 1970-01-01 in the proleptic Gregorian calendar. Its own arithmetic, not
    /// TocsinTime's: the oracle must not share code with what it checks.
    static func daysSinceEpoch(year: Int, month: Int, day: Int) -> Int64 {
        // Count from 1 March of year 0, so the leap day falls at the end of each counted year.
        let y = Int64(month <= 2 ? year - 1 : year)
        let m = Int64(month <= 2 ? month + 9 : month - 3)
        let dayOfYear = (153 * m + 2) / 5 + Int64(day) - 1
        let floorDiv = { (a: Int64, b: Int64) -> Int64 in a >= 0 ? a / b : -((-a + b - 1) / b) }
        let days = 365 * y + floorDiv(y, 4) - floorDiv(y, 100) + floorDiv(y, 400) + dayOfYear
        return days - 719_468
    }
}
