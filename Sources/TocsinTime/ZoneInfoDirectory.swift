#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Where zone rules come from: the system's zoneinfo directory. The only I/O in TocsinTime, kept apart.
public struct ZoneInfoDirectory: Sendable {
    public var path: String
    public init(path: String = "/usr/share/zoneinfo") { self.path = path }

    /// systemd's syntactic check for zone names: no absolute paths, no `..`, a restricted alphabet,
    /// so a name can never escape the zoneinfo directory.
    public static func isValidName(_ name: String) -> Bool {
        if name.isEmpty { return false }
        if name == "UTC" { return true }
        if name.hasPrefix("/") { return false }
        var slash = false
        for c in name.unicodeScalars {
            let ok = (c >= "a" && c <= "z") || (c >= "A" && c <= "Z") || (c >= "0" && c <= "9") || c == "-" || c == "_" || c == "+" || c == "/"
            if !ok { return false }
            if c == "/" {
                if slash { return false }
                slash = true
            } else {
                slash = false
            }
        }
        return !slash && name.utf8.count < 4096
    }

    /// True when `name` is a valid name of an installed TZif file (or `UTC`), as systemd's `timezone_is_valid`.
    public func hasZone(named name: String) -> Bool {
        guard Self.isValidName(name) else { return false }
        if name == "UTC" { return true }
        guard let head = Self.readFile(path + "/" + name, limit: 4) else { return false }
        return head == Array("TZif".utf8)
    }

    /// Rules for an IANA name or `UTC`; unknown or malformed names are `unknownTimeZone` errors.
    public func rules(named name: String) throws(TimeSyntaxError) -> TimeZoneRules {
        if name == "UTC" { return .utc }
        guard Self.isValidName(name), let bytes = Self.readFile(path + "/" + name, limit: 1 << 20) else {
            throw TimeSyntaxError(.unknownTimeZone, Self.unknownZoneMessage(name), column: 1)
        }
        return try TimeZoneRules(identifier: name, tzif: bytes)
    }

    /// `unknown time zone 'NAME'`, with what the name looks like when that says more: `+01:00`
    /// and `UTC+1` are offsets (people write them; the zone database has fixed-offset zones
    /// under other names, signed the POSIX way round), and `../x` can never be a zone's name.
    /// `place` follows (`in [daemon] 'timezone'`).
    public static func unknownZoneMessage(_ name: String, in place: String? = nil) -> String {
        "unknown time zone '\(name)'" + (nameHint(name).map { " (\($0))" } ?? "") + (place.map { " in \($0)" } ?? "")
    }

    static func nameHint(_ name: String) -> String? {
        if let minutes = utcOffsetMinutes(name) {
            if minutes == 0 { return "a UTC offset, not a zone name: the zone is 'UTC'" }
            let hours = abs(minutes) / 60
            if minutes % 60 == 0, minutes > 0 ? hours <= 14 : hours <= 12 {
                let shown = "UTC\(minutes > 0 ? "+" : "-")\(hours < 10 ? "0" : "")\(hours):00"
                return "a UTC offset, not a zone name: 'Etc/GMT\(minutes > 0 ? "-" : "+")\(hours)' is \(shown) all year;"
                    + " a place's zone, such as 'Europe/Berlin', also follows its daylight saving time"
            }
            return "a UTC offset, not a zone name: name a place's zone, such as 'Asia/Kolkata'"
        }
        if !isValidName(name) {
            return "zone names are like 'America/New_York': letters, digits, '-', '_' and '+', with '/' between parts"
        }
        return nil
    }

