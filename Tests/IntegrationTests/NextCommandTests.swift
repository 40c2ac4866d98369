import Foundation
import Testing
import TocsinTesting
import TocsinTime

/// Runs the built `tocsin next` and compares it with `systemd-analyze calendar`.
@Suite("tocsin next")
struct NextCommandTests {
    /// The `tocsin` built with this test runner: under `--scratch-path .build-asan` that is the
    /// sanitized one, which is the binary the sanitizer runs must exercise.
    static let binary = Products.executable("tocsin")

    static func run(_ executable: String, _ arguments: [String], tz: String?) throws -> (status: Int32, out: String, err: String) {
        var env = ["LANG": "C", "PATH": "/usr/bin:/bin"]
        if let tz { env["TZ"] = tz }
        let run = try runBlocking(executable, arguments, environment: env)
        return (run.status, run.stdout, run.stderr)
    }

    static let cases: [(expr: String, zone: String, base: Int64)] = [
        ("Mon..Fri 7:30", "Europe/Berlin", 1_774_700_000),
        ("*:0/20", "America/Santiago", 1_757_216_000),
        ("*-*-* 02:30", "America/New_York", 1_772_900_000),
        ("*:00,30", "Australia/Lord_Howe", 1_759_588_000),
        ("*-02~1 12:00", "Asia/Kolkata", 1_774_000_000),
        ("2020-01-01", "UTC", 1_774_000_000),
        ("daily Europe/Berlin", "America/New_York", 1_792_880_000),
        ("*:*:0/7.5", "UTC", 1_774_000_000),
    ]

    @Test("JSON output matches systemd-analyze", arguments: cases.indices)
    func json(index: Int) throws {
        let c = Self.cases[index]
        let row = "expr='\(c.expr)' zone=\(c.zone) base=@\(c.base)"
        let oracle = try SystemdOracle.run(zone: c.zone, base: c.base, iterations: 4, expressions: [c.expr])
        let reference = try #require(oracle[c.expr], "\(row)")
        let result = try Self.run(Self.binary, ["next", "--json", "--from", "@\(c.base)", "--count", "4", c.expr], tz: c.zone)
        #expect(result.status == 0, "\(row): \(result.err)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(result.out.utf8)) as? [String: Any], "\(row)")
        #expect(object["expression"] as? String == c.expr, "\(row)")
        #expect(object["normalized"] as? String == reference.normalized, "\(row)")
        let next = try #require(object["next"] as? [String], "\(row)")
        let seconds = try next.map { text in try Timestamp.parse(text, now: Instant(seconds: 0)).seconds }
        #expect(seconds == reference.elapses.map(\.utcSeconds), "\(row): \(next)")
        let spec = try CalendarSpec.parse(c.expr)
        #expect(object["timezone"] as? String == (spec.timeZoneName ?? c.zone), "\(row)")
    }

    @Test("human output matches systemd-analyze line for line, except the relative time")
    func human() throws {
        for c in Self.cases {
            let row = "expr='\(c.expr)' zone=\(c.zone) base=@\(c.base)"
            let ours = try Self.run(Self.binary, ["next", "--from", "@\(c.base)", "--count", "3", c.expr], tz: c.zone)
            let theirs = try Self.run(SystemdOracle.executable, ["calendar", "--base-time=@\(c.base)", "--iterations=3", c.expr], tz: c.zone)
            func strip(_ s: String) -> [String] { s.split(separator: "\n").map(String.init).filter { !$0.contains("From now:") } }
            #expect(strip(ours.out) == strip(theirs.out), "\(row)")
        }
    }

    /// systemd-analyze measures "From now" from the real now whatever --base-time says; so does
    /// `tocsin next --from`. Both run within milliseconds, and at these distances the rendering
    /// changes once a day at most.
    @Test("regression: 'From now' is measured from the real now, not from --from, as systemd-analyze --base-time")
    func fromNowIsTheRealNow() throws {
        for base: Int64 in [1_700_000_000, 1_774_700_000] {
            let expr = "daily"
            let ours = try Self.run(Self.binary, ["next", "--from", "@\(base)", "--count", "2", expr], tz: "Europe/Berlin")
            let theirs = try Self.run(SystemdOracle.executable, ["calendar", "--base-time=@\(base)", "--iterations=2", expr], tz: "Europe/Berlin")
            func fromNow(_ s: String) -> [String] { s.split(separator: "\n").map(String.init).filter { $0.contains("From now:") } }
            #expect(fromNow(ours.out).count == 2, "base @\(base): \(ours.out) \(ours.err)")
            #expect(fromNow(ours.out) == fromNow(theirs.out), "base @\(base): ours \(fromNow(ours.out)), systemd \(fromNow(theirs.out))")
            #expect(fromNow(ours.out).allSatisfy { $0.hasSuffix(" ago") }, "base @\(base): \(ours.out)")
        }
    }

