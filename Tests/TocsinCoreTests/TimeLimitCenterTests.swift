import Testing
import TocsinConfig
import TocsinCore
import TocsinTesting
import TocsinTime
import TocsinModel

/// One request that reaches past the latest instant Tocsin schedules, with the field it must name.
struct TimeLimitRow: Sendable, CustomTestStringConvertible {
    var name: String
    var trigger: TriggerSpec
    var maxLate: TimeSpan? = nil
    var field: String
    /// The message, exactly.
    var message: String
    var testDescription: String { name }
}

private let past = "reaches past 9999-12-31T23:59:59Z, the latest instant Tocsin schedules"
private let latest = TimeLimit.latest
private let year8000 = TimeSpan.seconds(8000 * 31_557_600)
/// What `tocsin snooze K 9223372036854s` sends: fits an Int64 of microseconds, wraps when added to now.
private let hugeSpan = TimeSpan.seconds(9_223_372_036_854)

/// The range check where a request is made absolute (`SpecResolver`) and where a snooze ends
/// (the machine): what the decoders cannot see without a "now".
@Suite("Time limit: scheduling past 9999-12-31T23:59:59Z")
struct TimeLimitCenterTests {
    static let rows: [TimeLimitRow] = [
        TimeLimitRow(name: "after 8000y from 2026 (year 10026)", trigger: .after(year8000), field: "after",
                     message: "'after' 8000y \(past)"),
        TimeLimitRow(name: "after 9223372036854s (wrapped to year -290251, then 'at' is in the past)", trigger: .after(hugeSpan),
                     field: "after", message: "'after' \(hugeSpan) \(past)"),
        TimeLimitRow(name: "at +8000y", trigger: .at(.relative(year8000)), field: "at", message: "'at' +8000y \(past)"),
        TimeLimitRow(name: "at one second past the latest instant", trigger: .at(.instant(latest + .seconds(1))), field: "at",
                     message: "'at' 10000-01-01T00:00:00Z \(past)"),
        TimeLimitRow(name: "at before year 1", trigger: .at(.instant(TimeLimit.earliest - .seconds(1))), field: "at",
                     message: "'at' 0000-12-31T23:59:59Z is before 0001-01-01T00:00:00Z, the earliest instant Tocsin accepts"),
        TimeLimitRow(name: "every 8000y: its first firing", trigger: .every(year8000, count: nil, starting: nil, until: nil),
                     field: "every", message: "'every' 8000y \(past)"),
        TimeLimitRow(name: "every 1h starting past the latest instant",
                     trigger: .every(.hours(1), count: nil, starting: .instant(latest + .seconds(1)), until: nil),
                     field: "starting", message: "'starting' 10000-01-01T00:00:00Z \(past)"),
        TimeLimitRow(name: "every 1h until past the latest instant",
                     trigger: .every(.hours(1), count: nil, starting: nil, until: .instant(latest + .seconds(1))),
                     field: "until", message: "'until' 10000-01-01T00:00:00Z \(past)"),
        TimeLimitRow(name: "remind_before an event past the latest instant",
                     trigger: .remindBefore(event: .instant(latest + .seconds(1)), offsets: [.hours(1)]),
                     field: "at", message: "'at' 10000-01-01T00:00:00Z \(past)"),
        TimeLimitRow(name: "remind_before an offset longer than the range",
                     trigger: .remindBefore(event: .instant(t0 + .hours(1)), offsets: [hugeSpan]),
                     field: "remind_before", message: "'remind_before' \(hugeSpan) \(past)"),
        TimeLimitRow(name: "max_late longer than the range", trigger: .after(.hours(1)), maxLate: hugeSpan,
                     field: "max_late", message: "'max_late' \(hugeSpan) \(past)"),
    ]

