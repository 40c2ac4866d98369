import Logging
import Testing
import TocsinCore
import TocsinTesting
import TocsinTime

@Suite("Shutdown grace")
struct ShutdownGraceTests {
    @Test("regression: shutdown's grace for a hung delivery elapses on the center's clock, not in real time")
    func graceOnTheCentersClock() async throws {
        let clock = VirtualClock(now: t0)
        let spy = RecordingBackend(name: "spy", behaviour: .hang)
        let log = WaitableState<[String]>([])
        let center = TocsinCenter(options: CenterOptions(defaultZone: .utc), store: InMemoryStore(), clock: clock, timer: clock,
                                  logger: RecordingLogHandler.logger(log))
        try await center.start(backends: [spy])
        try await center.schedule(spec("tea", at(10)))
        clock.advance(by: .seconds(10))
        await center.tick()
        // The delivery hangs; its attempt timeout (10 s on the clock) is the first sleeper.
        try await withTimeout(.seconds(10), "the delivery's timeout to wait on the clock") { await clock.waitForSleepers(atLeast: 1) }
        // Slept in real time, as it was, the grace is never a sleeper on the clock: the next wait times out.
        let shutdown = Task { await center.shutdown(grace: .seconds(5)) }
        try await withTimeout(.seconds(10), "shutdown's grace to wait on the clock") { await clock.waitForSleepers(atLeast: 2) }
        clock.advance(by: .seconds(4))
        #expect(clock.sleeperCount == 2, "a second before the grace ends, shutdown still waits (beside the delivery's timeout)")
        clock.advance(by: .seconds(1))
        try await withTimeout(.seconds(10), "shutdown to return once the grace elapsed") { await shutdown.value }
        _ = try await log.wait("the warning about the unfinished delivery", timeout: .seconds(10)) {
            $0.contains { $0.contains("shutting down with 1 deliveries still running") }
        }
        #expect(spy.deliveries.isEmpty)
    }
}
