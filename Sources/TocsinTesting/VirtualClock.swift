import Synchronization
import TocsinCore
public import TocsinTime
public import TocsinSystem

/// A clock that moves only when a test moves it. It is both the center's clock (timeouts, backoff)
/// and its wake-up timer, so a test sees exactly what production would see at each instant
/// without sleeping.
public final class VirtualClock: TocsinClock, WakeupTimer, Sendable {
    private struct Sleeper {
        var deadline: Instant
        var continuation: CheckedContinuation<Void, any Error>
    }
    private struct State {
        var now: Instant
        var armed: Instant?
        var sleepers: [Int: Sleeper] = [:]
        var nextID = 0
        var armHistory: [Instant?] = []
        /// Tests waiting for at least `count` sleepers.
        var sleeperWaiters: [(id: Int, count: Int, continuation: CheckedContinuation<Void, Never>)] = []
    }
    private let state: Mutex<State>
    public let wakeups: AsyncStream<WakeReason>
    private let continuation: AsyncStream<WakeReason>.Continuation

    public init(now: Instant) {
        state = Mutex(State(now: now))
        (wakeups, continuation) = AsyncStream.makeStream(of: WakeReason.self)
    }

    public func now() -> Instant { state.withLock { $0.now } }

    /// The instant the center last armed its timer for (nil: disarmed).
    public var armedAt: Instant? { state.withLock { $0.armed } }

    /// Every arming, in order: lets a test prove the daemon asks for no needless wake-ups.
    public var armHistory: [Instant?] { state.withLock { $0.armHistory } }

    public func arm(at instant: Instant?) {
        state.withLock {
            $0.armed = instant
            $0.armHistory.append(instant)
        }
    }

    public func close() { continuation.finish() }

    public func sleep(until deadline: Instant) async throws {
        let id = state.withLock { s -> Int in s.nextID += 1; return s.nextID }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (c: CheckedContinuation<Void, any Error>) in
                let (resumeNow, waiters) = state.withLock { s -> (Bool, [CheckedContinuation<Void, Never>]) in
                    if s.now >= deadline { return (true, []) }
                    s.sleepers[id] = Sleeper(deadline: deadline, continuation: c)
                    let n = s.sleepers.count
                    let ready = s.sleeperWaiters.filter { $0.count <= n }.map(\.continuation)
                    s.sleeperWaiters.removeAll { $0.count <= n }
                    return (false, ready)
                }
                if resumeNow { c.resume() }
                for w in waiters { w.resume() }
            }
        } onCancel: {
            let c = state.withLock { $0.sleepers.removeValue(forKey: id) }
            c?.continuation.resume(throwing: CancellationError())
        }
    }

    /// Returns once some task is waiting on this clock (a retry backoff, a timeout): the event a
    /// test waits for before moving time, instead of sleeping.
    public func waitForSleepers() async { await waitForSleepers(atLeast: 1) }

    /// Returns once `count` tasks wait on this clock at the same time: a test that already has
    /// one (a delivery's timeout) waits this way for the next (shutdown's grace). Returns early
    /// when cancelled, so `withTimeout` around it fails at its deadline instead of hanging.
    public func waitForSleepers(atLeast count: Int) async {
        let id = state.withLock { s -> Int in s.nextID += 1; return s.nextID }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                let ready = state.withLock { s -> Bool in
                    if s.sleepers.count >= count || Task.isCancelled { return true }
                    s.sleeperWaiters.append((id, count, c))
                    return false
                }
                if ready { c.resume() }
            }
        } onCancel: {
            let waiter = state.withLock { s -> CheckedContinuation<Void, Never>? in
                guard let i = s.sleeperWaiters.firstIndex(where: { $0.id == id }) else { return nil }
                return s.sleeperWaiters.remove(at: i).continuation
            }
            waiter?.resume()
        }
    }

    /// How many tasks wait on this clock now.
    public var sleeperCount: Int { state.withLock { $0.sleepers.count } }

    /// Moves time forward, wakes sleepers whose deadline passed, and posts `.due` to the loop if the
    /// armed instant was reached. Returns whether the timer fired.
    @discardableResult
    public func advance(to instant: Instant) -> Bool {
        let (due, woken) = state.withLock { s -> (Bool, [CheckedContinuation<Void, any Error>]) in
            s.now = max(s.now, instant)
            let fire = s.armed.map { $0 <= s.now } ?? false
            if fire { s.armed = nil }
            let ready = s.sleepers.filter { $0.value.deadline <= s.now }
            for k in ready.keys { s.sleepers[k] = nil }
            return (fire, ready.values.map(\.continuation))
        }
        for c in woken { c.resume() }
        if due { continuation.yield(.due) }
        return due
    }

    @discardableResult
    public func advance(by span: TimeSpan) -> Bool { advance(to: now() + span) }

    /// Time that passes while the machine is suspended: the clock moves, and nothing is told
    /// (neither the loop nor sleepers), as nothing runs until the machine resumes and someone
    /// (logind's `PrepareForSleep(false)`, the kernel's timers) says so.
    public func passWhileSuspended(_ span: TimeSpan) {
        state.withLock { $0.now = $0.now + span }
    }

    /// Sets the wall clock to any instant, forward or back, as `date -s` or a resume would, and tells
    /// the loop the clock changed.
    public func jump(to instant: Instant) {
        let woken = state.withLock { s -> [CheckedContinuation<Void, any Error>] in
            s.now = instant
            let ready = s.sleepers.filter { $0.value.deadline <= s.now }
            for k in ready.keys { s.sleepers[k] = nil }
            return ready.values.map(\.continuation)
        }
        for c in woken { c.resume() }
        continuation.yield(.clockChanged)
    }
}
