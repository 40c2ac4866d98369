import Testing
import TocsinCore
import TocsinModel
import TocsinSystem
import TocsinTesting
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

    /// Each reading is a millisecond after the one before, as a real clock moves between resolving
    /// a request and the batch that schedules it.
    final class SteppingClock: TocsinClock {
        let base: VirtualClock
        init(_ base: VirtualClock) { self.base = base }
        func now() -> Instant {
            _ = base.advance(by: TimeSpan(microseconds: 1000))
            return base.now()
        }
        func sleep(until deadline: Instant) async throws { try await base.sleep(until: deadline) }
    }

    @Test("regression: an 'after' that elapses before it is scheduled is refused naming 'after'; a past 'at' still names 'at'")
    func afterElapsedBeforeScheduling() async throws {
        let virtual = VirtualClock(now: Self.now)
        let center = TocsinCenter(options: CenterOptions(defaultZone: .utc), store: InMemoryStore(), clock: SteppingClock(virtual),
                                  timer: virtual, logger: quietLogger)
        try await center.start(backends: [RecordingBackend(name: "spy")])
        let rows: [(name: String, trigger: TriggerSpec, field: String, message: String)] = [
            ("after 1us", .after(TimeSpan(microseconds: 1)), "after",
             "'after' 1us elapsed before the notification could be scheduled; give a longer 'after', or post it now"),
            ("at a second ago", .at(.instant(Self.now - .seconds(1))), "at", "'at' is in the past; a past time is never delivered"),
        ]
        for (i, row) in rows.enumerated() {
            do {
                try await center.schedule(spec("k\(i)", row.trigger))
                Issue.record("row '\(row.name)': accepted")
            } catch {
                #expect(error.code == .invalidTrigger, "row '\(row.name)'")
                #expect(error.field == row.field, "row '\(row.name)': field \(error.field ?? "nil")")
                #expect(error.message == row.message, "row '\(row.name)': \(error.message)")
            }
        }
        #expect(await center.list().isEmpty)
        try await center.schedule(spec("hour", .after(.hours(1))))
        #expect(await center.list().map(\.notification.key) == ["hour"])
        await center.shutdown()
    }
}
