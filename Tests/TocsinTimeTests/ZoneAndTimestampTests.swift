import Foundation
import Testing
import TocsinTesting
@testable import TocsinTime

@Suite("TZif reader and zone rules")
struct ZoneTests {
    @Test func berlinAroundTransitions() throws {
        let berlin = try Zones.directory.rules(named: "Europe/Berlin")
        let spring = Instant(seconds: 1_774_746_000) // 2026-03-29 01:00:00 UTC
        #expect(berlin.utcOffset(at: spring - .seconds(1)) == 3600)
        #expect(berlin.abbreviation(at: spring - .seconds(1)) == "CET")
        #expect(berlin.utcOffset(at: spring) == 7200)
        #expect(berlin.abbreviation(at: spring) == "CEST")
        let fall = Instant(seconds: 1_792_890_000) // 2026-10-25 01:00:00 UTC
        #expect(berlin.utcOffset(at: fall - .seconds(1)) == 7200)
        #expect(berlin.utcOffset(at: fall) == 3600)
        #expect(berlin.civil(fall - .seconds(1)) == CivilDateTime(year: 2026, month: 10, day: 25, hour: 2, minute: 59, second: 59))
        #expect(berlin.civil(fall) == CivilDateTime(year: 2026, month: 10, day: 25, hour: 2))
    }

    @Test func lordHoweHalfHourDST() throws {
        let lh = try Zones.directory.rules(named: "Australia/Lord_Howe")
        let t = Instant(seconds: 1_759_591_800) // 2025-10-04 15:30 UTC: 02:00 +1030 becomes 02:30 +11
        #expect(lh.utcOffset(at: t - .seconds(1)) == 37_800)
        #expect(lh.abbreviation(at: t - .seconds(1)) == "+1030")
        #expect(lh.utcOffset(at: t) == 39_600)
        #expect(lh.abbreviation(at: t) == "+11")
    }

    /// Far past the transition table the POSIX footer decides; glibc's `date` is the reference.
    @Test("offsets and abbreviations match glibc, including the footer rule",
          arguments: ["Europe/Berlin", "America/New_York", "America/Santiago", "Australia/Lord_Howe", "Asia/Kolkata", "UTC"])
    func matchesGlibc(zoneName: String) throws {
        let zone = try Zones.directory.rules(named: zoneName)
        var instants: [Int64] = []
        // Every 5 days 2024–2027, then sparse points up to 2199 (well past any table).
        var t: Int64 = 1_704_067_200
        while t < 1_830_297_600 { instants.append(t); t += 5 * 86_400 + 3_607 }
        for year in stride(from: 2037, through: 2199, by: 3) {
            for month in [1, 3, 4, 7, 10, 11] {
                instants.append(Int64(CivilMath.days(year: year, month: month, day: 15)) * 86_400 + 43_200)
            }
        }
        instants += Zones.transitions(zone, from: 2_000_000_000, to: 2_100_000_000).flatMap { [$0 - 1, $0] }
        let input = instants.map { "@\($0)" }.joined(separator: "\n") + "\n"
        let path = NSTemporaryDirectory() + "tocsin-zone-\(UUID().uuidString).txt"
        try input.write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let run = try runBlocking("/bin/date", ["-f", path, "+%z %Z"], environment: ["TZ": zoneName, "LANG": "C"])
        let data = Data(run.stdout.utf8)
        let lines = String(decoding: data, as: UTF8.self).split(separator: "\n")
        try #require(lines.count == instants.count)
        for (i, line) in lines.enumerated() {
            let instant = Instant(seconds: instants[i])
            let o = zone.utcOffset(at: instant)
            let sign = o < 0 ? "-" : "+"
            let mine = "\(sign)\(Timestamp.pad(abs(o) / 3600, 2))\(Timestamp.pad(abs(o) / 60 % 60, 2)) \(zone.abbreviation(at: instant))"
            #expect(mine == String(line), "\(zoneName) @\(instants[i])")
        }
    }

