import Logging
import Testing
import TocsinConfig
import TocsinCore
import TocsinTesting
import TocsinTime
import TocsinModel

/// Quiet hours through the center: virtual clock, spy backends, the real SQLite store.
@Suite("Quiet hours: the center")
struct QuietCenterTests {
    /// A popup-like spy (holds while quiet) and a log-like one (delivers).
    func harness() async throws -> (Harness, popup: RecordingBackend, log: RecordingBackend) {
        let popup = RecordingBackend(name: "popup", quietMode: .hold)
        let log = RecordingBackend(name: "log")
        let h = try await Harness(backends: [popup, log])
        return (h, popup, log)
    }

    /// `[quiet]` as a reload gives it, in the reload's one transaction (the harness has no
    /// config notifications, so only quiet hours change).
    func reloadQuiet(_ h: Harness, _ q: QuietSettings) async throws {
        try await h.center.reload(backends: h.backends, specs: [], quiet: q)
    }

    /// Weekday nights 22:00-07:00 UTC (t0 is Monday 09:00).
    static func nights() -> QuietSettings {
        var q = QuietSettings()
        q.windows = [QuietWindowSpec(onCalendar: try! CalendarSpec.parse("Mon..Fri 22:00"), duration: .hours(9), timezone: "UTC")]
        return q
    }

    @Test("switched on: the popup holds, the log still delivers and Fired is emitted; off delivers what was held")
    func manualOnOff() async throws {
        let (h, popup, log) = try await harness()
        let events = await h.center.events()
        let status = try await h.center.quietOn(until: nil)
        #expect(status.active && status.source == "manual")
        try await h.center.schedule(spec("tea", at(10)))
        await h.advance(10)
        await h.center.waitForDeliveries()
        #expect(log.deliveredKeys == ["tea"])
        #expect(popup.deliveredKeys == [], "the popup delivered during quiet hours")
        #expect(await h.center.heldFirings.map(\.firing.key) == ["tea"])
        var sawFired = false, sawQuietOn = false
        for await e in events {
            if case .quietChanged(let s) = e, s.active { sawQuietOn = true }
            if case .fired(let f, _) = e, f.key == "tea" { sawFired = true; break }
        }
        #expect(sawQuietOn && sawFired)

        let off = try await h.center.quietOff()
        #expect(!off.active && off.held == 0)
        #expect(await popup.wait { d, _ in d.contains { $0.key == "tea" } })
        #expect(popup.deliveries.first?.reason == .quietEnded)
        #expect(popup.deliveries.first?.due == t0 + .seconds(10), "the held firing keeps its due time")
    }

    @Test("a scheduled window holds, the timer wakes at its end, and the end delivers")
    func scheduledWindow() async throws {
        let (h, popup, log) = try await harness()
        try await reloadQuiet(h, Self.nights())
        #expect(h.clock.armedAt == t0 + .hours(13), "the timer is armed for the window's start")
        try await h.center.schedule(spec("night", at(14 * 3600)))
        await h.advance(13 * 3600)
        #expect(await h.center.quietStatus().active)
        #expect(h.clock.armedAt == t0 + .hours(14) - h.options.claimAhead)
        await h.advance(3600)
        await h.center.waitForDeliveries()
        #expect(log.deliveredKeys == ["night"])
        #expect(popup.deliveredKeys == [])
        #expect(h.clock.armedAt == t0 + .hours(22), "the timer is armed for the window's end")
        await h.advance(8 * 3600)
        #expect(await popup.wait { d, _ in d.map(\.key) == ["night"] })
        #expect(await !h.center.quietStatus().active)
    }

    /// A new process on the same state directory, configured before it starts as the daemon is.
    func restart(_ h: Harness, _ backends: [RecordingBackend], quiet: QuietSettings) async throws {
        h.backends = backends
        h.center = try TocsinCenter(options: h.options, stateDirectory: h.dir.path, clock: h.clock, timer: h.clock,
                                    logger: quietLogger)
        try await h.center.setQuiet(quiet)
        try await h.center.start(backends: backends)
    }

