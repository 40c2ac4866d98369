import Foundation
import Testing
import TocsinTesting
@testable import TocsinTime

/// Differential tests: our parser and next-elapse search against `systemd-analyze calendar`.
@Suite("Calendar expressions vs systemd-analyze")
struct CalendarDifferentialTests {
    /// The six zones the product must get right, plus Dublin, whose negative DST exercises the
    /// stable-branch fix systemd 252 carries for it.
    static let zones = ["UTC", "Europe/Berlin", "America/New_York", "America/Santiago", "Australia/Lord_Howe", "Asia/Kolkata", "Europe/Dublin"]
    static let iterations = 5

    /// Hand-picked expressions covering every operator, shorthands and DST-sensitive times.
    static let table: [String] = [
        "minutely", "hourly", "daily", "weekly", "monthly", "yearly", "annually", "anually", "quarterly",
        "semiannually", "semi-annually", "biannually", "bi-annually", "DAILY", "Hourly",
        "*-*-* *:*:*", "*-*-* *:*:00", "*:0/15", "*:0/20", "*:5,35", "*-*-* 00/2:00", "*:*:0/10",
        "*-*-* 02:30", "*-*-* 02:00", "*-*-* 01:30", "*-*-* 00:00", "*-*-* 00:30", "*-*-* 03:00", "*-*-* 23:59:59",
        "*-*-* 02,03:00,30", "*-*-* 01..03:15:00", "*-*-* 00..03:00/30:00", "*-*-* 1:0/10",
        "Mon *-*-* 00:00:00", "Mon..Fri 07:30", "Sat,Sun 10:00", "Mon,Wed..Fri 12:00", "mon-wed 9:00",
        "Sun *-*-* 02:30", "Sun 00:00", "Sunday,Monday 3:00", "Mon,Tue,Wed,Thu,Fri,Sat,Sun 6:00",
        "Mon,Wed,Fri,Sun 1:00", "Tue..Thu,Sat 8:00",
        "*-02~1", "*-02~01 12:00", "*-*~1", "*-*~3", "*-*~7/1", "Mon *-05~07/1", "Fri *-*~7/1 18:00",
        "*-*~1..3", "*-*~28", "*-02~*", "*-*~1,15",
        "*-*-31", "*-*-30", "*-02-29", "*-02-28..29", "*-02-29 12:00", "2028-02-29", "*-*-29..31",
        "*-*-01", "*-*-1/7", "*-*-01..07 Mon 00:00", "Mon *-*-01..07 00:00", "*-1,4,7,10-1", "*-01/3-01",
        "*-12-31 23:59:59", "*-01-01 00:00:00", "2026-*-* 00:00", "2026..2027-*-01", "2025/1-06-01",
        "2027-03-14 02:30", "2026-03-29 02:30", "2026-10-25 02:30", "2026-11-01 01:30",
        "2026-04-05 00:00", "2026-09-06 00:00", "2026-09-06 00:30", "2026-04-04 23:30", "2026-04-05 23:59",
        "2026-10-04 02:15", "2026-04-05 01:45", "2026-04-05 01:30",
        "12:00", "9:5", "0:0:0.5", "*:*:0.25/0.5", "*:*:1.5..4", "*:*:0..59/7.5", "12:30:15.123456",
        "*-*-* *:00/7:00", "*:*:00/13", "*-*-* 04:05:06.700000..08/0.5",
        "12,14,13,12:00", "1..3,2-1", "*-*-1..1", "*-*-01..03/5", "*-*-3..1",
        "daily UTC", "hourly UTC", "*-*-* 02:30 UTC", "Mon 2026-*-* 00:00 UTC", "*-*-* 06:00 Europe/Berlin",
        "*-*-* 02:30 America/New_York", "*-*-* 00:00 America/Santiago", "*-*-* 02:00 Australia/Lord_Howe",
        "*-*-* 05:30 Asia/Kolkata", "daily Asia/Tokyo", "*:30 Australia/Lord_Howe",
        "2199-12-31", "2020-01-01", "1970-01-01 00:00", "69-1-1", "99-12-31", "@1774000000", "@1893456000",
        "daily CET", "daily CEST", "*-*-* 02:30 CET", "*-*-* 02:30 cest", "12:00 EDT", "*:0/30 EST", "daily IST",
        "daily -03", "daily -04", "*-*-* 00:00 -04", "daily +11", "daily +1030", "*-*-* 02:15 +1030", "hourly EST5EDT",
        "*-*-31 Tue", "Tue *-*-31", "Tue *-02-29", "Fri *-*-13 13:13", "Mon 2026-03-30",
    ]

