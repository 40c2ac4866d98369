import Logging
import Synchronization
import Testing
import TocsinConfig
@testable import TocsinCore
import TocsinTesting
import TocsinTime
import TocsinModel

/// The `[fleet]` backend's side of the center, as a spy: what it is told to share.
final class FleetSpy: DeliveryBackend, FleetLink, Sendable {
    enum Call: Hashable, Sendable {
        case scheduled(key: String, trigger: Trigger, fleet: Bool)
        case cancelled(String)
    }
    struct Withdrawal: Hashable, Sendable { var key: String; var reason: WithdrawReason; var until: Instant? }
    let name = "fleet"
    private let state = Mutex<(calls: [Call], withdrawals: [Withdrawal])>(([], []))
    private let sink = Mutex<(any BackendEventSink)?>(nil)
    func start(events: any BackendEventSink) async { sink.withLock { $0 = events } }
    /// As the network thread hands on what it received.
    func receive(_ event: BackendEvent) { sink.withLock { $0 }?.send(event) }
    var calls: [Call] { state.withLock { $0.calls } }
    var withdrawals: [Withdrawal] { state.withLock { $0.withdrawals } }
    var fleetLink: (any FleetLink)? { self }
    func deliver(_ firing: Firing) async throws(DeliveryError) {}
    func withdraw(key: String, reason: WithdrawReason, snoozedUntil: Instant?) async {
        state.withLock { $0.withdrawals.append(Withdrawal(key: key, reason: reason, until: snoozedUntil)) }
    }
    /// The withdrawals it had been told of when it was shut down: what a stop still told it.
    private let atShutdown = Mutex<[Withdrawal]?>(nil)
    var withdrawalsAtShutdown: [Withdrawal]? { atShutdown.withLock { $0 } }
    func shutdown() async { atShutdown.withLock { $0 = withdrawals } }
    func scheduled(_ n: TocsinCore.Notification, fleet: Bool) async {
        state.withLock { $0.calls.append(.scheduled(key: n.key, trigger: n.trigger, fleet: fleet)) }
    }
    func cancelled(key: String) async { state.withLock { $0.calls.append(.cancelled(key)) } }
}

@Suite("Center and the fleet")
struct CenterFleetTests {
    private func center(fleet: FleetSpy?) async throws -> (TocsinCenter, VirtualClock, RecordingBackend) {
        let clock = VirtualClock(now: t0)
        let spy = RecordingBackend(name: "spy")
        let c = try await memoryCenter(InMemoryStore(), clock, [spy] + (fleet.map { [$0] } ?? []))
        return (c, clock, spy)
    }

    @Test("fleet = true without a [fleet] backend is refused, naming the field")
    func refusedWithoutFleet() async throws {
        let (c, _, _) = try await center(fleet: nil)
        var s = spec("tea", .after(.seconds(60)))
        s.fleet = true
        do {
            try await c.schedule(s)
            Issue.record("scheduled without [fleet]")
        } catch {
            #expect(error.field == "fleet")
            #expect(error.message.contains("[fleet]"))
        }
        #expect(await c.list().isEmpty)
    }

    @Test("PostNow refuses fleet = true")
    func postNowRefused() async throws {
        let (c, _, _) = try await center(fleet: FleetSpy())
        var s = spec("tea", .after(.seconds(60)))
        s.fleet = true
        await #expect(throws: CenterError.self) { try await c.postNow(s) }
    }