    @Test("regression: each trigger field past the limit is refused by name", arguments: rows)
    func refused(_ row: TimeLimitRow) async throws {
        let h = try await Harness()
        do {
            try await h.center.schedule(spec("far", row.trigger, maxLate: row.maxLate))
            Issue.record("row '\(row.name)': accepted")
        } catch {
            #expect(error.code == .invalidTrigger, "row '\(row.name)'")
            #expect(error.field == row.field, "row '\(row.name)': field \(error.field ?? "nil")")
            #expect(error.message == row.message, "row '\(row.name)': \(error.message)")
        }
        #expect(await h.center.list().isEmpty, "row '\(row.name)'")
    }

    @Test("the latest instant itself, and every field just inside it, are accepted")
    func atTheLimit() async throws {
        let h = try await Harness()
        let inside = latest - t0
        try await h.center.schedule(spec("at", .at(.instant(latest))))
        try await h.center.schedule(spec("after", .after(inside)))
        try await h.center.schedule(spec("every", .every(inside, count: nil, starting: nil, until: .instant(latest))))
        try await h.center.schedule(spec("remind", .remindBefore(event: .instant(latest), offsets: [.hours(1), TimeSpan(microseconds: (latest - t0).microseconds - 1_000_000)])))
        let next = await h.center.list().first { $0.notification.key == "after" }?.nextFire
        #expect(next == latest)
    }

    @Test("quiet on --for and --until past the limit are refused by name", arguments: [
        ("292000y", "", "for", "'for' 292000y \(past)"),
        ("9223372036854s", "", "for", "'for' 9223372036854s \(past)"),
        ("", "@9000000000000", "until", "'until' @9000000000000 \(past)"),
        ("", "+9223372036854s", "until", "timestamp out of range (column 2 of the value)"),
    ])
    func quietPastTheLimit(forText: String, untilText: String, field: String, message: String) {
        do {
            let end = try QuietRequest.until(for: forText, until: untilText, now: t0, zone: TimeZoneRules.utc)
            Issue.record("for '\(forText)' until '\(untilText)': accepted, ends \(end.map(Timestamp.rfc3339UTC) ?? "never")")
        } catch {
            #expect(error.field == field, "for '\(forText)' until '\(untilText)'")
            #expect(error.message == message, "for '\(forText)' until '\(untilText)': \(error.message)")
        }
    }

    @Test("regression: a snooze of 9223372036854s is refused, the notification stays as it was")
    func hugeSnooze() async throws {
        let h = try await Harness()
        // Hourly, so that it is still there to snooze after its first firing.
        try await h.center.schedule(spec("tea", .every(.hours(1), count: nil, starting: .instant(t0 + .seconds(1)), until: nil)))
        await h.advance(1)
        #expect(await h.settled().count == 1)
        do {
            try await h.center.snooze("tea", for: hugeSpan)
            Issue.record("snooze accepted")
        } catch {
            #expect(error.field == "duration")
            #expect(error.message == "'duration' \(hugeSpan) \(past)", "\(error.message)")
        }
        // A snooze that ends exactly at the limit is still a snooze.
        let until = try await h.center.snooze("tea", for: latest - h.clock.now())
        #expect(until == latest)
    }

    /// Regression: `tocsin snooze K 1us`, again and again, delivered one notification many times
    /// a second, below the floor every trigger is held to.
    @Test("regression: a snooze shorter than min_period is refused naming 'duration'; min_period itself is a snooze")
    func snoozeBelowTheFloor() async throws {
        let h = try await Harness()
        try await h.center.schedule(spec("tea", .every(.hours(1), count: nil, starting: .instant(t0 + .seconds(1)), until: nil)))
        await h.advance(1)
        #expect(await h.settled().count == 1)
        do {
            try await h.center.snooze("tea", for: TimeSpan(microseconds: 1))
            Issue.record("a snooze of 1us was accepted")
        } catch {
            #expect(error.field == "duration" && error.isArgument, "a method argument, not a spec field")
            #expect(error.message == "1us is below [daemon] min_period (1s); a notification may fire at most once per min_period", "\(error.message)")
        }
        let until = try await h.center.snooze("tea", for: .seconds(1))
        #expect(until == h.clock.now() + .seconds(1))
    }
}
