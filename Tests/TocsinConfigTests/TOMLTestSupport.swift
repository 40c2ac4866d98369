import Foundation
import TocsinConfig

/// Paths the TOML tests need, found from this file so they work from any working directory.
enum TOMLTestPaths {
    /// The package root: this file is `<root>/Tests/TocsinConfigTests/TOMLTestSupport.swift`.
    static let packageRoot: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// `../shared/toml-test` next to the checkout (CI and the worktrees share one corpus).
    static let corpus: URL = packageRoot.deletingLastPathComponent()
        .appendingPathComponent("shared/toml-test", isDirectory: true)

    /// `../shared/toml-test-1.1`: the TOML 1.1.0 cases, same layout.
    static let corpus11: URL = packageRoot.deletingLastPathComponent()
        .appendingPathComponent("shared/toml-test-1.1", isDirectory: true)

    /// The `toml-test-decoder` built alongside this test bundle. `swift build --build-tests` and
    /// `swift test` build every product into the same directory as the test runner.
    static func decoder() -> URL? {
        var candidates: [URL] = []
        let selfExe = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        candidates.append(selfExe.deletingLastPathComponent().appendingPathComponent("toml-test-decoder"))
        if let arg0 = CommandLine.arguments.first {
            candidates.append(URL(fileURLWithPath: arg0).deletingLastPathComponent().appendingPathComponent("toml-test-decoder"))
        }
        candidates.append(Bundle.main.bundleURL.appendingPathComponent("toml-test-decoder"))
        candidates.append(Bundle.main.bundleURL.deletingLastPathComponent().appendingPathComponent("toml-test-decoder"))
        candidates.append(packageRoot.appendingPathComponent(".build/debug/toml-test-decoder"))
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0.path) }
    }
}

/// Compares toml-test tagged JSON by meaning, as the corpus README asks: floats by value (nan
/// equals nan), integers by value, date-times by the fields/instant they denote with fractional
/// seconds compared at the precision both sides carry.
enum TOMLTaggedJSONComparison {
    /// nil when equal, else where and how they differ.
    static func difference(expected: Any, actual: Any, path: String = "$") -> String? {
        if let e = expected as? [String: Any] {
            guard let a = actual as? [String: Any] else { return "\(path): expected a table, found \(actual)" }
            if let type = e["type"] as? String, let value = e["value"] as? String, e.count == 2 {
                guard let aType = a["type"] as? String, let aValue = a["value"] as? String, a.count == 2 else {
                    return "\(path): expected \(type) \(value), found \(a)"
                }
                guard aType == type else { return "\(path): expected type \(type), found \(aType)" }
                return scalarsEqual(type: type, value, aValue) ? nil : "\(path): expected \(type) '\(value)', found '\(aValue)'"
            }
            guard Set(e.keys) == Set(a.keys) else {
                return "\(path): expected keys \(e.keys.sorted()), found \(a.keys.sorted())"
            }
            for key in e.keys.sorted() {
                if let d = difference(expected: e[key] as Any, actual: a[key] as Any, path: path + "." + key) { return d }
            }
            return nil
        }
        if let e = expected as? [Any] {
            guard let a = actual as? [Any], a.count == e.count else { return "\(path): expected \(e.count) elements, found \(actual)" }
            for i in e.indices {
                if let d = difference(expected: e[i], actual: a[i], path: "\(path)[\(i)]") { return d }
            }
            return nil
        }
        return "\(path): unexpected JSON \(expected)"
    }

    static func scalarsEqual(type: String, _ a: String, _ b: String) -> Bool {
        switch type {
        case "float":
            guard let x = parseFloat(a), let y = parseFloat(b) else { return false }
            return x == y || (x.isNaN && y.isNaN)
        case "integer":
            return Int64(a) != nil && Int64(a) == Int64(b)
        case "datetime", "datetime-local", "date-local", "time-local":
            guard let x = DateTimeFields(a), let y = DateTimeFields(b) else { return false }
            return x.equals(y)
        default:
            return a == b
        }
    }

    static func parseFloat(_ s: String) -> Double? {
        switch s {
        case "inf", "+inf": return .infinity
        case "-inf": return -.infinity
        case "nan", "+nan", "-nan": return .nan
        default: return Double(s)
        }
    }

    struct DateTimeFields {
        var date: [Int]?
        var time: [Int]?
        var fraction: String = ""
        var offsetMinutes: Int?

        init?(_ text: String) {
            var s = Substring(text)
            func number(_ n: Int) -> Int? {
                guard s.count >= n, let v = Int(s.prefix(n)) else { return nil }
                s = s.dropFirst(n)
                return v
            }
            func skip(_ c: Character) -> Bool {
                guard s.first == c else { return false }
                s = s.dropFirst()
                return true
            }
            if s.count >= 10, s.dropFirst(4).first == "-" {
                guard let y = number(4), skip("-"), let m = number(2), skip("-"), let d = number(2) else { return nil }
                date = [y, m, d]
                if let sep = s.first, "Tt ".contains(sep) { s = s.dropFirst() } else if !s.isEmpty { return nil }
            }
            if !s.isEmpty {
                guard let h = number(2), skip(":"), let mi = number(2), skip(":"), let sec = number(2) else { return nil }
                time = [h, mi, sec]
                if skip(".") {
                    fraction = String(s.prefix { $0.isNumber })
                    s = s.dropFirst(fraction.count)
                }
                if skip("Z") || skip("z") {
                    offsetMinutes = 0
                } else if let sign = s.first, sign == "+" || sign == "-" {
                    s = s.dropFirst()
                    guard let oh = number(2), skip(":"), let om = number(2) else { return nil }
                    offsetMinutes = (oh * 60 + om) * (sign == "-" ? -1 : 1)
                }
                guard s.isEmpty else { return nil }
            }
        }

        func equals(_ other: DateTimeFields) -> Bool {
            guard (date == nil) == (other.date == nil), (time == nil) == (other.time == nil),
                  (offsetMinutes == nil) == (other.offsetMinutes == nil) else { return false }
            let digits = min(fraction.count, other.fraction.count)
            guard fraction.prefix(digits) == other.fraction.prefix(digits) else { return false }
            if let o1 = offsetMinutes, let o2 = other.offsetMinutes, let d1 = date, let d2 = other.date,
               let t1 = time, let t2 = other.time {
                return instant(d1, t1, o1) == instant(d2, t2, o2)
            }
            return date == other.date && time == other.time
        }

        /// Seconds since 0000-03-01 in UTC, enough to compare two instants.
        private func instant(_ d: [Int], _ t: [Int], _ offset: Int) -> Int {
            var y = d[0], m = d[1]
            if m <= 2 { y -= 1; m += 12 }
            let days = 365 * y + y / 4 - y / 100 + y / 400 + (153 * (m - 3) + 2) / 5 + d[2]
            return ((days * 24 + t[0]) * 60 + t[1] - offset) * 60 + t[2]
        }
    }
}