    @Test("a restart during quiet loses nothing and delivers nothing twice (real SQLite)")
    func restartDuringQuiet() async throws {
        let (h, popup, _) = try await harness()
        try await reloadQuiet(h, Self.nights())
        for (i, key) in ["one", "two"].enumerated() {
            try await h.center.schedule(spec(key, at(14 * 3600 + Int64(i) * 60)))
        }
        await h.advance(14 * 3600 + 60)
        await h.center.waitForDeliveries()
        #expect(await h.center.heldFirings.count == 2)
        await h.center.shutdown()

        let popup2 = RecordingBackend(name: "popup", quietMode: .hold)
        try await restart(h, [popup2, RecordingBackend(name: "log")], quiet: Self.nights())
        #expect(await h.center.quietStatus() == QuietStatus(active: true, source: "schedule", until: t0 + .hours(22), held: 2))
        await h.center.waitForDeliveries()
        #expect(popup2.deliveries.isEmpty, "held firings were delivered by the restart itself")

        await h.advance(8 * 3600)
        #expect(await popup2.wait { d, _ in d.count == 2 })
        #expect(popup2.deliveredKeys == ["one", "two"], "oldest first")
        await h.center.shutdown()

        let popup3 = RecordingBackend(name: "popup", quietMode: .hold)
        try await restart(h, [popup3, RecordingBackend(name: "log")], quiet: Self.nights())
        await h.center.tick()
        await h.center.waitForDeliveries()
        #expect(await h.center.heldFirings.isEmpty)
        #expect(popup3.deliveries.isEmpty, "a released firing was delivered again after a restart")
        #expect(popup.deliveries.isEmpty)
    }

    @Test("a notification cancelled or replaced while quiet holds its firing takes the held firing along, across a restart; CancelAll takes all (regression: quiet's end released them)")
    func cancelledWhileHeld() async throws {
        let (h, popup, _) = try await harness()
        try await h.center.quietOn(until: nil)
        // Every 10 s: still pending once its first firing is held, so its Cancel finds it.
        try await h.center.schedule(spec("cancelled", .every(.seconds(10), count: nil, starting: nil, until: nil), title: "old cancelled"))
        for key in ["replaced", "kept", "done"] {
            try await h.center.schedule(spec(key, at(10), title: "old \(key)"))
        }
        await h.advance(10)
        await h.center.waitForDeliveries()
        #expect(await h.center.heldFirings.map(\.firing.key).sorted() == ["cancelled", "done", "kept", "replaced"])

        #expect(try await h.center.cancel("cancelled"))
        // Fired and done: nothing pending to cancel, but what is held of it goes.
        #expect(try await !h.center.cancel("done"))
        try await h.center.schedule(spec("replaced", at(3600), title: "new replaced"))
        #expect(await h.center.heldFirings.map(\.firing.key) == ["kept"])
        await h.center.shutdown()

        let popup2 = RecordingBackend(name: "popup", quietMode: .hold)
        try await restart(h, [popup2, RecordingBackend(name: "log")], quiet: QuietSettings())
        #expect(await h.center.heldFirings.map(\.firing.key) == ["kept"], "the drops were not saved")
        try await h.center.quietOff()
        #expect(await popup2.wait { d, _ in d.map(\.key) == ["kept"] })
        #expect(popup2.deliveries.map(\.notification.title) == ["old kept"])
        #expect(popup.deliveries.isEmpty)

        // CancelAll during quiet: nothing held survives it.
        try await h.center.quietOn(until: nil)
        try await h.center.schedule(spec("night", at(3700)))
        await h.advance(3700 - 10)
        await h.center.waitForDeliveries()
        // The replacement of "replaced" fell due at 3600, in this quiet spell: held as well.
        #expect(await h.center.heldFirings.map(\.firing.key).sorted() == ["night", "replaced"])
        _ = try await h.center.cancelAll()
        #expect(await h.center.heldFirings.isEmpty)
    }

    @Test("quiet that ended while the daemon was down is released at start")
    func endedWhileDown() async throws {
        let (h, _, _) = try await harness()
        try await h.center.quietOn(for: "1h", until: "")
        try await h.center.schedule(spec("x", at(60)))
        await h.advance(60)
        await h.center.waitForDeliveries()
        await h.center.shutdown()
        h.clock.advance(by: .hours(2))
        let popup = RecordingBackend(name: "popup", quietMode: .hold)
        try await restart(h, [popup, RecordingBackend(name: "log")], quiet: QuietSettings())
        #expect(await popup.wait { d, _ in d.map(\.key) == ["x"] })
        #expect(await !h.center.quietStatus().active)
    }