    /// Expressions systemd refuses; we must refuse them too.
    static let invalid: [String] = [
        "", " ", "bogus", "*:50/10", "*-*-31/2", "*-*~29", "*-*~1/27", "*-*~1/28", "Mon 2026-13-01",
        "00:00:60", "0:0:59.9999999", "1969-1-1", "2200-01-01", "*:*/5", "*/2-1", "Mon,,Tue", "Mon..",
        "Wed..Mon", "Mon.Tue", "Mon..Wed..Fri", "daily foo", "*-*-* 12:00 europe/berlin", "0:0:5.",
        "*-*-* 24:00", "*-*-* 12:60", "*-*-0", "*-*-32", "*-0-1", "*-13-1", "*-*-1/0", "*:0/0",
        "*:*:1.5..2", "12", "12:", ":30", "1-2-3-4", "*-*~1~1", "*-*-* 1:2:3:4", "Monday2",
        "*-*-* 12:00 Mars/Olympus", "5..3:00", "*-*-1..40", "1:2 3", "2026-*-* ~1", "*-*-* *:*:*.5",
        "@", "@abc", "@7258118400", "2026-02-30x", "12:00,", "*,1:00", "1..:00", "1/:00",
        "99999999999:00", "*:*:2147483648", "*:*:3000", "*-*-1,", "Mon *-*-* 12:00 Asia/Kolkata UTC",
    ]

    static func bases(for zone: TimeZoneRules) -> [Int64] {
        var out: [Int64] = [
            1_774_000_000,            // 2026-03-20, an ordinary day
            1_798_761_599,            // 2026-12-31 23:59:59 UTC, year end
            1_772_323_199,            // 2026-02-28 23:59:59 UTC, February end
            1_835_395_200 - 43_200,   // 2028-02-28 12:00 UTC, before a leap day
            1_777_593_599,            // 2026-04-30 23:59:59 UTC, 30-day month end
            1_835_438_400,            // 2028-02-29 12:00 UTC, on a leap day
        ]
        // Local month ends in 2026 (31, 28, 30-day months and the year end): the last second in the zone itself.
        for month in [2, 4, 12] {
            let next = CivilDateTime(year: month == 12 ? 2027 : 2026, month: month == 12 ? 1 : month + 1, day: 1)
            out.append(Timestamp.instant(of: next, in: zone).seconds - 1)
        }
        // 2025-01-01 ... 2028-01-01: around every offset change.
        for t in Zones.transitions(zone, from: 1_735_689_600, to: 1_830_297_600) {
            out += [t - 5_400, t - 1, t + 1_799]
        }
        return out
    }