    /// A hand-built TZif: v1 only, then v2 with a footer, then damaged copies.
    static func tzif(version: UInt8, transitions: [Int64], types: [(Int32, Bool, UInt8)], abbreviations: String, footer: String?) -> [UInt8] {
        func be32(_ v: Int32) -> [UInt8] { withUnsafeBytes(of: v.bigEndian, Array.init) }
        func be64(_ v: Int64) -> [UInt8] { withUnsafeBytes(of: v.bigEndian, Array.init) }
        func block(_ timeSize: Int) -> [UInt8] {
            var b = Array("TZif".utf8) + [version] + [UInt8](repeating: 0, count: 15)
            let chars = Array(abbreviations.utf8)
            for c in [0, 0, 0, transitions.count, types.count, chars.count] { b += be32(Int32(c)) }
            for t in transitions { b += timeSize == 8 ? be64(t) : be32(Int32(t)) }
            b += transitions.indices.map { UInt8($0 % types.count) }
            for (off, dst, idx) in types { b += be32(off) + [dst ? 1 : 0, idx] }
            return b + chars
        }
        var bytes = block(4)
        if version >= UInt8(ascii: "2") {
            bytes += block(8)
            bytes += Array("\n\(footer ?? "")\n".utf8)
        }
        return bytes
    }

    @Test func syntheticTZif() throws {
        let types: [(Int32, Bool, UInt8)] = [(3600, false, 0), (7200, true, 4)]
        let v1 = Self.tzif(version: 0, transitions: [100, 200], types: types, abbreviations: "CET\0CEST\0", footer: nil)
        let r1 = try TimeZoneRules(identifier: "Test/V1", tzif: v1)
        #expect(r1.utcOffset(at: Instant(seconds: 50)) == 3600)     // before the table: first standard type
        #expect(r1.utcOffset(at: Instant(seconds: 150)) == 3600)
        #expect(r1.abbreviation(at: Instant(seconds: 250)) == "CEST") // past the table, no footer: last type
        let v2 = Self.tzif(version: UInt8(ascii: "2"), transitions: [100, 200], types: types,
                           abbreviations: "CET\0CEST\0", footer: "CET-1CEST,M3.5.0,M10.5.0/3")
        let r2 = try TimeZoneRules(identifier: "Test/V2", tzif: v2)
        // 2100-07-01 is summer by the footer rule, 2100-01-01 winter.
        #expect(r2.utcOffset(at: Instant(seconds: 4_118_083_200)) == 7200)
        #expect(r2.utcOffset(at: Instant(seconds: 4_102_444_800)) == 3600)
        #expect(r2.abbreviation(at: Instant(seconds: 4_118_083_200)) == "CEST")
        // Damaged data is an error, never a crash.
        for cut in [0, 3, 10, 44, 60, v2.count - 30] {
            #expect(throws: TimeSyntaxError.self) { try TimeZoneRules(identifier: "Test/Cut", tzif: Array(v2.prefix(cut))) }
        }
        #expect(throws: TimeSyntaxError.self) { try TimeZoneRules(identifier: "x", tzif: Array("TZjf".utf8) + v2.dropFirst(4)) }
    }

    @Test func directory() throws {
        #expect(throws: TimeSyntaxError.self) { try Zones.directory.rules(named: "Mars/Olympus") }
        #expect(throws: TimeSyntaxError.self) { try Zones.directory.rules(named: "../../etc/passwd") }
        #expect(throws: TimeSyntaxError.self) { try Zones.directory.rules(named: "/etc/localtime") }
        #expect(try Zones.directory.rules(named: "UTC") == .utc)
        #expect(Zones.directory.defaultZone(tz: "Asia/Kolkata").identifier == "Asia/Kolkata")
        #expect(Zones.directory.defaultZone(tz: ":Europe/Berlin").identifier == "Europe/Berlin")
        let posix = Zones.directory.defaultZone(tz: "EST5EDT,M3.2.0,M11.1.0")
        #expect(posix.utcOffset(at: Instant(seconds: 1_782_864_000)) == -4 * 3600) // July 2026
        #expect(Zones.directory.defaultZone(tz: "No/Such_Zone") == .utc)
        #expect(ZoneInfoDirectory.isValidName("America/Argentina/Buenos_Aires"))
        #expect(!ZoneInfoDirectory.isValidName("Europe//Berlin"))
        #expect(!ZoneInfoDirectory.isValidName("Europe/Berlin/"))
    }

