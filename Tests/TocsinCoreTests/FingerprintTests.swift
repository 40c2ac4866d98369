import Testing
@testable import TocsinCore
import TocsinModel
import TocsinTime

/// A config notification's fingerprint decides, at each reload and start, whether its
/// definition changed. Those stored in state files were made from `"\(trigger)"` by reflection,
/// so the written-out text must equal it exactly: a difference would count every config
/// notification as changed once after an upgrade and re-base its schedule.
@Suite("Config fingerprints")
struct FingerprintTests {
    static let instant = Instant(microseconds: 1_795_000_000_123_456)
    static let civil = CivilDateTime(year: 2026, month: 12, day: 1, hour: 18, minute: 5, second: 9, microsecond: 250_000)

    static let rows: [(String, TriggerSpec)] = [
        ("at an instant", .at(.instant(instant))),
        ("at a negative instant", .at(.instant(Instant(microseconds: -5)))),
        ("at a local date-time", .at(.local(civil))),
        ("at a relative time", .at(.relative(.minutes(15)))),
        ("at a time of today", .at(.day(days: 0, time: TimeOfDay(hour: 18, minute: 5)))),
        ("at midnight yesterday", .at(.day(days: -1, time: TimeOfDay()))),
        ("every until a time tomorrow", .every(.hours(1), count: nil, starting: nil, until: .day(days: 1, time: TimeOfDay(hour: 7, second: 3, microsecond: 9)))),
        ("after a minute", .after(.minutes(1))),
        ("after 1h 30min 500ms", .after(TimeSpan(microseconds: 5_400_500_000))),
        ("after a microsecond", .after(TimeSpan(microseconds: 1))),
        ("every day, nothing else", .every(.hours(24), count: nil, starting: nil, until: nil)),
        ("every with count", .every(.seconds(90), count: 3, starting: nil, until: nil)),
        ("every with the largest count", .every(.seconds(90), count: .max, starting: nil, until: nil)),
        ("every with starting and until", .every(.minutes(5), count: nil, starting: .instant(instant), until: .local(civil))),
        ("every with a relative start", .every(.minutes(5), count: 2, starting: .relative(.hours(2)), until: .relative(.hours(30)))),
        ("remind before, one offset", .remindBefore(event: .instant(instant), offsets: [.hours(1)])),
        ("remind before, three offsets", .remindBefore(event: .local(civil), offsets: [.hours(24), .hours(3), .hours(1)])),
        ("remind before, no offsets", .remindBefore(event: .relative(.minutes(1)), offsets: [])),
    ]

    @Test("the written-out trigger text equals reflection's, row by row")
    func equalsReflection() throws {
        for (name, trigger) in Self.rows {
            #expect(SpecResolver.triggerText(trigger) == String(describing: trigger), "\(name)")
        }
        for text in ["Mon..Fri 09:25 Europe/Berlin", "daily", "*-*-* 00/15:00", "Sat,Sun *-*-1..7 10:00 UTC",
                     "2026-12-24 18:00:30.5", "*-02~01 08:00", "12:00 CEST", "minutely", "Mon *-*-* 07:30 America/New_York"] {
            var spec = try CalendarSpec.parse(text)
            for (gap, fold) in [(DSTGapPolicy.skip, DSTFoldPolicy.first), (.shift, .both)] {
                spec.dstGap = gap
                spec.dstFold = fold
                let calendar = TriggerSpec.onCalendar(spec)
                #expect(SpecResolver.triggerText(calendar) == String(describing: calendar), "on_calendar '\(text)' \(gap) \(fold)")
            }
        }
    }

    @Test("random triggers of every written-out kind print as reflection does")
    func randomTriggers() {
        var g = SystemRandomNumberGenerator()
        func span() -> TimeSpan { TimeSpan(microseconds: Int64.random(in: 1...(Int64(1) << 50), using: &g)) }
        func value() -> TimeValue {
            switch Int.random(in: 0..<3, using: &g) {
            case 0: return .instant(Instant(microseconds: Int64.random(in: -(Int64(1) << 55)...(Int64(1) << 55), using: &g)))
            case 1: return .relative(span())
            default:
                return .local(CivilDateTime(year: Int.random(in: 1...9999, using: &g), month: Int.random(in: 1...12, using: &g),
                                            day: Int.random(in: 1...31, using: &g), hour: Int.random(in: 0...23, using: &g),
                                            minute: Int.random(in: 0...59, using: &g), second: Int.random(in: 0...60, using: &g),
                                            microsecond: Int.random(in: 0...999_999, using: &g)))
            }
        }
        for _ in 0..<2_000 {
            let trigger: TriggerSpec
            switch Int.random(in: 0..<4, using: &g) {
            case 0: trigger = .at(value())
            case 1: trigger = .after(span())
            case 2:
                trigger = .every(span(), count: Bool.random(using: &g) ? UInt32.random(in: 1...UInt32.max, using: &g) : nil,
                                 starting: Bool.random(using: &g) ? value() : nil, until: Bool.random(using: &g) ? value() : nil)
            default: trigger = .remindBefore(event: value(), offsets: (0..<Int.random(in: 0...5, using: &g)).map { _ in span() })
            }
            let written = SpecResolver.triggerText(trigger), reflected = String(describing: trigger)
            #expect(written == reflected)
            if written != reflected { return }
        }
    }

    @Test("fingerprints stored by earlier versions are still produced")
    func stored() throws {
        var spec = NotificationSpec()
        spec.key = "standup"
        spec.title = "Stand-up"
        spec.trigger = .every(.hours(24), count: nil, starting: .local(Self.civil), until: nil)
        #expect(SpecResolver.fingerprint(spec) == "fcbd4745bec502b8")
        spec.trigger = .remindBefore(event: .instant(Self.instant), offsets: [.hours(24), .hours(1)])
        #expect(SpecResolver.fingerprint(spec) == "2c4a9c2b9e16639")
        spec.trigger = .onCalendar(try CalendarSpec.parse("Mon..Fri 09:25 Europe/Berlin"))
        #expect(SpecResolver.fingerprint(spec) == "b4b69c1f7673d646")
    }
}
