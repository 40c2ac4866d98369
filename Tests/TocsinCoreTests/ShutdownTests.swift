import Logging
import Synchronization
import Testing
@testable import TocsinCore
import TocsinModel
import TocsinTesting
import TocsinTime

/// What a stop does to a batch already under way: its claims are made, so it must end before
/// the backends shut down and the store closes. A slice handed over after that would reach a
/// backend that is gone, or (committed on a closed store) be delivered unrecorded and delivered
/// again by the next start as missed.
@Suite("Shutting the center down mid-batch")
struct ShutdownTests {
    /// Counts deliveries, and those that came after its shutdown.
    final class Spy: DeliveryBackend, Sendable {
        let name = "spy"
        struct State { var keys: [String] = [], down = false, afterDown = 0 }
        let state = Mutex(State())
        let first = WaitableState(false)
        var ringPolicy: RingPolicy? { nil }
        var quietMode: QuietMode { .deliver }
        func start(events: any BackendEventSink) async { state.withLock { $0.down = false } }
        func deliver(_ firing: Firing) async throws(DeliveryError) {
            state.withLock { s in
                s.keys.append(firing.key)
                if s.down { s.afterDown += 1 }
            }
            first.update { $0 = true }
        }
        func withdraw(key: String, reason: WithdrawReason) async {}
        func shutdown() async { state.withLock { $0.down = true } }
        func health() async -> BackendHealth { .ok }
    }

    /// Stands in for the mqtt backend at a stop: fleet messages its network thread received just
    /// before the thread was joined reach the sink while `shutdown()` runs. The backend has
    /// already counted them as handled, and the broker will not send them again.
    final class LastMessages: DeliveryBackend, Sendable {
        let name = "fleet"
        let keys: [String]
        let sink = Mutex<(any BackendEventSink)?>(nil)
        init(keys: [String]) { self.keys = keys }
        var ringPolicy: RingPolicy? { nil }
        func start(events: any BackendEventSink) async { sink.withLock { $0 = events } }
        func deliver(_ firing: Firing) async throws(DeliveryError) {}
        func withdraw(key: String, reason: WithdrawReason) async {}
        func shutdown() async {
            guard let events = sink.withLock({ $0 }) else { return }
            for key in keys { events.send(.fleetCancel(key: key)) }
        }
        func health() async -> BackendHealth { .ok }
    }

    /// The store used to close as soon as the backends had shut down, and what they had relayed
    /// but the center had not yet applied was refused, and lost (all 50 here).
    @Test("what a backend relays as it shuts down is applied before the store closes, and survives the restart")
    func relayedAtTheBackendsShutdown() async throws {
        let keys = (0..<50).map { "f\($0)" }
        let h = try await Harness(others: [LastMessages(keys: keys)])
        for key in keys { try await h.center.schedule(spec(key, at(60))) }
        await h.center.shutdown()
        try await h.restart()
        let left = await h.center.list().map(\.notification.key)
        #expect(left.count == 0, "cancels relayed at the stop and lost: \(left.count) of \(keys.count), e.g. \(left.sorted().prefix(3))")
    }

    /// Calls made before the state has loaded wait for it; a stop then used to leave them
    /// waiting for ever, since the stop closes the store and no batch runs them.
    @Test("a stop while the state loads answers the calls waiting for the load with Stopping, and start gives up")
    func stopWhileLoading() async throws {
        let store = InMemoryStore()
        let clock = VirtualClock(now: t0)
        let c = TocsinCenter(options: CenterOptions(defaultZone: .utc), store: store, clock: clock, timer: clock, logger: quietLogger)
        store.hold()
        let start = Task { try await c.start(backends: [RecordingBackend(name: "spy")]) }
        try await store.state.wait("the load at the gate", timeout: .seconds(10)) { $0.waiting == 1 }
        let call = Task { try await c.schedule(spec("tea", at(10))) }
        try await waitUntil("the call to wait for the load") { await c.queuedRequests >= 1 }
        await c.shutdown()
        let answer = try await withTimeout(.seconds(10), "the waiting call's answer") { await call.result }
        #expect(answer.failureCode == .stopping, "the call waiting for the load: \(answer)")
        store.release()
        let started = try await withTimeout(.seconds(10), "start to give up") { await start.result }
        #expect(started.failureCode == .stopping, "start: \(started)")
    }