    @Test("a fleet notification is shared resolved (after as an absolute at), once durable; a cancel is passed on")
    func sharesResolved() async throws {
        let fleet = FleetSpy()
        let (c, _, _) = try await center(fleet: fleet)
        var s = spec("tea", .after(.seconds(60)))
        s.fleet = true
        try await c.schedule(s)
        try await c.schedule(spec("own", .after(.seconds(60))))
        // Kept unchanged (replace = false): nothing to share or unshare.
        var keep = spec("tea", .after(.seconds(99)))
        keep.replace = false
        try await c.schedule(keep)
        #expect(try await c.cancel("tea"))
        #expect(try await c.cancel("nothing") == false)
        #expect(fleet.calls == [.scheduled(key: "tea", trigger: .at(t0 + .seconds(60)), fleet: true),
                                .scheduled(key: "own", trigger: .at(t0 + .seconds(60)), fleet: false),
                                .cancelled("tea")])
    }

    @Test("a notification from the fleet is scheduled here but not shared back; its unknown backends are left out")
    func fromFleetNotSharedBack() async throws {
        let fleet = FleetSpy()
        let (c, _, _) = try await center(fleet: fleet)
        var s = spec("tea", .at(.instant(t0 + .seconds(30))), backends: ["spy", "kitchen-speaker"])
        s.fleet = true
        try await c.scheduleFromFleet(s)
        #expect(fleet.calls.isEmpty)
        let n = try #require(await c.lookup("tea"))
        #expect(n.notification.backends == ["spy"])
        #expect(n.nextFire == t0 + .seconds(30))
        #expect(n.notification.source == .runtime, "a reload would cancel it")
    }

    @Test("regression: a notification from the fleet that would fire faster than min_period is refused, naming the field")
    func fromFleetBelowTheFloor() async throws {
        // This machine's floor, two minutes; the sender's was whatever it was.
        var options = CenterOptions(defaultZone: .utc)
        options.limits.minPeriod = .minutes(2)
        let c = try await memoryCenter(InMemoryStore(), VirtualClock(now: t0), [RecordingBackend(name: "spy"), FleetSpy()], options: options)
        let rows: [(String, TriggerSpec, String)] = [
            ("every 1us", .every(TimeSpan(microseconds: 1), count: nil, starting: .instant(t0 + .seconds(5)), until: nil), "every"),
            ("every minute", .every(.minutes(1), count: nil, starting: .instant(t0 + .seconds(5)), until: nil), "every"),
            ("reminders 1 ms apart", .remindBefore(event: .instant(t0 + .seconds(3600)), offsets: [TimeSpan(microseconds: 2_000), TimeSpan(microseconds: 1_000)]), "remind_before"),
            ("a calendar elapsing every minute", .onCalendar(try CalendarSpec.parse("*:*")), "on_calendar"),
        ]
        for (name, trigger, field) in rows {
            var s = spec("fast", trigger)
            s.fleet = true
            do {
                try await c.scheduleFromFleet(s)
                Issue.record("\(name): accepted")
            } catch {
                #expect(error.field == field, "\(name): \(error)")
                #expect(error.message.contains("min_period"), "\(name): \(error)")
            }
            #expect(await c.lookup("fast") == nil, "\(name): nothing scheduled")
        }
        var slow = spec("slow", .every(.minutes(2), count: nil, starting: .instant(t0 + .seconds(5)), until: nil))
        slow.fleet = true
        try await c.scheduleFromFleet(slow)
        #expect(await c.lookup("slow") != nil, "at the floor it is scheduled")
    }

    @Test("a snooze from the fleet lasts until its instant, and a local snooze tells the backend its end")
    func snoozeUntil() async throws {
        let fleet = FleetSpy()
        let (c, clock, spy) = try await center(fleet: fleet)
        // Repeating: a one-shot is forgotten once both backends confirm it, which may come before
        // the snoozes below.
        try await c.schedule(spec("tea", .every(.hours(1), count: nil, starting: .instant(t0 + .seconds(10)), until: nil), backends: ["spy", "fleet"]))
        clock.advance(by: .seconds(10))
        await c.tick()
        #expect(await spy.wait { d, _ in d.count == 1 })
        let until = t0 + .seconds(10 + 90)
        #expect(try await c.snoozeFromFleet("tea", until: until) == until)
        #expect(await c.lookup("tea")?.nextFire == until)
        // The snooze's end reaches the backends with the withdraw.
        let mine = try await c.snooze("tea", for: .seconds(42))
        #expect(mine == t0 + .seconds(52))
        await c.waitForDeliveries()
        #expect(fleet.withdrawals.filter { $0.reason == .snoozed }.map(\.until) == [until, mine])
        // One already over there is due again now.
        #expect(try await c.snoozeFromFleet("tea", until: t0) == clock.now() + TimeSpan(microseconds: 1))
    }

    @Test("a schedule and a cancel from the fleet sent back to back are applied in that order")
    func receivedInOrder() async throws {
        let fleet = FleetSpy()
        let (c, _, _) = try await center(fleet: fleet)
        let events = await c.events()
        for i in 0..<1000 {
            var s = spec("tea-\(i)", .after(.seconds(60)))
            s.fleet = true
            fleet.receive(.fleetSchedule(s))
            fleet.receive(.fleetCancel(key: "tea-\(i)"))
        }
        // Reversed, a cancel finds nothing (no event) and the schedule after it stays.
        let cancelled = try await withTimeout(.seconds(10), "1000 Cancelled events") { () async -> Int in
            var n = 0
            for await e in events {
                if case .cancelled = e { n += 1 }
                if n == 1000 { break }
            }
            return n
        }
        #expect(cancelled == 1000)
        #expect(await c.list().isEmpty)
        // The backend hears the cancels (it publishes only keys it still shares) but no schedule.
        #expect(!fleet.calls.contains { if case .scheduled = $0 { true } else { false } }, "shared back: \(fleet.calls)")
    }

    @Test("regression: a cancel from the fleet that could not be saved (a full disk) is applied once the disk has room")
    func fleetEventRetried() async throws {
        let fleet = FleetSpy()
        let store = InMemoryStore()
        let clock = VirtualClock(now: t0)
        let c = try await memoryCenter(store, clock, [RecordingBackend(name: "spy"), fleet])
        try await c.schedule(spec("tea", .at(.instant(t0 + .seconds(3600)))))
        store.fill()
        fleet.receive(.fleetCancel(key: "tea"))
        // The failed save leaves a retry waiting on the clock; the notification is still there.
        try await withTimeout(.seconds(10), "the retry's wait") { await clock.waitForSleepers() }
        #expect(await c.lookup("tea") != nil)
        #expect(!store.state.value.failed.isEmpty, "the first try failed to save")
        store.state.update { $0.full = false }
        let events = await c.events()
        clock.advance(by: .seconds(1))
        _ = try await withTimeout(.seconds(10), "the retried cancel") { () async -> Bool in
            for await e in events { if case .cancelled = e { return true } }
            return false
        }
        #expect(await c.lookup("tea") == nil)
        #expect(store.state.value.rows["tea"]?.cancelled ?? true, "the cancel is durable")
    }

    @Test("a retry that newer news overtook is dropped (a fleet schedule cancelled meanwhile); one nothing overtook is applied")
    func staleRetriesDropped() async throws {
        let fleet = FleetSpy()
        let store = InMemoryStore()
        let clock = VirtualClock(now: t0)
        let lines = WaitableState<[String]>([])
        let c = try await memoryCenter(store, clock, [RecordingBackend(name: "spy"), fleet], logger: RecordingLogHandler.logger(lines))

        // A schedule that could not be saved, then a cancel of the same key: the schedule must not
        // come back when the disk has room.
        store.fill()
        var s = spec("tea", .at(.instant(t0 + .seconds(3600))))
        s.fleet = true
        fleet.receive(.fleetSchedule(s))
        try await withTimeout(.seconds(10), "the retry's wait") { await clock.waitForSleepers() }
        fleet.receive(.fleetCancel(key: "tea"))
        store.state.update { $0.full = false }
        clock.advance(by: .seconds(1))
        try await lines.wait("the dropped retry", timeout: .seconds(10)) { $0.contains { $0.contains("not tried again") } }
        #expect(await c.lookup("tea") == nil, "the cancelled schedule stays cancelled")

        // Unchanged news is still applied: a second schedule fails, nothing overtakes it, and it
        // is scheduled once the disk has room.
        store.fill()
        var s2 = spec("coffee", .at(.instant(t0 + .seconds(3600))))
        s2.fleet = true
        fleet.receive(.fleetSchedule(s2))
        try await withTimeout(.seconds(10), "the second retry's wait") { await clock.waitForSleepers() }
        store.state.update { $0.full = false }
        clock.advance(by: .seconds(1))
        try await lines.wait("the applied retry", timeout: .seconds(10)) { $0.contains { $0.contains("applied after 2 tries") } }
        #expect(await c.lookup("coffee") != nil)
    }
}