    /// `+01:00`, `-0530`, `+1`, `UTC+1`, `GMT-03:30` as minutes east of UTC; nil for anything else.
    static func utcOffsetMinutes(_ name: String) -> Int? {
        var rest = Substring(name)
        for prefix in ["UTC", "GMT"] where rest.uppercased().hasPrefix(prefix) {
            rest = rest.dropFirst(prefix.count)
            break
        }
        guard let sign = rest.first, sign == "+" || sign == "-" else { return nil }
        let digits = rest.dropFirst().filter { $0 != ":" }
        guard rest.dropFirst().allSatisfy({ $0.isASCII && ($0.isNumber || $0 == ":") }),
              rest.dropFirst().filter({ $0 == ":" }).count <= 1,
              !digits.isEmpty, digits.count <= 4 else { return nil }
        let hoursDigits: String, minuteDigits: String
        if let colon = rest.firstIndex(of: ":") {
            hoursDigits = String(rest[rest.index(after: rest.startIndex)..<colon])
            minuteDigits = String(rest[rest.index(after: colon)...])
            guard minuteDigits.count == 2 else { return nil }
        } else if digits.count > 2 {
            hoursDigits = String(digits.prefix(digits.count - 2))
            minuteDigits = String(digits.suffix(2))
        } else {
            hoursDigits = digits
            minuteDigits = "0"
        }
        guard let h = Int(hoursDigits), let m = Int(minuteDigits), (1...2).contains(hoursDigits.count), h <= 14, m < 60 else { return nil }
        return (sign == "+" ? 1 : -1) * (h * 60 + m)
    }

    /// The zone a user means by default: `tz` (the value of `$TZ` as the caller read it) if set, else `/etc/localtime`, else UTC.
    /// As in glibc (and so `systemd-analyze`), a `TZ` that is set but empty means UTC, and one
    /// that names no zone and is no POSIX rule means UTC too (`tzProblem` says so).
    public func defaultZone(tz: String?) -> TimeZoneRules {
        if tz == "" { return .utc }
        return zone(tz: tz) ?? .utc
    }

    /// Why `$TZ` falls back to UTC, for a warning; nil when it is unset, empty or understood.
    public func tzProblem(_ tz: String?) -> String? {
        guard let tz, !tz.isEmpty, zone(tz: tz) == nil else { return nil }
        return "TZ='\(tz)' is neither a time zone nor a POSIX rule; using UTC, as the C library does"
    }

    private func zone(tz: String?) -> TimeZoneRules? {
        if let tz, !tz.isEmpty {
            let name = tz.hasPrefix(":") ? String(tz.dropFirst()) : tz
            if name.hasPrefix("/") {
                if let bytes = Self.readFile(name, limit: 1 << 20),
                   let rules = try? TimeZoneRules(identifier: zoneName(forPath: name) ?? name, tzif: bytes) {
                    return rules
                }
            } else if let rules = try? rules(named: name) {
                return rules
            } else if !tz.hasPrefix(":"), let rules = TimeZoneRules(identifier: tz, posixTZ: tz) {
                // glibc also accepts a bare POSIX rule such as `EST5EDT,M3.2.0,M11.1.0`.
                return rules
            }
            return nil
        }
        if let bytes = Self.readFile("/etc/localtime", limit: 1 << 20) {
            let name = Self.readLink("/etc/localtime").flatMap(zoneName(forPath:)) ?? "localtime"
            if let rules = try? TimeZoneRules(identifier: name, tzif: bytes) { return rules }
        }
        return .utc
    }

    /// `Europe/Berlin` for `/usr/share/zoneinfo/Europe/Berlin` (or any `.../zoneinfo/...` link target).
    private func zoneName(forPath p: String) -> String? {
        if p.hasPrefix(path + "/") { return String(p.dropFirst(path.count + 1)) }
        let b = Array(p.utf8), marker = Array("zoneinfo/".utf8)
        guard b.count > marker.count else { return nil }
        for i in stride(from: b.count - marker.count, through: 0, by: -1) where Array(b[i..<(i + marker.count)]) == marker {
            return String(decoding: b[(i + marker.count)...], as: UTF8.self)
        }
        return nil
    }

    static func readLink(_ p: String) -> String? {
        var buffer = [CChar](repeating: 0, count: 4096)
        let n = readlink(p, &buffer, buffer.count - 1)
        guard n > 0 else { return nil }
        return String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Reads at most `limit` bytes of a regular file; nil when it cannot be opened or is not regular.
    /// Opened without blocking, so a FIFO among the zone files is refused instead of waiting for a writer.
    static func readFile(_ p: String, limit: Int) -> [UInt8]? {
        let fd = open(p, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG else { return nil }
        var out: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while out.count < limit {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, min($0.count, limit - out.count)) }
            if n < 0 {
                if errno == EINTR { continue }
                return nil
            }
            if n == 0 { break }
            out.append(contentsOf: chunk[0..<n])
        }
        return out
    }
}
