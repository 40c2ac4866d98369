import Testing
import TocsinCore
import TocsinTime

/// Why a series has no firing left: the reason `Schedule` refuses it with, the daemon logs when
/// it skips a config notification, and `tocsin check` warns with.
@Suite("First firing")
struct FirstFiringTests {
    static let now = Instant(seconds: 1_795_000_000)

    static let rows: [(String, Trigger, String)] = [
        ("count used up", .every(period: .hours(1), starting: now - .hours(10), count: 3, until: nil), "its 3 firings are all in the past"),
        ("a count of one used up", .every(period: .hours(1), starting: now - .hours(10), count: 1, until: nil), "its one firing is in the past"),
        ("until passed", .every(period: .hours(1), starting: now - .hours(10), count: nil, until: now - .hours(2)), "'until' is before the next firing"),
        ("regression: starting 1880 at 1 s (named count or until, neither given)",
         .every(period: .seconds(1), starting: Instant(seconds: -2_840_140_800), count: nil, until: nil), "past the last one Tocsin counts (4294967295)"),
        ("after the latest instant", .every(period: .hours(24 * 365 * 10_000), starting: now - .hours(1), count: nil, until: nil),
         "after the latest instant Tocsin schedules"),
    ]

    @Test("an every that never fires says which limit ended it, row by row")
    func everyReasons() {
        for (name, trigger, reason) in Self.rows {
            switch trigger.firstFiring(after: Self.now) {
            case .success(let o): Issue.record("\(name): fires at \(o.instant)")
            case .failure(let e):
                #expect(e.field == "every", "\(name): \(e)")
                #expect(e.message.contains(reason), "\(name): \(e.message)")
            }
        }
    }
}
