import Testing
import TocsinCore
import TocsinModel
import TocsinTesting
import TocsinTime

/// `remind_before` with equal offsets: one reminder per distinct offset, listed once, numbered
/// 1...n; a trigger stored with a duplicate (before they were merged) still loads and fires.
@Suite("remind_before with equal offsets")
struct RemindOffsetsTests {
    static let event = t0 + .seconds(10)

    static func remind(_ offsets: [TimeSpan]) -> TriggerSpec {
        .remindBefore(event: .instant(event), offsets: offsets)
    }

    @Test("regression: equal offsets are merged when the spec is read: listed once, zero as 0s, occurrences 1...n (was: 2s, 1s, 1s, 0; occurrences 1, 2, 4)")
    func mergedWhenRead() async throws {
        let h = try await Harness()
        try await h.center.schedule(spec("r", Self.remind([.seconds(2), .seconds(1), .seconds(1), .zero])))
        let listed = try #require(await h.center.lookup("r"))
        #expect(listed.notification.trigger.summary == "2s, 1s, 0s before \(Timestamp.rfc3339UTC(Self.event))")
        await h.advance(8)
        await h.advance(1)
        await h.advance(1)
        let fired = await h.settled()
        #expect(fired.map(\.occurrence.number) == [1, 2, 3])
        #expect(fired.map(\.occurrence.instant) == [t0 + .seconds(8), t0 + .seconds(9), t0 + .seconds(10)])
        #expect(fired.map(\.occurrence.offset) == [.seconds(2), .seconds(1), .zero])
    }

    /// A stored trigger keeps its list: its occurrence numbers (`last_number`) index it, so
    /// merging it at load would make a recorded occurrence point at another offset.
    @Test("a notification stored with a duplicate offset loads, is listed with each offset once, and fires once per offset")
    func storedDuplicateStillFires() async throws {
        let h = try await Harness()
        try await h.center.schedule(spec("r", Self.remind([.seconds(3), .seconds(2), .zero])))
        await h.center.shutdown()
        // As a release before the merge stored `--remind-before 3s --remind-before 2s --remind-before 2s --remind-before 0s`.
        let db = h.dir.path + "/state.sqlite3"
        let edit = try await TestProcess.run("sqlite3", [db, "UPDATE notification SET trigger_text = '3000000,2000000,2000000,0' WHERE key = 'r'"])
        #expect(edit.status == .exited(0), "\(edit.stderrText)")
        try await h.restart(backends: [RecordingBackend(name: "spy")])
        let listed = try #require(await h.center.lookup("r"))
        #expect(listed.notification.trigger == .remindBefore(event: Self.event, offsets: [.seconds(3), .seconds(2), .seconds(2), .zero]))
        #expect(listed.notification.trigger.summary == "3s, 2s, 0s before \(Timestamp.rfc3339UTC(Self.event))")
        #expect(listed.nextFire == t0 + .seconds(7))
        await h.advance(7)
        _ = await h.settled()
        // A restart between two reminders: the recorded occurrence still names its offset.
        try await h.restart(backends: [RecordingBackend(name: "spy")])
        await h.advance(1)
        await h.advance(2)
        let fired = await h.settled()
        #expect(fired.map(\.occurrence.instant) == [t0 + .seconds(8), t0 + .seconds(10)])
        #expect(fired.map(\.occurrence.offset) == [.seconds(2), .zero])
        #expect(fired.map(\.occurrence.number) == [2, 4], "numbers index the stored list")
        #expect(await h.center.lookup("r") == nil, "done after the last reminder")
    }
}
