import Testing
import TocsinConfig
import TocsinCore
import TocsinTesting
import TocsinTime
import TocsinModel

/// A delivery retrying with backoff while its key is withdrawn: the withdraw must end every
/// attempt still queued for that key and backend before it runs, or the sound of an acknowledged
/// alarm starts once the player works again, with its stop queued behind it.
@Suite("Withdrawing a key whose delivery is retrying")
struct RetryWithdrawTests {
    /// As a sound backend with no sound server: every attempt fails, and is retried.
    static let unavailable = RecordingBackend.Behaviour.fail(DeliveryError(.unavailable, "no sound server"))

    /// Fires `key` at 10 s and again at 20 s, every attempt failing, so that at 21 s the first
    /// delivery waits to retry and the second is queued behind it.
    func retrying(_ key: String, on backend: RecordingBackend, _ trigger: TriggerSpec) async throws -> Harness {
        let h = try await Harness(backends: [backend])
        try await h.center.schedule(spec(key, trigger, backends: [backend.name]))
        await h.advance(10)
        await h.clock.waitForSleepers()
        await h.advance(10)
        await h.advance(1)
        await h.clock.waitForSleepers()
        #expect(backend.attempts >= 2)
        #expect(backend.deliveries.isEmpty)
        return h
    }

    /// Lets the backend work again and moves the clock through every backoff the policy has.
    func recoverAndRunOut(_ h: Harness, _ backend: RecordingBackend) async {
        backend.setBehaviour(.succeed)
        for _ in 0..<90 {
            await h.advance(1)
            await Task.yield()
        }
        await h.center.waitForDeliveries()
    }

    @Test("acknowledging a ringing alarm ends its retries: no ring after it, and the stop arrives at once")
    func acknowledge() async throws {
        let alarm = RecordingBackend(name: "alarm", ringPolicy: RingPolicy(every: .seconds(10), maxRings: 10),
                                     behaviour: Self.unavailable)
        let h = try await retrying("wake", on: alarm, at(10))
        #expect(try await h.center.acknowledge("wake"))
        #expect(await alarm.wait { _, w in w.contains { $0.key == "wake" && $0.reason == .acknowledged } },
                "the stop waited behind a retry")
        await recoverAndRunOut(h, alarm)
        #expect(alarm.deliveries.isEmpty, "rang after the acknowledge")
        #expect(alarm.withdrawals.map(\.reason) == [.acknowledged])
    }

    @Test("cancelling a repeating notification ends its retries: nothing delivered after the cancel")
    func cancel() async throws {
        let popup = RecordingBackend(name: "popup", behaviour: Self.unavailable)
        let h = try await retrying("stretch", on: popup, .every(.seconds(10), count: nil, starting: nil, until: nil))
        try await h.center.cancel("stretch")
        #expect(await popup.wait { _, w in w.contains { $0.key == "stretch" && $0.reason == .cancelled } },
                "the withdraw waited behind a retry")
        await recoverAndRunOut(h, popup)
        #expect(popup.deliveries.isEmpty, "delivered after the cancel")
    }

    @Test("replacing a ringing alarm ends its retries: the old ring is not delivered after the replace")
    func replace() async throws {
        let alarm = RecordingBackend(name: "alarm", ringPolicy: RingPolicy(every: .seconds(10), maxRings: 10),
                                     behaviour: Self.unavailable)
        let h = try await retrying("wake", on: alarm, at(10))
        try await h.center.schedule(spec("wake", at(3600), backends: ["alarm"]))
        #expect(await alarm.wait { _, w in w.contains { $0.key == "wake" && $0.reason == .replaced } },
                "the withdraw waited behind a retry")
        await recoverAndRunOut(h, alarm)
        #expect(alarm.deliveries.isEmpty, "the replaced alarm rang after the replace")
    }

    @Test("a backend a reload removed gets no retry of a firing it was failing")
    func removedByReload() async throws {
        let sound = RecordingBackend(name: "sound", behaviour: Self.unavailable)
        let spy = RecordingBackend(name: "spy")
        let h = try await Harness(backends: [sound, spy])
        try await h.center.schedule(spec("tea", at(10), backends: ["sound"]))
        await h.advance(10)
        await h.clock.waitForSleepers()
        try await h.center.reload(backends: [spy], specs: [], quiet: QuietSettings())
        sound.setBehaviour(.succeed)
        for _ in 0..<90 {
            await h.advance(1)
            await Task.yield()
        }
        await h.center.waitForDeliveries()
        #expect(sound.deliveries.isEmpty, "delivered to a backend no longer configured")
    }
}
