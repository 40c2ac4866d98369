import Testing
import TocsinCore
import TocsinModel
import TocsinTime

/// `--at 18:00` and `--at tomorrow` (systemd's forms, `Timestamp.parseWritten`): the day is the
/// one the notification is scheduled on, in its zone, and a time of today that has passed is
/// refused in words that say so.
@Suite("A time of day is read on the day of scheduling, in the notification's zone")
struct TimeOfDayTests {
    /// t0 is 10:00 in Berlin (CET) and 04:00 in New York (EST).
    static func berlin() async throws -> Harness {
        let zone = try ZoneInfoDirectory().rules(named: "Europe/Berlin")
        return try await Harness { $0 = CenterOptions(defaultZone: zone) }
    }

    struct Row: Sendable, CustomTestStringConvertible {
        let name: String
        let value: TimeValue
        let timezone: String?
        let due: String
        var testDescription: String { name }
    }

    static let rows: [Row] = [
        Row(name: "18:00 in the daemon's zone", value: .day(days: 0, time: TimeOfDay(hour: 18)), timezone: nil, due: "2026-03-02T17:00:00Z"),
        Row(name: "07:00 in the notification's zone, still ahead there", value: .day(days: 0, time: TimeOfDay(hour: 7)),
            timezone: "America/New_York", due: "2026-03-02T12:00:00Z"),
        Row(name: "tomorrow: the next midnight in the daemon's zone", value: .day(days: 1, time: TimeOfDay()), timezone: nil,
            due: "2026-03-02T23:00:00Z"),
        Row(name: "a date and time without a zone, in the notification's", value: .local(CivilDateTime(year: 2026, month: 3, day: 5, hour: 8)),
            timezone: "Asia/Tokyo", due: "2026-03-04T23:00:00Z"),
    ]

    @Test("the notification falls due on the day and in the zone meant", arguments: rows)
    func due(_ row: Row) async throws {
        let h = try await Self.berlin()
        var s = spec("tea", .at(row.value))
        s.timezone = row.timezone
        _ = try await h.center.schedule(s)
        let next = try #require(await h.center.nextDue())
        #expect(Timestamp.rfc3339UTC(next.instant) == row.due, "\(row.name)")
        // The claim is made ahead of the instant (one wake-up), the delivery at it (the next).
        for _ in 0..<3 where await h.settled().isEmpty { _ = try await h.wake() }
        let delivered = await h.settled()
        #expect(delivered.map(\.key) == ["tea"], "\(row.name)")
        #expect(delivered.map { Timestamp.rfc3339UTC($0.fired) } == [row.due], "\(row.name)")
    }

    @Test("a time of today that has passed is refused, naming tomorrow's date to give instead")
    func passedToday() async throws {
        let h = try await Self.berlin()
        await #expect(throws: CenterError(.invalidTrigger, "'at' is in the past: a time alone is today's, and 09:30 today has passed; "
                                          + "a past time is never delivered (for tomorrow's, give its date: 2026-03-03 09:30)", field: "at")) {
            try await h.center.schedule(spec("tea", .at(.day(days: 0, time: TimeOfDay(hour: 9, minute: 30)))))
        }
        await #expect(throws: CenterError(.invalidTrigger, "'at' is in the past; a past time is never delivered", field: "at")) {
            try await h.center.schedule(spec("tea", .at(.day(days: -1, time: TimeOfDay()))))
        }
        let left = await h.center.nextDue()
        #expect(left == nil)
    }

    /// A config that loaded in the morning must load again in the afternoon: the same time,
    /// past, is an entry skipped as a past full date is, not a refusal of the whole config.
    @Test("a time of today that has passed, in the config, is kept and skipped as a past date is; check reports it", arguments: [
        TimeValue.day(days: 0, time: TimeOfDay(hour: 9, minute: 30)),
        .day(days: 0, time: TimeOfDay()),
    ])
    func passedTodayInConfig(_ value: TimeValue) async throws {
        let h = try await Self.berlin()
        let entries = [spec("tea", .at(value)), spec("later", .at(.day(days: 0, time: TimeOfDay(hour: 18))))]
        let report = try await h.center.applyConfig(entries)
        #expect(report.skipped == ["tea"], "\(value)")
        #expect(await h.center.nextDue()?.key == "later", "\(value)")
        let warned = h.options.neverFiring(entries, backendNames: [], now: t0)
        #expect(warned.map(\.spec.key) == ["tea"], "\(value)")
        #expect(warned.map(\.reason) == [CenterError(.invalidTrigger, "'at' is in the past; a past time is never delivered", field: "at")],
                "\(value)")
    }
}
