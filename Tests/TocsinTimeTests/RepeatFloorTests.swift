import Testing
@testable import TocsinTime

/// One calendar expression, a floor, and the distance `closestElapses` must report (nil: none
/// below the floor).
struct FloorRow: Sendable, CustomTestStringConvertible {
    var expression: String
    var floor: TimeSpan
    var expected: TimeSpan?
    var testDescription: String { "'\(expression)' against \(floor)" }
}

private func us(_ n: Int64) -> TimeSpan { TimeSpan(microseconds: n) }

@Suite("Repeat floor (min_period)")
struct RepeatFloorTests {
    static let rows: [FloorRow] = [
        // The flood: one elapse per microsecond.
        FloorRow(expression: "*-*-* *:*:00/0.000001", floor: .seconds(1), expected: us(1)),
        FloorRow(expression: "*:*:*", floor: .seconds(1), expected: nil),
        FloorRow(expression: "*:*:0/0.5", floor: .seconds(1), expected: us(500_000)),
        FloorRow(expression: "*:*:10..20/0.25", floor: .seconds(1), expected: us(250_000)),
        FloorRow(expression: "*:*:0,0.000001", floor: .seconds(1), expected: us(1)),
        // Across a minute: 59.5 s, then 0 s of the next minute.
        FloorRow(expression: "*:*:00,59.5", floor: .seconds(1), expected: us(500_000)),
        // Across an hour: xx:59:59.9, then (xx+1):00:00.
        FloorRow(expression: "*-*-* *:00,59:00,59.9", floor: .seconds(1), expected: us(100_000)),
        // Across midnight only: 23:59:59.5, then 00:00:00 the next day.
        FloorRow(expression: "*-*-* 00,23:00,59:00,59.5", floor: .seconds(1), expected: us(500_000)),
        // ... unless no two adjacent weekdays match (Monday to the next Monday).
        FloorRow(expression: "Mon *-*-* 00,23:00,59:00,59.5", floor: .seconds(1), expected: nil),
        FloorRow(expression: "Sun,Mon *-*-* 00,23:00,59:00,59.5", floor: .seconds(1), expected: us(500_000)),
        FloorRow(expression: "Mon..Fri 09:25", floor: .seconds(1), expected: nil),
        FloorRow(expression: "*:0/15", floor: .seconds(1), expected: nil),
        FloorRow(expression: "*:0/15", floor: .minutes(20), expected: .minutes(15)),
        FloorRow(expression: "minutely", floor: .minutes(1), expected: nil),
        FloorRow(expression: "minutely", floor: .minutes(2), expected: .minutes(1)),
        FloorRow(expression: "hourly", floor: .hours(1), expected: nil),
        FloorRow(expression: "daily", floor: .hours(24), expected: nil),
        FloorRow(expression: "*-*-* 08,20:00", floor: .hours(24), expected: .hours(12)),
        FloorRow(expression: "*:*:0/0.001", floor: TimeSpan(microseconds: 1000), expected: nil),
        FloorRow(expression: "*:*:0/0.001", floor: TimeSpan(microseconds: 1001), expected: us(1000)),
        FloorRow(expression: "@1774745000", floor: .seconds(1), expected: nil),
        FloorRow(expression: "2026-03-20 09:46:40", floor: .hours(24), expected: nil),
    ]

    @Test(arguments: rows)
    func calendarDistance(_ row: FloorRow) throws {
        let spec = try CalendarSpec.parse(row.expression)
        #expect(spec.closestElapses(below: row.floor) == row.expected, "row '\(row.expression)' against \(row.floor)")
    }

    /// The rule must never be too optimistic: walking the real elapses (systemd's search) from
    /// just before a Sunday midnight, the closest pair seen is below the floor exactly when the
    /// rule says so, and when it does, the rule's distance is among those seen.
    @Test(arguments: rows)
    func calendarDistanceAgreesWithTheSearch(_ row: FloorRow) throws {
        let spec = try CalendarSpec.parse(row.expression)
        let start = Instant(seconds: 1_795_391_880)  // Sun 2026-11-22 23:58:00 UTC
        var seen = Set<Int64>()
        var previous: Instant?
        var cursor = start - .seconds(7 * 86_400)
        var count = 0
        while count < 3000, let t = spec.nextElapse(after: cursor, in: .utc), t < start + .seconds(9 * 86_400) {
            if let p = previous { seen.insert((t - p).microseconds) }
            previous = t
            cursor = t
            count += 1
        }
        let closest = seen.min().map { TimeSpan(microseconds: $0) }
        let rule = spec.closestElapses(below: row.floor)
        #expect((rule != nil) == (closest.map { $0 < row.floor } ?? false),
                "row '\(row.expression)': rule \(String(describing: rule)), search saw \(String(describing: closest))")
        if let rule { #expect(seen.contains(rule.microseconds), "row '\(row.expression)': \(rule) never seen") }
    }

    @Test func closestOffsetsNamesPositionsAsWritten() throws {
        func pair(_ offsets: [String], _ floor: TimeSpan = .seconds(1)) throws -> RepeatFloor.OffsetPair? {
            RepeatFloor.closestOffsets(try offsets.map { o throws(TimeSyntaxError) in try TimeSpan.parse(o) }, below: floor)
        }
        #expect(try pair(["24h", "3h", "1h", "0s"]) == nil)
        #expect(try pair(["1h", "59min 59.5s"]) == RepeatFloor.OffsetPair(distance: us(500_000), first: 1, second: 2))
        #expect(try pair(["10s", "0s", "0.5s"]) == RepeatFloor.OffsetPair(distance: us(500_000), first: 2, second: 3))
        // Equal offsets are one instant and fire once: not a pair.
        #expect(try pair(["1h", "1h"]) == nil)
        #expect(try pair(["0s", "0.9s", "1.7s"]) == RepeatFloor.OffsetPair(distance: us(800_000), first: 2, second: 3))
        #expect(try pair(["1min", "0s"], .minutes(2)) == RepeatFloor.OffsetPair(distance: .minutes(1), first: 1, second: 2))
    }
}
