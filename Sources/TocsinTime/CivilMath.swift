/// Proleptic Gregorian arithmetic on plain integers.
///
/// Kept free of any zone so that the zone code, the mktime emulation and the
/// calendar search all agree on one definition of "day number". Public for the TOML date code,
/// so a config date and a timestamp agree on which days exist.
public enum CivilMath: Sendable {
    public static func isLeap(_ y: Int) -> Bool { (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 }

    /// Days in month `m` (1...12) of year `y`.
    public static func daysInMonth(_ y: Int, _ m: Int) -> Int {
        switch m {
        case 2: return isLeap(y) ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    /// Days since 1970-01-01 of `y-m-d` (month 1...12; `d` may be out of range and simply offsets).
    static func days(year y: Int, month m: Int, day d: Int) -> Int {
        // Shift the year so that it starts in March: leap days then fall at the end.
        let yy = m <= 2 ? y - 1 : y
        let era = (yy >= 0 ? yy : yy - 399) / 400
        let yoe = yy - era * 400
        let mp = (m + 9) % 12
        let doy = (153 * mp + 2) / 5
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468 + (d - 1)
    }

    /// Inverse of `days(year:month:day:)`.
    static func civil(days z0: Int) -> (year: Int, month: Int, day: Int) {
        let z = z0 + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (m <= 2 ? 1 : 0), m, d)
    }

    /// 0 = Sunday ... 6 = Saturday, like `tm_wday`.
    static func weekday(days: Int) -> Int {
        let w = (days + 4) % 7
        return w < 0 ? w + 7 : w
    }

    @inline(__always) static func floorDiv(_ a: Int64, _ b: Int64) -> Int64 {
        let q = a / b
        return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q
    }

    @inline(__always) static func floorMod(_ a: Int64, _ b: Int64) -> Int64 {
        let r = a % b
        return r != 0 && (r < 0) != (b < 0) ? r + b : r
    }
}

/// A `struct tm` lookalike: the calendar search reproduces systemd's
/// field-by-field normalisation, so it needs the same unnormalised representation.
struct BrokenDownTime: Equatable {
    var year: Int      // full year, not minus 1900
    var month: Int     // 0...11 once normalised
    var mday: Int
    var hour: Int
    var minute: Int
    var second: Int
    var isdst: Int     // -1 unknown, 0, 1
    var wday: Int = 0  // 0 = Sunday

    /// UTC-style seconds of the (possibly unnormalised) fields, as if the zone were UTC.
    var localSeconds: Int64 {
        let mNorm = CivilMath.floorMod(Int64(month), 12)
        let y = year + Int(CivilMath.floorDiv(Int64(month), 12))
        let d = CivilMath.days(year: y, month: Int(mNorm) + 1, day: mday)
        return Int64(d) * 86_400 + Int64(hour) * 3600 + Int64(minute) * 60 + Int64(second)
    }

    /// Fields of the local seconds `s` (a zone-less time line).
    init(localSeconds s: Int64, isdst: Int) {
        let days = CivilMath.floorDiv(s, 86_400)
        let rem = Int(s - days * 86_400)
        let c = CivilMath.civil(days: Int(days))
        year = c.year; month = c.month - 1; mday = c.day
        hour = rem / 3600; minute = rem / 60 % 60; second = rem % 60
        self.isdst = isdst
        wday = CivilMath.weekday(days: Int(days))
    }

    init(year: Int, month: Int, mday: Int, hour: Int, minute: Int, second: Int, isdst: Int) {
        self.year = year; self.month = month; self.mday = mday
        self.hour = hour; self.minute = minute; self.second = second; self.isdst = isdst
    }
}
