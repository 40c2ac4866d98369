public import TocsinTime

/// The wall clock the center reads, and the one it waits on for timeouts and backoff.
/// Injected, so tests run a virtual clock and never sleep.
public protocol TocsinClock: Sendable {
    func now() -> Instant
    /// Suspends until the clock reaches `deadline`; throws `CancellationError` when the task is cancelled.
    func sleep(until deadline: Instant) async throws
}

/// Why the scheduler loop woke up.
public enum WakeReason: Hashable, Sendable {
    /// The armed instant was reached.
    case due
    /// The wall clock was set or the machine resumed: every deadline must be re-evaluated.
    case clockChanged
}

/// A one-shot wall-clock alarm the scheduler loop waits on. Production arms a timerfd at the
/// exact next instant; an idle daemon therefore makes no wakeups at all.
public protocol WakeupTimer: Sendable {
    /// Replaces any earlier arming; nil disarms.
    func arm(at instant: Instant?)
    /// Every wake-up, in order. Finishes when the timer is closed.
    var wakeups: AsyncStream<WakeReason> { get }
    func close()
}