    /// An alarm whose person answers just as it shuts down: the Acknowledge reaches the sink
    /// during `shutdown()`, as a popup's button pressed in the stop's last moments.
    final class AnsweredAtTheStop: DeliveryBackend, Sendable {
        let name = "alarm"
        let sink = Mutex<(any BackendEventSink)?>(nil)
        var ringPolicy: RingPolicy? { RingPolicy(every: .minutes(1), maxRings: 10) }
        func start(events: any BackendEventSink) async { sink.withLock { $0 = events } }
        func deliver(_ firing: Firing) async throws(DeliveryError) {}
        func withdraw(key: String, reason: WithdrawReason) async {}
        func shutdown() async { sink.withLock { $0 }?.send(.acknowledge(key: "wake")) }
        func health() async -> BackendHealth { .ok }
    }

    @Test("an Acknowledge relayed as the stop shuts the alarm down still reaches the fleet backend before it shuts down")
    func answerAtTheStopReachesTheFleet() async throws {
        let fleet = FleetSpy()
        let h = try await Harness(backends: [], others: [AnsweredAtTheStop(), fleet])
        try await h.center.schedule(spec("wake", at(10), backends: ["alarm", "fleet"]))
        await h.advance(10)
        await h.center.waitForDeliveries()
        #expect(await h.center.lookup("wake")?.state == .ringing(since: t0 + .seconds(10), rings: 1))
        await h.center.shutdown()
        let told = fleet.withdrawalsAtShutdown?.filter { $0.key == "wake" }.map(\.reason)
        #expect(told == [.acknowledged], "what the fleet backend was told before it shut down: \(String(describing: told))")
        try await h.restart()
        #expect(await h.center.lookup("wake") == nil, "the Acknowledge was not applied")
    }

    /// The mqtt backend at a stop, as a fleet link: a cancel and a schedule its network thread
    /// received just before it was joined reach the sink during `shutdown()`, and it counts what
    /// it is asked to share once shut down.
    final class FleetMessagesAtTheStop: DeliveryBackend, FleetLink, Sendable {
        let name = "fleet"
        struct State { var sink: (any BackendEventSink)?, down = false, sharedAfterDown: [String] = [] }
        let state = Mutex(State())
        var ringPolicy: RingPolicy? { nil }
        var fleetLink: (any FleetLink)? { self }
        func start(events: any BackendEventSink) async { state.withLock { $0.sink = events } }
        func deliver(_ firing: Firing) async throws(DeliveryError) {}
        func withdraw(key: String, reason: WithdrawReason) async {}
        func shutdown() async {
            let sink = state.withLock { s in s.down = true; return s.sink }
            sink?.send(.fleetCancel(key: "tea"))
            var shared = spec("coffee", at(120), backends: ["fleet"])
            shared.fleet = true
            sink?.send(.fleetSchedule(shared))
        }
        func health() async -> BackendHealth { .ok }
        func scheduled(_ n: TocsinCore.Notification, fleet: Bool) async {}
        func cancelled(key: String) async { state.withLock { if $0.down { $0.sharedAfterDown.append(key) } } }
    }

    @Test("a fleet cancel and a fleet schedule received as the fleet backend shuts down are applied, and that backend, already down, is not asked to share anything")
    func fleetMessagesAtTheStop() async throws {
        let fleet = FleetMessagesAtTheStop()
        let h = try await Harness(backends: [], others: [fleet])
        try await h.center.schedule(spec("tea", at(60), backends: ["fleet"]))
        await h.center.shutdown()
        #expect(fleet.state.withLock { $0.sharedAfterDown }.isEmpty, "shared after its shutdown: \(fleet.state.withLock { $0.sharedAfterDown })")
        try await h.restart()
        #expect(await h.center.lookup("tea") == nil, "the cancel was not applied")
        #expect(await h.center.lookup("coffee") != nil, "the fleet schedule was not applied")
    }

    /// Records its start and shutdown; a gated one's start waits until the test opens it.
    final class Lifecycle: DeliveryBackend, Sendable {
        let name: String
        let steps = WaitableState<[String]>([])
        let gate: WaitableState<Bool>?
        init(_ name: String, gated: Bool = false) { self.name = name; gate = gated ? WaitableState(false) : nil }
        var ringPolicy: RingPolicy? { nil }
        func start(events: any BackendEventSink) async {
            steps.update { $0.append("starting") }
            _ = try? await gate?.wait("the test to let the start end", timeout: .seconds(60)) { $0 }
            steps.update { $0.append("started") }
        }
        func deliver(_ firing: Firing) async throws(DeliveryError) {}
        func withdraw(key: String, reason: WithdrawReason) async {}
        func shutdown() async { steps.update { $0.append("shut down") } }
        func health() async -> BackendHealth { .ok }
    }

