import Testing
@testable import TocsinTime

@Suite("Triggers")
struct TriggerTests {
    static let t0 = Instant(seconds: 1_774_000_000)

    @Test func atFiresOnceAndNeverInThePast() {
        let at = Trigger.at(Self.t0)
        #expect(at.next(after: Self.t0 - .seconds(1), previous: nil) == Occurrence(instant: Self.t0, number: 1))
        // Strictly after: an `at` equal to now or earlier never fires.
        #expect(at.next(after: Self.t0, previous: nil) == nil)
        #expect(at.next(after: Self.t0 + .seconds(1), previous: nil) == nil)
        // Once fired, never again.
        #expect(at.next(after: Self.t0 - .seconds(10), previous: Occurrence(instant: Self.t0, number: 1)) == nil)
    }

    @Test func everyIsLazyAndCounts() {
        let every = Trigger.every(period: .minutes(15), starting: Self.t0, count: nil, until: nil)
        #expect(every.next(after: Self.t0 - .seconds(1), previous: nil) == Occurrence(instant: Self.t0, number: 1))
        #expect(every.next(after: Self.t0, previous: nil) == Occurrence(instant: Self.t0 + .minutes(15), number: 2))
        // O(1) far ahead: the millionth firing without walking there.
        let far = Self.t0 + TimeSpan(microseconds: TimeSpan.minutes(15).microseconds * 999_999)
        #expect(every.next(after: far - .seconds(1), previous: nil) == Occurrence(instant: far, number: 1_000_000))
        // A previous occurrence is never repeated even if asked about an earlier instant.
        #expect(every.next(after: Self.t0 - .seconds(1), previous: Occurrence(instant: Self.t0, number: 1))
                == Occurrence(instant: Self.t0 + .minutes(15), number: 2))
    }

    @Test func everyHonoursCountAndUntil() {
        let six = Trigger.every(period: .minutes(15), starting: Self.t0, count: 6, until: nil)
        var fired: [Occurrence] = []
        var cursor = Self.t0 - .seconds(1)
        var previous: Occurrence?
        while let o = six.next(after: cursor, previous: previous) {
            fired.append(o); previous = o; cursor = o.instant
        }
        #expect(fired.map(\.number) == [1, 2, 3, 4, 5, 6])
        #expect(fired.last?.instant == Self.t0 + .minutes(75))

        // `until` is inclusive.
        let until = Trigger.every(period: .hours(1), starting: Self.t0, count: nil, until: Self.t0 + .hours(2))
        #expect(until.next(after: Self.t0 + .hours(1), previous: nil)?.instant == Self.t0 + .hours(2))
        #expect(until.next(after: Self.t0 + .hours(2), previous: nil) == nil)
        // A zero or negative period never fires (and never loops).
        #expect(Trigger.every(period: .zero, starting: Self.t0, count: nil, until: nil).next(after: Self.t0, previous: nil) == nil)
    }

    @Test func remindBeforeSkipsPastOffsets() {
        let event = Self.t0 + .hours(1)
        let offsets: [TimeSpan] = [.minutes(10), .hours(2), .minutes(30)]
        let remind = Trigger.remindBefore(event: event, offsets: offsets)
        // The 2h reminder lies in the past: the earliest future one is 30 min before (third offset).
        #expect(remind.next(after: Self.t0, previous: nil)
                == Occurrence(instant: event - .minutes(30), number: 3, offset: .minutes(30)))
        #expect(remind.next(after: event - .minutes(30), previous: nil)
                == Occurrence(instant: event - .minutes(10), number: 1, offset: .minutes(10)))
        #expect(remind.next(after: event - .minutes(10), previous: nil) == nil)
        #expect(Trigger.remindBefore(event: event, offsets: []).next(after: Self.t0, previous: nil) == nil)
    }

    @Test func calendarNumbersItsFirings() throws {
        let spec = try CalendarSpec.parse("*-*-* 12:00 UTC")
        let trigger = Trigger.calendar(spec, zone: .utc)
        let first = try #require(trigger.next(after: Self.t0, previous: nil))
        #expect(first.number == 1)
        #expect(Timestamp.rfc3339UTC(first.instant) == "2026-03-20T12:00:00Z")
        let second = try #require(trigger.next(after: first.instant, previous: first))
        #expect(second.number == 2)
        #expect(Timestamp.rfc3339UTC(second.instant) == "2026-03-21T12:00:00Z")
        #expect(Trigger.calendar(try CalendarSpec.parse("2020-01-01"), zone: .utc).next(after: Self.t0, previous: nil) == nil)
    }

    @Test func summaries() throws {
        #expect(Trigger.every(period: .minutes(15), starting: Self.t0, count: 6, until: nil).summary
                == "every 15min from 2026-03-20T09:46:40Z, 6 times")
        #expect(Trigger.at(Self.t0).summary == "at 2026-03-20T09:46:40Z")
        let berlin = try Zones.directory.rules(named: "Europe/Berlin")
        #expect(Trigger.calendar(try CalendarSpec.parse("Mon..Fri 7:30"), zone: berlin).summary
                == "Mon..Fri *-*-* 07:30:00 Europe/Berlin")
        #expect(Trigger.calendar(try CalendarSpec.parse("Mon..Fri 7:30 UTC"), zone: .utc).summary
                == "Mon..Fri *-*-* 07:30:00 UTC")
        #expect(Trigger.remindBefore(event: Self.t0, offsets: [.minutes(15), .hours(1)]).summary
                == "15min, 1h before 2026-03-20T09:46:40Z")
    }

    /// The daemon asks for a million pending triggers; the hot path must stay allocation-light.
    @Test func manyCalendarTriggersAreCheap() throws {
        let zone = try Zones.directory.rules(named: "Europe/Berlin")
        let spec = try CalendarSpec.parse("Mon..Fri *-*-* 07,12:00/15:00")
        let trigger = Trigger.calendar(spec, zone: zone)
        var cursor = Self.t0
        var previous: Occurrence?
        for _ in 0..<20_000 {
            guard let o = trigger.next(after: cursor, previous: previous) else { break }
            #expect(o.instant > cursor)
            previous = o
            cursor = o.instant
        }
        #expect(previous?.number == 20_000)
    }
}
