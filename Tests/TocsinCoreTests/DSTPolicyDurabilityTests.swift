import Testing
import TocsinConfig
import TocsinCore
import TocsinTesting
import TocsinTime
import TocsinModel

/// The DST policies are part of the stored trigger: a restart must not fall back to systemd's defaults.
@Suite("DST policy durability")
struct DSTPolicyDurabilityTests {
    /// Sat 2026-03-28 12:00Z; Europe/Berlin skips 02:00-03:00 the next night.
    static let beforeGap = Instant(seconds: 1_774_699_200)
    /// Sun 2026-03-29 03:00 CEST, the first valid instant after the gap.
    static let endOfGap = Instant(seconds: 1_774_746_000)
    /// Mon 2026-03-30 02:30 CEST.
    static let nextDay = Instant(seconds: 1_774_830_600)

    static func gapSpec(_ gap: DSTGapPolicy) throws -> NotificationSpec {
        var calendar = try CalendarSpec.parse("*-*-* 02:30")
        calendar.dstGap = gap
        var s = spec("gap", .onCalendar(calendar))
        s.timezone = "Europe/Berlin"
        return s
    }

    @Test("dst_gap=shift survives a restart and fires at the end of the gap, then daily as before")
    func shiftSurvivesRestart() async throws {
        let h = try await Harness(now: Self.beforeGap)
        try await h.center.schedule(try Self.gapSpec(.shift))
        #expect(await h.center.lookup("gap")?.nextFire == Self.endOfGap)
        try await h.restart(backends: [RecordingBackend(name: "spy")])
        #expect(await h.center.lookup("gap")?.nextFire == Self.endOfGap)
        await h.advance(Self.endOfGap.seconds - Self.beforeGap.seconds)
        let d = await h.settled()
        #expect(d.map(\.occurrence.instant) == [Self.endOfGap])
        #expect(d.first?.late == false)
        #expect(await h.center.lookup("gap")?.nextFire == Self.nextDay)
    }

    @Test("the default dst_gap=skip passes over the gap, as systemd does")
    func skipIsTheDefault() async throws {
        let h = try await Harness(now: Self.beforeGap)
        try await h.center.schedule(try Self.gapSpec(.skip))
        #expect(await h.center.lookup("gap")?.nextFire == Self.nextDay)
        try await h.restart(backends: [RecordingBackend(name: "spy")])
        #expect(await h.center.lookup("gap")?.nextFire == Self.nextDay)
    }

    @Test("a reload that only changes the DST policy replaces the notification; one that keeps it leaves it alone")
    func reloadSeesAPolicyChange() async throws {
        let h = try await Harness(now: Self.beforeGap)
        var r = try await h.center.applyConfig([try Self.gapSpec(.skip)])
        #expect(r.added == ["gap"])
        #expect(await h.center.lookup("gap")?.nextFire == Self.nextDay)
        r = try await h.center.applyConfig([try Self.gapSpec(.shift)])
        #expect(r.changed == ["gap"])
        #expect(await h.center.lookup("gap")?.nextFire == Self.endOfGap)
        r = try await h.center.applyConfig([try Self.gapSpec(.shift)])
        #expect(r.unchanged == ["gap"])
        try await h.restart(backends: [RecordingBackend(name: "spy")])
        r = try await h.center.applyConfig([try Self.gapSpec(.shift)])
        #expect(r.unchanged == ["gap"], "the stored row lost its policy: the reload after a restart saw a change")
        #expect(await h.center.lookup("gap")?.nextFire == Self.endOfGap)
    }
}