    @Test("a stop while a backend starts: that backend is shut down once started, the next is never started, and start gives up")
    func stopWhileABackendStarts() async throws {
        let (slow, next) = (Lifecycle("slow", gated: true), Lifecycle("next"))
        let c = TocsinCenter(options: CenterOptions(defaultZone: .utc), store: InMemoryStore(), clock: VirtualClock(now: t0),
                             timer: VirtualClock(now: t0), logger: quietLogger)
        let start = Task { try await c.start(backends: [slow, next]) }
        _ = try await slow.steps.wait("the slow start", timeout: .seconds(10)) { $0 == ["starting"] }
        await c.shutdown()
        slow.gate?.update { $0 = true }
        let started = try await withTimeout(.seconds(10), "start to give up") { await start.result }
        #expect(started.failureCode == .stopping, "start: \(started)")
        #expect(slow.steps.value.last == "shut down", "left running: \(slow.steps.value)")
        #expect(!next.steps.value.contains("starting"), "started after the stop: \(next.steps.value)")
    }

    @Test("a stop during a burst finishes the batch first: every firing reaches the backend while it is up, once, and none again after the restart")
    func stopDuringABurst() async throws {
        let total = 3_000
        let spy = Spy()
        let h = try await Harness(backends: [], others: [spy])
        try await scheduleBurst(total, dueAt: 10, on: h.center)
        h.clock.advance(to: t0 + .seconds(10))
        let center = h.center
        let tick = Task { await center.tick() }
        // The batch is under way: its first slice has reached the backend, the others not yet.
        _ = try await spy.first.wait("the burst's first delivery", timeout: .seconds(20)) { $0 }
        let before = spy.state.withLock { $0.keys.count }
        try #require(before < total, "the whole burst went out before the stop: nothing left to test")
        // A grace the virtual clock never reaches: the stop waits for every delivery it let start.
        await center.shutdown(grace: .seconds(2))
        await tick.value
        let firstRun = spy.state.withLock { $0 }

        try await h.restart()
        await h.center.tick()
        await h.center.waitForDeliveries()
        var seen: [String: Int] = [:]
        for key in spy.state.withLock({ $0.keys }) { seen[key, default: 0] += 1 }
        let twice = seen.filter { $0.value > 1 }
        #expect(firstRun.keys.count == total, "delivered before the stop")
        #expect(firstRun.afterDown == 0, "delivered to a backend already shut down")
        #expect(twice.count == 0, "delivered again after the restart: \(twice.count), e.g. \(twice.keys.sorted().prefix(3))")
        #expect(seen.count == total)
    }

    /// Review finding: the stop released what was claimed ahead before it waited for the batch
    /// under way, and the wake-up's own batch (which claims ahead and fsyncs) is the one most
    /// likely to be running at a SIGTERM: its claims were staged after the release and never
    /// handed over, to be reported interrupted by the next start.
    @Test("a stop while the wake-up's claims ahead are committing: the firing still goes out, early, before the stop ends")
    func stopDuringTheClaimAhead() async throws {
        let store = InMemoryStore()
        let clock = VirtualClock(now: t0)
        let spy = RecordingBackend(name: "spy")
        let c = try await memoryCenter(store, clock, [spy])
        try await c.schedule(spec("tea", at(10)))
        let claimAt = try #require(clock.armedAt)
        #expect(claimAt < t0 + .seconds(10))
        store.hold()
        clock.advance(to: claimAt)
        let tick = Task { await c.tick() }
        try await store.state.wait("the claim's commit at the gate", timeout: .seconds(10)) { $0.waiting == 1 }
        let stop = Task { await c.shutdown(grace: .seconds(2)) }
        try await waitUntil("the stop to begin") { await c.stopping }
        store.release()
        await tick.value
        await stop.value
        #expect(spy.deliveredKeys == ["tea"], "claimed ahead while the stop began, and never handed over")
    }
}

extension Result where Failure == any Error {
    /// The center's error code, nil on success or another error: an expectation reads as one
    /// comparison.
    var failureCode: CenterError.Code? {
        if case .failure(let e) = self { return (e as? CenterError)?.code }
        return nil
    }
}