    @Test("ten or more elapses are right-aligned as systemd-analyze has them")
    func iterationLabelsAlign() throws {
        let ours = try Self.run(Self.binary, ["next", "--from", "@1774000000", "--count", "11", "daily"], tz: "UTC")
        let theirs = try Self.run(SystemdOracle.executable, ["calendar", "--base-time=@1774000000", "--iterations=11", "daily"], tz: "UTC")
        func labels(_ s: String) -> [String] { s.split(separator: "\n").map(String.init).filter { $0.contains("Iter. #") } }
        #expect(labels(ours.out).count == 10, "\(ours.out)")
        #expect(labels(ours.out) == labels(theirs.out), "ours \(labels(ours.out)), systemd \(labels(theirs.out))")
    }

    @Test func invalidExpressionNamesTheColumn() throws {
        let result = try Self.run(Self.binary, ["next", "Mon *-*-* 25:00"], tz: "UTC")
        #expect(result.status == 64, "a usage error: \(result.err)")
        #expect(result.err.hasPrefix("Error: "))
        #expect(result.err.contains("column 11"), "\(result.err)")
        #expect(result.out.isEmpty)
    }

    @Test func everyPeriod() throws {
        let result = try Self.run(Self.binary, ["next", "--json", "--from", "2026-03-20T10:00:00Z", "--count", "3", "--every", "90min"], tz: "UTC")
        #expect(result.status == 0, "\(result.err)")
        #expect(result.out.contains("\"next\": [\"2026-03-20T11:30:00Z\", \"2026-03-20T13:00:00Z\", \"2026-03-20T14:30:00Z\"]"), "\(result.out)")
        let zero = try Self.run(Self.binary, ["next", "--every", "0", "--from", "@0"], tz: "UTC")
        #expect(zero.status != 0)
        #expect(zero.err.contains("column"), "\(zero.err)")
    }

    @Test("a period given where the calendar expression goes is pointed to --every; other mistakes are not",
          arguments: [("every 5m", "(for a period, give --every '5m')"), ("90min", "(for a period, give --every '90min')"),
                      ("Mon..Fri 25:00", nil)] as [(String, String?)])
    func periodAsExpression(_ expression: String, _ hint: String?) throws {
        let r = try Self.run(Self.binary, ["next", expression], tz: "UTC")
        #expect(r.status == 64, "\(expression): \(r.err)")
        #expect(r.err.hasPrefix("Error: invalid calendar expression '\(expression)': column "), "\(expression): \(r.err)")
        // The message is the first line; the usage line after it names --every in any case.
        let message = r.err.split(separator: "\n").first.map(String.init) ?? ""
        #expect(message.contains("--every") == (hint != nil), "\(expression): \(r.err)")
        if let hint { #expect(message.hasSuffix(hint), "\(expression): \(r.err)") }
    }

    @Test("--from in systemd's local forms is read in --timezone, else in TZ; as @unix the same elapses")
    func fromLocalForms() throws {
        func next(_ args: [String], tz: String) throws -> String {
            let r = try Self.run(Self.binary, ["next", "--json", "--count", "2"] + args, tz: tz)
            #expect(r.status == 0, "\(args): \(r.err)")
            let object = try JSONSerialization.jsonObject(with: Data(r.out.utf8)) as? [String: Any]
            return (object?["next"] as? [String])?.joined(separator: " ") ?? "none: \(r.out)"
        }
        // 2026-03-28 12:00 in Berlin (CET) is 11:00Z, @1774695600.
        let reference = try next(["--from", "@1774695600", "--timezone", "Europe/Berlin", "*-*-* 02:30"], tz: "UTC")
        #expect(try next(["--from", "2026-03-28 12:00", "--timezone", "Europe/Berlin", "*-*-* 02:30"], tz: "UTC") == reference)
        #expect(try next(["--from", "Sat 2026-03-28 12:00:00", "*-*-* 02:30"], tz: "Europe/Berlin") == reference)
        #expect(try next(["--from", "2026-03-28 11:00 UTC", "*-*-* 02:30"], tz: "Asia/Kolkata")
                == next(["--from", "@1774695600", "*-*-* 02:30"], tz: "Asia/Kolkata"))
        let wrong = try Self.run(Self.binary, ["next", "--from", "Fri 2026-03-28", "daily"], tz: "UTC")
        #expect(wrong.status != 0)
        #expect(wrong.err.contains("invalid --from 'Fri 2026-03-28': column 1: 2026-03-28 is a Saturday, not a Friday"), "\(wrong.err)")
    }