    @Test("critical notifications and alarms go through by default; configurable")
    func passes() async throws {
        let alarm = RecordingBackend(name: "alarm", ringPolicy: RingPolicy(every: .minutes(1), maxRings: 1), quietMode: .hold)
        let popup = RecordingBackend(name: "popup", quietMode: .hold)
        let h = try await Harness(backends: [popup, alarm])
        try await h.center.quietOn(until: nil)
        var critical = spec("urgent", at(10), backends: ["popup"])
        critical.urgency = .critical
        try await h.center.schedule(critical)
        try await h.center.schedule(spec("wake", at(10), backends: ["alarm"]))
        await h.advance(10)
        await h.center.waitForDeliveries()
        #expect(popup.deliveredKeys == ["urgent"])
        #expect(alarm.deliveredKeys == ["wake"])
        _ = try await h.center.acknowledge("wake")

        var strict = QuietSettings()
        strict.criticalPasses = false
        strict.alarmsPass = false
        try await reloadQuiet(h, strict)
        critical.trigger = at(20)
        try await h.center.schedule(critical)
        try await h.center.schedule(spec("wake", at(20), backends: ["alarm"]))
        await h.advance(10)
        await h.center.waitForDeliveries()
        #expect(popup.deliveredKeys == ["urgent"])
        #expect(alarm.deliveredKeys == ["wake"])
        #expect(Set(await h.center.heldFirings.map(\.firing.key)) == ["urgent", "wake"])
    }

    @Test("drop and deliver are per backend from [quiet] backends")
    func modes() async throws {
        let (h, popup, log) = try await harness()
        var q = QuietSettings()
        q.backends = ["popup": .drop, "log": .hold]
        try await reloadQuiet(h, q)
        try await h.center.quietOn(until: nil)
        try await h.center.schedule(spec("a", at(10)))
        await h.advance(10)
        await h.center.waitForDeliveries()
        #expect(popup.deliveries.isEmpty && log.deliveries.isEmpty)
        #expect(await h.center.heldFirings.map(\.backend) == ["log"])
        try await h.center.quietOff()
        #expect(await log.wait { d, _ in d.map(\.key) == ["a"] })
        await h.center.waitForDeliveries()
        #expect(popup.deliveries.isEmpty, "a dropped firing came back")
    }

    @Test("a reload that adds a window covering now begins quiet; one that removes it releases what was held")
    func reloadWindows() async throws {
        let (h, popup, _) = try await harness()
        let events = await h.center.events()
        var q = QuietSettings()
        q.windows = [QuietWindowSpec(onCalendar: try CalendarSpec.parse("Mon 08:00"), duration: .hours(2))]
        try await reloadQuiet(h, q)
        #expect(await h.center.quietStatus() == QuietStatus(active: true, source: "schedule", until: t0 + .hours(1), held: 0))
        for await e in events { if case .quietChanged(let s) = e { #expect(s.active); break } }
        try await h.center.schedule(spec("r", at(10)))
        await h.advance(10)
        await h.center.waitForDeliveries()
        #expect(popup.deliveries.isEmpty)
        try await reloadQuiet(h, QuietSettings())
        #expect(await popup.wait { d, _ in d.map(\.key) == ["r"] })
        #expect(await h.center.quietStatus() == QuietStatus(active: false, source: "none", until: nil, held: 0))
    }

    @Test("a switch that cannot be saved fails with storage and changes nothing")
    func storageFailure() async throws {
        let store = InMemoryStore()
        let clock = VirtualClock(now: t0)
        let center = try await memoryCenter(store, clock, [RecordingBackend(name: "popup", quietMode: .hold)])
        store.state.update { $0.failQuiet = true }
        await #expect(throws: CenterError.self) { try await center.quietOn(until: nil) }
        #expect(await !center.quietStatus().active)
        store.state.update { $0.failQuiet = false }
        try await center.quietOn(until: nil)
        #expect(store.state.value.quiet.override == QuietOverride(on: true, until: nil))
        #expect(store.state.value.quiet.active)
    }
}
