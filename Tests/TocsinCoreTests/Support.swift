import Foundation
import Logging
import Testing
import TocsinConfig
import TocsinCore
import TocsinTesting
import TocsinTime
import TocsinModel

/// 2026-03-02T09:00:00Z: a Monday, far from DST changes, so tests read naturally.
let t0 = Instant(seconds: 1_772_442_000)

func spec(_ key: String?, _ trigger: TriggerSpec, title: String = "Tea", backends: [String]? = nil,
          missed: MissedPolicy? = nil, maxLate: TimeSpan? = nil) -> NotificationSpec {
    var s = NotificationSpec()
    s.key = key
    s.title = title
    s.trigger = trigger
    s.backends = backends
    s.missed = missed
    s.maxLate = maxLate
    return s
}

func at(_ seconds: Int64) -> TriggerSpec { .at(.instant(t0 + .seconds(seconds))) }

typealias TempDir = TemporaryDirectory

/// Drops everything: these tests assert on events and state, not on the log.
let quietLogger = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })

/// A started center over `store` (the in-memory store, whose commits a test can hold at a gate
/// or fail) and a virtual clock that is also its timer.
func memoryCenter(_ store: InMemoryStore, _ clock: VirtualClock, _ backends: [any DeliveryBackend],
                  options: CenterOptions = CenterOptions(defaultZone: .utc), logger: Logger = quietLogger) async throws -> TocsinCenter {
    let c = TocsinCenter(options: options, store: store, clock: clock, timer: clock, logger: logger)
    try await c.start(backends: backends)
    return c
}

/// Schedules one-shots "b0", "b1", ... due together, sixteen requests in flight: a burst reaches
/// the center through its group commits as concurrent clients' requests would, not one batch each.
func scheduleBurst(_ count: Int, dueAt seconds: Int64, on center: TocsinCenter) async throws {
    try await withThrowingTaskGroup(of: Void.self) { group in
        for lane in 0..<16 {
            group.addTask {
                for i in stride(from: lane, to: count, by: 16) { _ = try await center.schedule(spec("b\(i)", at(seconds))) }
            }
        }
        try await group.waitForAll()
    }
}

/// One center over a virtual clock and spy backends; `restart()` simulates a new process on the same state.
final class Harness: @unchecked Sendable {
    let dir: TempDir
    let clock: VirtualClock
    var backends: [RecordingBackend]
    /// Backends other than spies (a batch backend's own double), started after `backends`.
    let others: [any DeliveryBackend]
    var center: TocsinCenter
    var options: CenterOptions

    init(backends: [RecordingBackend] = [RecordingBackend(name: "spy")], others: [any DeliveryBackend] = [], now: Instant = t0,
         configure: (inout CenterOptions) -> Void = { _ in }) async throws {
        dir = TempDir()
        clock = VirtualClock(now: now)
        self.backends = backends
        self.others = others
        var o = CenterOptions(defaultZone: .utc)
        configure(&o)
        options = o
        center = try TocsinCenter(options: o, stateDirectory: dir.path, clock: clock, timer: clock,
                                  logger: quietLogger)
        try await center.start(backends: backends + others)
    }

    var spy: RecordingBackend { backends[0] }

    /// A new center on the same state directory and clock, as after `kill -9` and a restart.
    func restart(backends new: [RecordingBackend]? = nil) async throws {
        if let new { backends = new }
        center = try TocsinCenter(options: options, stateDirectory: dir.path, clock: clock, timer: clock,
                                  logger: quietLogger)
        try await center.start(backends: backends + others)
    }

    /// Moves the virtual clock and lets the center handle what became due.
    func advance(_ seconds: Int64) async {
        clock.advance(by: .seconds(seconds))
        await center.tick()
    }

    /// Moves the virtual clock to where the center armed its timer, lets it handle the wake-up and
    /// whatever that dispatched, and returns that instant.
    func wake() async throws -> Instant {
        let armed = try #require(clock.armedAt)
        clock.advance(to: armed)
        await center.tick()
        await center.waitForDeliveries()
        return armed
    }

    /// Everything delivered so far, once every dispatched delivery has finished: turns "nothing
    /// else was delivered" into an assertion that cannot pass by luck of timing.
    func settled() async -> [Firing] {
        await center.waitForDeliveries()
        return spy.deliveries
    }
}