    @Test func neverElapsingIsAnEmptyList() throws {
        let result = try Self.run(Self.binary, ["next", "--json", "--from", "@1774000000", "2020-01-01"], tz: "UTC")
        #expect(result.out.contains("\"next\": []"), "\(result.out)")
    }
}

/// `tocsin next --dst-gap/--dst-fold` shows what a notification's policies do, marking each added elapse.
@Suite("tocsin next DST policy")
struct NextCommandDSTPolicyTests {
    @Test func gapShiftAddsTheEndOfTheGap() throws {
        let args = ["next", "--json", "--from", "@1774652400", "--count", "3", "--timezone", "Europe/Berlin"]
        let plain = try NextCommandTests.run(NextCommandTests.binary, args + ["*-*-* 02:30"], tz: "UTC")
        #expect(plain.status == 0, "\(plain.err)")
        #expect(plain.out.contains("\"next\": [\"2026-03-28T01:30:00Z\", \"2026-03-30T00:30:00Z\", \"2026-03-31T00:30:00Z\"]"), "\(plain.out)")
        let shifted = try NextCommandTests.run(NextCommandTests.binary, args + ["--dst-gap", "shift", "*-*-* 02:30"], tz: "UTC")
        #expect(shifted.status == 0, "\(shifted.err)")
        #expect(shifted.out.contains("\"dst_gap\": \"shift\""), "\(shifted.out)")
        #expect(shifted.out.contains("\"next\": [\"2026-03-28T01:30:00Z\", \"2026-03-29T01:00:00Z\", \"2026-03-30T00:30:00Z\"]"), "\(shifted.out)")
    }

    @Test func foldBothIsMarkedInTheHumanOutput() throws {
        let result = try NextCommandTests.run(NextCommandTests.binary,
                                              ["next", "--from", "@1793419200", "--count", "3", "--timezone", "America/New_York",
                                               "--dst-fold", "both", "*-*-* 01:30"], tz: "UTC")
        #expect(result.status == 0, "\(result.err)")
        let lines = result.out.split(separator: "\n").map(String.init)
        #expect(lines.contains("       Iter. #2: Sun 2026-11-01 01:30:00 EDT"), "\(result.out)")
        #expect(lines.contains("       Iter. #3: Sun 2026-11-01 01:30:00 EST (dst_fold=both)"), "\(result.out)")
    }

    @Test("regression: --dst-fold both marks every time of the repeated hour it adds, not only the first")
    func foldBothMarksEachAddedTime() throws {
        let result = try NextCommandTests.run(NextCommandTests.binary,
                                              ["next", "--from", "2026-10-24T12:00:00Z", "--count", "10", "--dst-fold", "both",
                                               "02:00,15,30,45"], tz: "Europe/Berlin")
        #expect(result.status == 0, "\(result.err)")
        let elapses = result.out.split(separator: "\n").map(String.init).filter { $0.contains("Next elapse:") || $0.contains("Iter. #") }
        let expected = [
            "    Next elapse: Sun 2026-10-25 02:00:00 CEST", "       Iter. #2: Sun 2026-10-25 02:15:00 CEST",
            "       Iter. #3: Sun 2026-10-25 02:30:00 CEST", "       Iter. #4: Sun 2026-10-25 02:45:00 CEST",
            "       Iter. #5: Sun 2026-10-25 02:00:00 CET (dst_fold=both)", "       Iter. #6: Sun 2026-10-25 02:15:00 CET (dst_fold=both)",
            "       Iter. #7: Sun 2026-10-25 02:30:00 CET (dst_fold=both)", "       Iter. #8: Sun 2026-10-25 02:45:00 CET (dst_fold=both)",
            "       Iter. #9: Mon 2026-10-26 02:00:00 CET", "      Iter. #10: Mon 2026-10-26 02:15:00 CET",
        ]
        for (i, line) in expected.enumerated() {
            #expect(elapses.indices.contains(i) && elapses[i] == line, "elapse \(i + 1): want '\(line)', got \(elapses.indices.contains(i) ? "'\(elapses[i])'" : "nothing")")
        }
    }

    @Test func badPolicyIsRefusedByName() throws {
        let result = try NextCommandTests.run(NextCommandTests.binary, ["next", "--dst-gap", "later", "daily"], tz: "UTC")
        #expect(result.status != 0)
        #expect(result.err.contains("--dst-gap must be 'skip' or 'shift', found 'later'"), "\(result.err)")
        #expect(result.out.isEmpty)
    }
}