    struct UnknownNameRow: CustomTestStringConvertible, Sendable {
        let name: String
        /// What the message says after the name (nil: nothing).
        let hint: String?
        var testDescription: String { "'\(name)'" }
    }

    /// People write offsets where a zone name goes; the message says which fixed-offset zone
    /// they mean (the `Etc` names are signed the POSIX way, opposite to the offset), and each
    /// one it names must exist and have that offset.
    @Test("an unknown zone's message says what the name looks like", arguments: [
        UnknownNameRow(name: "+01:00", hint: "a UTC offset, not a zone name: 'Etc/GMT-1' is UTC+01:00 all year; a place's zone, such as 'Europe/Berlin', also follows its daylight saving time"),
        UnknownNameRow(name: "UTC+1", hint: "a UTC offset, not a zone name: 'Etc/GMT-1' is UTC+01:00 all year; a place's zone, such as 'Europe/Berlin', also follows its daylight saving time"),
        UnknownNameRow(name: "gmt-0500", hint: "a UTC offset, not a zone name: 'Etc/GMT+5' is UTC-05:00 all year; a place's zone, such as 'Europe/Berlin', also follows its daylight saving time"),
        UnknownNameRow(name: "+14", hint: "a UTC offset, not a zone name: 'Etc/GMT-14' is UTC+14:00 all year; a place's zone, such as 'Europe/Berlin', also follows its daylight saving time"),
        UnknownNameRow(name: "-12:00", hint: "a UTC offset, not a zone name: 'Etc/GMT+12' is UTC-12:00 all year; a place's zone, such as 'Europe/Berlin', also follows its daylight saving time"),
        UnknownNameRow(name: "+05:30", hint: "a UTC offset, not a zone name: name a place's zone, such as 'Asia/Kolkata'"),
        UnknownNameRow(name: "-13", hint: "a UTC offset, not a zone name: name a place's zone, such as 'Asia/Kolkata'"),
        UnknownNameRow(name: "+00:00", hint: "a UTC offset, not a zone name: the zone is 'UTC'"),
        UnknownNameRow(name: "../x", hint: "zone names are like 'America/New_York': letters, digits, '-', '_' and '+', with '/' between parts"),
        UnknownNameRow(name: "Europe/Berlin ", hint: "zone names are like 'America/New_York': letters, digits, '-', '_' and '+', with '/' between parts"),
        UnknownNameRow(name: "+15", hint: nil),
        UnknownNameRow(name: "Mars/Olympus", hint: nil),
    ])
    func unknownNameHint(_ row: UnknownNameRow) throws {
        let expected = "unknown time zone '\(row.name)'" + (row.hint.map { " (\($0))" } ?? "")
        do {
            _ = try Zones.directory.rules(named: row.name)
            Issue.record("\(row.testDescription) was taken for a zone")
        } catch {
            #expect(error.message == expected, "\(row.testDescription)")
        }
        #expect(ZoneInfoDirectory.unknownZoneMessage(row.name, in: "[daemon] 'timezone'") == expected + " in [daemon] 'timezone'",
                "\(row.testDescription)")
        if let hint = row.hint, let named = hint.firstRange(of: "'Etc/")?.lowerBound {
            let zone = String(hint[hint.index(after: named)...].prefix { $0 != "'" })
            let shown = hint[hint.range(of: " is UTC")!.upperBound...].prefix(6)
            let sign = shown.first == "+" ? 1 : -1
            let hours = Int(shown.dropFirst().prefix(2))!
            let rules = try Zones.directory.rules(named: zone)
            #expect(rules.utcOffset(at: Instant(seconds: 1_782_864_000)) == sign * hours * 3600, "\(row.testDescription): \(zone)")
        }
    }
}

@Suite("Timestamps")
struct TimestampTests {
    static let now = Instant(seconds: 1_774_000_000)