    static func generated(seed: UInt64, count: Int) -> [String] {
        var rng = SplitMix64(state: seed)
        func pick<T>(_ a: [T]) -> T { a[Int(rng.next() % UInt64(a.count))] }
        func num(_ range: ClosedRange<Int>) -> Int { range.lowerBound + Int(rng.next() % UInt64(range.count)) }
        func field(_ range: ClosedRange<Int>, star: Int = 40) -> String {
            if num(0...99) < star { return "*" }
            var parts: [String] = []
            for _ in 0..<num(1...2) {
                let a = num(range)
                switch num(0...4) {
                case 0: parts.append("\(a)")
                case 1: parts.append("\(a)..\(min(range.upperBound, a + num(0...6)))")
                case 2: parts.append("\(a)/\(num(1...max(1, (range.upperBound - range.lowerBound) / 2)))")
                case 3: parts.append("\(a)..\(min(range.upperBound, a + num(1...10)))/\(num(1...3))")
                default: parts.append("\(a)")
                }
            }
            return parts.joined(separator: ",")
        }
        let days = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun", "monday", "Friday", "SUN"]
        let shorthands = ["minutely", "hourly", "daily", "weekly", "monthly", "yearly", "quarterly", "semiannually"]
        let zones = [" UTC", " Europe/Berlin", " America/New_York", " America/Santiago", " Australia/Lord_Howe", " Asia/Kolkata", " utc"]
        var out: Set<String> = []
        while out.count < count {
            var s = ""
            if num(0...19) == 0 {
                s = pick(shorthands) + (num(0...1) == 0 ? pick(zones) : "")
                out.insert(s)
                continue
            }
            if num(0...99) < 35 {
                let a = num(0...6)
                let names = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]
                switch num(0...3) {
                case 0: s += pick(days)
                case 1: s += "\(names[a])..\(names[min(6, a + num(1...4))])"
                case 2: s += "\(names[a])-\(names[min(6, a + num(1...3))])"
                default: s += "\(pick(days)),\(pick(days))"
                }
                s += " "
            }
            let year = num(0...9) < 7 ? "*" : pick(["2026", "2025..2027", "2026/1", "2027", "2025,2027", "26", "2028"])
            let month = field(1...12, star: 55)
            let eom = num(0...7) == 0
            let day = eom ? "\(num(1...7))\(num(0...1) == 0 ? "" : "/\(num(1...3))")" : field(1...31, star: 55)
            switch num(0...2) {
            case 0: s += "\(year)-\(month)\(eom ? "~" : "-")\(day)"
            case 1: s += "\(month)\(eom ? "~" : "-")\(day)"
            default: break
            }
            if num(0...7) != 0 || s.isEmpty {
                if !s.isEmpty { s += " " }
                let hour = field(0...23, star: 30)
                let minute = field(0...59, star: 30)
                s += "\(hour):\(minute)"
                if num(0...2) == 0 {
                    switch num(0...4) {
                    case 0: s += ":\(num(0...59)).5"
                    case 1: s += ":\(num(0...20))/\(num(1...20)).25"
                    default: s += ":" + field(0...59, star: 30)
                    }
                }
            }
            if num(0...11) == 0 { s += pick(zones) }
            out.insert(s.trimmingCharacters(in: .whitespaces))
        }
        return out.sorted()
    }

    @Test("systemd parity", arguments: zones)
    func parity(zoneName: String) throws {
        let zone = try #require(Zones.load(zoneName), "zone \(zoneName) must be installed")
        let seed = UInt64(0x70C5_1000) &+ UInt64(Self.zones.firstIndex(of: zoneName) ?? 0)
        let expressions = Self.table + Self.generated(seed: seed, count: 200)
        let directory = ZoneInfoDirectory()
        var compared = 0
        for base in Self.bases(for: zone) {
            let oracle = try SystemdOracle.run(zone: zoneName, base: base, iterations: Self.iterations, expressions: expressions)
            for expr in expressions {
                let row = "expr='\(expr)' zone=\(zoneName) base=@\(base) seed=\(seed)"
                let reference = oracle[expr]
                let spec: CalendarSpec
                do {
                    spec = try CalendarSpec.parse(expr, localZone: zone)
                } catch {
                    if let reference { Issue.record("we reject what systemd accepts (\(reference.normalized ?? "-")): \(error) — \(row)") }
                    continue
                }
                guard let reference else {
                    Issue.record("we accept what systemd rejects (ours: \(spec.normalized)) — \(row)")
                    continue
                }
                let evalZone = spec.timeZoneName.flatMap { try? directory.rules(named: $0) } ?? zone
                var ours: [Instant] = []
                var cursor = Instant(seconds: base)
                while ours.count < Self.iterations, let t = spec.nextElapse(after: cursor, in: evalZone) {
                    ours.append(t)
                    cursor = t
                }
                if reference.gaveUp {
                    // systemd hit its iteration cap somewhere in the first N elapses. Where it
                    // circled on a time a DST gap skips, Tocsin searches on from the gap's far
                    // side (`systemdPastItsValve`); each elapse it finds must then be systemd's
                    // own from just before it, wherever systemd answers there.
                    let checks = ours.map { (base: $0.seconds - 1, expected: $0.seconds) }
                    for check in checks {
                        guard let again = try SystemdOracle.run(zone: zoneName, base: check.base, iterations: 1, expressions: [expr])[expr],
                              !again.gaveUp else { continue }
                        #expect(again.elapses.first?.utcSeconds == check.expected,
                                "past systemd's give-up, ours @\(check.expected), systemd from @\(check.base) \(again.elapses) — \(row)")
                    }
                    compared += 1
                    continue
                }
                #expect(spec.normalized == reference.normalized, "normalized form — \(row)")
                let oursSeconds = ours.map(\.seconds)
                let theirs = reference.elapses.map(\.utcSeconds)
                #expect(oursSeconds == theirs, "elapses ours=\(ours.map { SystemdOracle.render($0, in: .utc) }) systemd=\(reference.elapses) — \(row)")
                if oursSeconds == theirs {
                    let rendered = ours.map { SystemdOracle.render($0, in: zone) }
                    #expect(rendered == reference.elapses.map(\.local), "local rendering — \(row)")
                }
                compared += 1
            }
        }
        print("systemd parity \(zoneName): \(compared) (expression, base) cases, \(expressions.count) expressions")
        #expect(compared > 1000, "too few comparisons in \(zoneName): \(compared)")
    }

    /// Random strings over the grammar's alphabet: mostly invalid, so this is chiefly a
    /// rejection-parity test, but whatever systemd accepts must normalize and elapse alike.
    @Test("random token strings: accept/reject parity", arguments: ["UTC", "Europe/Berlin"])
    func fuzzParity(zoneName: String) throws {
        let zone = try #require(Zones.load(zoneName))
        var rng = SplitMix64(state: 0xF022_2026)
        let tokens = ["0", "1", "2", "5", "7", "9", "12", "31", "59", "2026", "70", "*", "*", "-", "-", "~", ":", ":", ".", "..",
                      ",", "/", " ", " ", "Mon", "fri", "Sunday", "daily", "UTC", "Europe/Berlin", "CET", "0.5", "@1774000000"]
        var expressions: Set<String> = []
        while expressions.count < 300 {
            let n = 1 + Int(rng.next() % 9)
            expressions.insert((0..<n).map { _ in tokens[Int(rng.next() % UInt64(tokens.count))] }.joined())
        }
        // Near misses: valid expressions with one or two characters deleted, doubled or replaced.
        let seeds = Self.table.filter { !$0.isEmpty }
        while expressions.count < 900 {
            var chars = Array(seeds[Int(rng.next() % UInt64(seeds.count))].unicodeScalars)
            for _ in 0...Int(rng.next() % 2) where !chars.isEmpty {
                let i = Int(rng.next() % UInt64(chars.count))
                switch rng.next() % 3 {
                case 0: chars.remove(at: i)
                case 1: chars.insert(chars[i], at: i)
                default:
                    let alphabet = Array("0123456789*-~:.,/ ".unicodeScalars)
                    chars[i] = alphabet[Int(rng.next() % UInt64(alphabet.count))]
                }
            }
            expressions.insert(String(String.UnicodeScalarView(chars)))
        }
        let list = expressions.sorted()
        let oracle = try SystemdOracle.run(zone: zoneName, base: 1_774_000_000, iterations: 2, expressions: list)
        var accepted = 0
        for expr in list {
            let row = "expr='\(expr)' zone=\(zoneName)"
            let reference = oracle[expr]
            do {
                let spec = try CalendarSpec.parse(expr, localZone: zone)
                guard let reference else {
                    Issue.record("we accept what systemd rejects (ours: \(spec.normalized)) — \(row)")
                    continue
                }
                accepted += 1
                if reference.gaveUp { continue }
                #expect(spec.normalized == reference.normalized, "\(row)")
                let evalZone = spec.timeZoneName.flatMap { Zones.load($0) } ?? zone
                var ours: [Int64] = []
                var cursor = Instant(seconds: 1_774_000_000)
                while ours.count < 2, let t = spec.nextElapse(after: cursor, in: evalZone) { ours.append(t.seconds); cursor = t }
                #expect(ours == reference.elapses.map(\.utcSeconds), "\(row)")
            } catch {
                if let reference { Issue.record("we reject what systemd accepts (\(reference.normalized ?? "-")): \(error) — \(row)") }
                #expect(error.column >= 1 && error.column <= expr.unicodeScalars.count + 1, "\(row): \(error)")
            }
        }
        print("random token strings \(zoneName): \(list.count) strings, \(accepted) accepted by both")
    }

    @Test("systemd rejects, we reject")
    func rejectionParity() throws {
        let oracle = try SystemdOracle.run(zone: "UTC", base: 1_774_000_000, iterations: 1, expressions: Self.invalid)
        for expr in Self.invalid {
            #expect(oracle[expr] == nil, "systemd unexpectedly accepts '\(expr)'")
            do {
                // Through the zone resolution, as every caller does: a trailing word that could be a
                // zone abbreviation only fails there (`daily foo`: no zone and no abbreviation of UTC).
                let spec = try CalendarSpec.parse(expr, localZone: .utc)
                Issue.record("'\(expr)' accepted as '\(spec.normalized)' but systemd rejects it")
            } catch {
                #expect(error.code == .invalidCalendar || error.code == .unknownTimeZone, "'\(expr)': \(error)")
                #expect(error.column >= 1 && error.column <= max(1, expr.unicodeScalars.count + 1), "'\(expr)': column \(error.column)")
            }
        }
    }
}
