import CTocsinSystem
import Synchronization
public import TocsinTime
#if canImport(Glibc)
import Glibc
#endif

/// CLOCK_REALTIME, the clock notifications are written in.
public struct SystemClock: TocsinClock {
    public init() {}
    public func now() -> Instant { Instant(microseconds: tocsin_realtime_usec()) }
    public func sleep(until deadline: Instant) async throws {
        let delta = deadline.microseconds - now().microseconds
        if delta > 0 { try await Task.sleep(for: .microseconds(delta)) }
        try Task.checkCancellation()
    }
}

/// A timerfd on CLOCK_REALTIME armed with TFD_TIMER_ABSTIME | TFD_TIMER_CANCEL_ON_SET, watched by
/// one thread blocked in poll(2) with no timeout: it wakes exactly when something is due, when
/// the clock is set, or on resume, and never otherwise.
///
/// Checked `Sendable`: the descriptors are immutable, the stream and its continuation are
/// thread-safe, and the mutable state (the armed instant, the thread handle) sits in `Mutex`es,
/// so `arm` and `close` may come from any thread, `close` more than once.
public final class TimerFDWakeup: WakeupTimer, Sendable {
    private let timerFD: Int32
    private let stopFD: Int32
    private let armed = Mutex<Instant?>(nil)
    public let wakeups: AsyncStream<WakeReason>
    private let continuation: AsyncStream<WakeReason>.Continuation
    /// The poll thread until `close` takes it to join; nil afterwards.
    private let thread = Mutex<pthread_t?>(nil)

    public struct SetupError: Error, CustomStringConvertible {
        public var description: String
    }

    public init() throws(SetupError) {
        timerFD = tocsin_timerfd_create_realtime()
        stopFD = tocsin_eventfd_create()
        guard timerFD >= 0, stopFD >= 0 else {
            throw SetupError(description: "cannot create timerfd/eventfd: \(String(cString: strerror(errno)))")
        }
        (wakeups, continuation) = AsyncStream.makeStream(of: WakeReason.self, bufferingPolicy: .bufferingNewest(16))
        switch WorkerThread.startJoinable({ self.runLoop() }) {
        case .success(let t): thread.withLock { $0 = t }
        case .failure(let e): throw SetupError(description: "cannot start timer thread: \(e.code)")
        }
    }

    deinit {
        Glibc.close(timerFD)
        Glibc.close(stopFD)
    }

    public func arm(at instant: Instant?) {
        armed.withLock { $0 = instant }
        if let instant {
            _ = tocsin_timerfd_arm_absolute(timerFD, instant.microseconds)
        } else {
            _ = tocsin_timerfd_disarm(timerFD)
        }
    }

    public func close() {
        _ = tocsin_eventfd_signal(stopFD)
        // Taken under the lock and joined outside it: a second `close` finds nil and does not
        // join the same thread twice.
        if let t = thread.withLock({ $0.take() }) {
            pthread_join(t, nil)
        }
        continuation.finish()
    }

    fileprivate func runLoop() {
        var fds = [pollfd(fd: timerFD, events: Int16(POLLIN), revents: 0),
                   pollfd(fd: stopFD, events: Int16(POLLIN), revents: 0)]
        while true {
            fds[0].revents = 0; fds[1].revents = 0
            let n = poll(&fds, 2, -1)
            if n < 0 {
                if errno == EINTR { continue }
                return
            }
            if fds[1].revents != 0 { return }
            if fds[0].revents != 0 {
                let r = tocsin_timerfd_read(timerFD)
                if r > 0 {
                    continuation.yield(.due)
                } else if r == -1 {
                    // The clock was set: the kernel cancelled the timer; the loop re-arms after re-evaluating.
                    continuation.yield(.clockChanged)
                }
            }
        }
    }
}