    @Test func parsing() throws {
        #expect(try Timestamp.parse("2026-12-01T18:00:00+01:00", now: Self.now) == Instant(seconds: 1_796_144_400))
        #expect(try Timestamp.parse("2026-12-01T17:00:00Z", now: Self.now) == Instant(seconds: 1_796_144_400))
        #expect(try Timestamp.parse("2026-12-01 17:00:00z", now: Self.now) == Instant(seconds: 1_796_144_400))
        #expect(try Timestamp.parse("2026-12-01T12:00:00.25-05:00", now: Self.now) == Instant(microseconds: 1_796_144_400_250_000))
        #expect(try Timestamp.parse("@1774000000", now: .init(seconds: 0)) == Self.now)
        #expect(try Timestamp.parse("@1774000000.5", now: .init(seconds: 0)) == Instant(microseconds: 1_774_000_000_500_000))
        #expect(try Timestamp.parse("+1h 30min", now: Self.now) == Self.now + .minutes(90))
        #expect(try Timestamp.parse("+90", now: Self.now) == Self.now + .seconds(90))
    }

    @Test("invalid timestamps name the column", arguments: [
        ("", 1), ("2026-13-01T00:00:00Z", 6), ("2026-02-29T00:00:00Z", 9), ("2026-02-28T24:00:00Z", 12),
        ("2026-02-28T00:00:00", 20), ("2026-02-28T00:00:00+1:00", 22), ("@", 2), ("@12x", 4), ("+", 2), ("+5 parsecs", 4),
        ("tomorrow", 9), ("2026-02-28T00:00:60Z", 18), ("Fri 2026-02-28 00:00 UTC", 1), ("18:00", 6),
    ])
    func invalid(_ text: String, column: Int) {
        do {
            _ = try Timestamp.parse(text, now: Self.now)
            Issue.record("'\(text)' accepted")
        } catch {
            #expect(error.column == column, "'\(text)': \(error)")
            #expect(error.code == .invalidTimestamp || error.code == .invalidDuration, "'\(text)'")
        }
    }

    @Test func printing() throws {
        #expect(Timestamp.rfc3339UTC(Self.now) == "2026-03-20T09:46:40Z")
        #expect(Timestamp.rfc3339UTC(Self.now + TimeSpan(microseconds: 500_000)) == "2026-03-20T09:46:40.5Z")
        #expect(Timestamp.rfc3339UTC(Self.now + TimeSpan(microseconds: 1)) == "2026-03-20T09:46:40.000001Z")
        #expect(Timestamp.rfc3339UTC(Instant(seconds: -1)) == "1969-12-31T23:59:59Z")
        let ny = try Zones.directory.rules(named: "America/New_York")
        #expect(Timestamp.rfc3339(Self.now, in: ny) == "2026-03-20T05:46:40-04:00")
        let kolkata = try Zones.directory.rules(named: "Asia/Kolkata")
        #expect(Timestamp.rfc3339(Self.now, in: kolkata) == "2026-03-20T15:16:40+05:30")
    }

    @Test func localResolution() throws {
        let berlin = try Zones.directory.rules(named: "Europe/Berlin")
        // Skipped: 02:30 on spring-forward day lands an hour later, at 03:30 CEST.
        let skipped = Timestamp.instant(of: CivilDateTime(year: 2026, month: 3, day: 29, hour: 2, minute: 30), in: berlin)
        #expect(Timestamp.rfc3339UTC(skipped) == "2026-03-29T01:30:00Z")
        // Repeated: 02:30 on fall-back day takes the first (CEST) reading.
        let repeated = Timestamp.instant(of: CivilDateTime(year: 2026, month: 10, day: 25, hour: 2, minute: 30), in: berlin)
        #expect(Timestamp.rfc3339UTC(repeated) == "2026-10-25T00:30:00Z")
        let plain = Timestamp.instant(of: CivilDateTime(year: 2026, month: 7, day: 1, hour: 12, microsecond: 7), in: berlin)
        #expect(plain == Instant(microseconds: 1_782_900_000_000_007))
    }
}
