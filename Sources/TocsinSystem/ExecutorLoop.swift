// The scheduling protocol is SPI in Swift 6.3 (SE-0505 "Delayed Enqueuing for Executors" is not
// final), but Task.sleep already looks for it instead of calling the runtime's WithDeadline hook.
@_spi(ExperimentalScheduling) import _Concurrency
import CTocsinSystem
import Glibc
import HeapModule
import Synchronization

/// Why the loop, or a descriptor it watches, could not be made: the kernel refused a descriptor,
/// in practice because the process is at its open-files limit (`ulimit -n`). A value, so that
/// `tocsin` can say so and exit instead of trapping.
public struct LoopError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The descriptor the kernel refused; a closed set, as `CenterError.Code`.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum _Code: String, Hashable, Sendable { case epoll, eventfd, timerfd, signalfd }
        private let code: _Code
        private init(_ code: _Code) { self.code = code }
        public var description: String { code.rawValue }

        public static let epoll = Code(.epoll)
        public static let eventfd = Code(.eventfd)
        public static let timerfd = Code(.timerfd)
        public static let signalfd = Code(.signalfd)
    }

    public var code: Code
    public var errno: Int32
    public init(_ code: Code, errno: Int32) { self.code = code; self.errno = errno }
    public var description: String { "cannot create \(code): \(String(cString: strerror(errno)))" }
}

/// A file descriptor owned by one object, so that whoever drops the last reference closes it and
/// no code path can leak or double-close it.
final class OwnedDescriptor: Sendable {
    let fd: Int32

    private init(_ fd: Int32) { self.fd = fd }

    /// Runs `create` and owns what it returns; errno is read right after the call, before
    /// anything (an allocation) could change it.
    static func make(_ code: LoopError.Code, _ create: () -> Int32) throws(LoopError) -> OwnedDescriptor {
        let fd = create()
        guard fd >= 0 else { throw LoopError(code, errno: errno) }
        return OwnedDescriptor(fd)
    }

    deinit { close(fd) }
}

/// The loop behind Tocsin's global executor: one thread runs every job, waiting in `epoll_wait`
/// with no timeout, woken only by an eventfd (work from another thread), ONE monotonic timerfd
/// armed at the earliest delayed job, and the descriptors it watches (signalfd).
///
/// It exists because libdispatch, Swift's default executor on Linux, runs a 1 Hz monitor timer
/// once its root queues are used, so an idle daemon woke every second. One thread suffices: the
/// daemon's work is small and serial, and blocking work (SQLite commits, libdbus, players) has
/// its own threads already.
///
/// Any thread may enqueue; `run(until:)` drives the loop on the calling thread. Usable without
/// the runtime hooks: tests enqueue closures and run tasks on it through `executor`.
public final class ExecutorLoop: @unchecked Sendable {
    // @unchecked: the mutable state is all inside `state` (a Mutex); the descriptors are
    // immutable, and `epoll_ctl`, `timerfd_settime` and eventfd writes are thread-safe. The one
    // `var`, `scheduler`, is written once in `init`, before `self` can reach another thread, and
    // only read afterwards.

    enum Work: Sendable {
        case global(UnownedJob)
        case main(UnownedJob)
        case task(UnownedJob)
        case closure(@Sendable () -> Void)
    }

    struct Delayed: Comparable, Sendable {
        let deadline: Int64
        let sequence: UInt64
        let work: Work

        static func < (a: Delayed, b: Delayed) -> Bool {
            (a.deadline, a.sequence) < (b.deadline, b.sequence)
        }

        static func == (a: Delayed, b: Delayed) -> Bool { a.deadline == b.deadline && a.sequence == b.sequence }
    }

    struct State: ~Copyable {
        var ready: [Work] = []
        var delayed = Heap<Delayed>()
        var sequence: UInt64 = 0
        /// The deadline the timerfd is armed for (nil: disarmed).
        var armed: Int64?
        /// The loop is (about to be) blocked in epoll_wait and must be woken through the eventfd.
        var waiting = false
        var signalled = false
        var watchers: [Int32: @Sendable () -> Void] = [:]
    }

    private let epoll: OwnedDescriptor
    private let wakeup: OwnedDescriptor
    private let timer: OwnedDescriptor
    private let state = Mutex(State())

    /// The loop as a task executor (`Task(executorPreference:)`), including `Task.sleep`.
    public var executor: any TaskExecutor { scheduler }
    /// Set once at the end of `init` (it refers back to the loop), read-only afterwards.
    private var scheduler: LoopTaskExecutor!

    /// Throws if the kernel refuses one of its three descriptors; those already made are closed.
    public init() throws(LoopError) {
        epoll = try OwnedDescriptor.make(.epoll) { tocsin_epoll_create() }
        wakeup = try OwnedDescriptor.make(.eventfd) { tocsin_eventfd_create() }
        timer = try OwnedDescriptor.make(.timerfd) { tocsin_timerfd_create_monotonic() }
        _ = tocsin_epoll_add(epoll.fd, wakeup.fd, TOCSIN_EPOLLIN)
        _ = tocsin_epoll_add(epoll.fd, timer.fd, TOCSIN_EPOLLIN)
        scheduler = LoopTaskExecutor(self)
    }

    /// The loop's clock: `CLOCK_MONOTONIC` in nanoseconds.
    public static func now() -> Int64 { tocsin_monotonic_nsec() }

    // MARK: Enqueueing (any thread)

    /// Runs `work` on the loop thread, after everything already enqueued.
    public func enqueue(_ work: @escaping @Sendable () -> Void) { push(.closure(work)) }

    /// Runs `work` on the loop thread once `CLOCK_MONOTONIC` reaches `deadline` (nanoseconds, see
    /// `now()`); jobs with equal deadlines run in the order they were enqueued.
    public func enqueue(at deadline: Int64, _ work: @escaping @Sendable () -> Void) {
        push(.closure(work), at: deadline)
    }

    func push(_ work: Work) {
        let wake = state.withLock { s -> Bool in
            s.ready.append(work)
            return takeWakeup(&s)
        }
        if wake { _ = tocsin_eventfd_signal(wakeup.fd) }
    }

    func push(_ work: Work, at deadline: Int64) {
        state.withLock { s in
            s.sequence &+= 1
            s.delayed.insert(Delayed(deadline: deadline, sequence: s.sequence, work: work))
            // Arming under the lock keeps `armed` true to the kernel's timer whichever thread
            // gets here first; only an earlier deadline re-arms, so the loop never misses one.
            if s.armed.map({ deadline < $0 }) ?? true {
                s.armed = deadline
                _ = tocsin_timerfd_arm_absolute_nsec(timer.fd, deadline)
            }
        }
    }

    private func takeWakeup(_ s: inout State) -> Bool {
        guard s.waiting, !s.signalled else { return false }
        s.signalled = true
        return true
    }

    /// Wakes the loop so that it re-checks its `run(until:)` condition. An empty job rather
    /// than a bare eventfd write: a loop between its check and `epoll_wait` then sees it too.
    public func wake() { push(.closure {}) }

    // MARK: Watched descriptors

    /// Calls `handler` on the loop thread whenever `fd` is readable (level-triggered: the
    /// handler must consume what is there). The caller keeps `fd` open until `unwatch`.
    public func watch(_ fd: Int32, _ handler: @escaping @Sendable () -> Void) {
        state.withLock { $0.watchers[fd] = handler }
        _ = tocsin_epoll_add(epoll.fd, fd, TOCSIN_EPOLLIN)
    }

    public func unwatch(_ fd: Int32) {
        _ = tocsin_epoll_remove(epoll.fd, fd)
        state.withLock { _ = $0.watchers.removeValue(forKey: fd) }
    }

    // MARK: Running (the loop thread)

    /// Runs jobs on the calling thread until `done()` is true (checked between jobs), blocking
    /// in `epoll_wait` without a timeout whenever there is nothing to do.
    public func run(until done: () -> Bool) {
        var fds = [Int32](repeating: 0, count: 16)
        var events = [UInt32](repeating: 0, count: 16)
        while !done() {
            // Ready work first, in FIFO order; work enqueued meanwhile waits for the next round
            // so that delayed jobs and descriptors are not starved.
            let batch = state.withLock { s -> [Work] in
                let b = s.ready
                s.ready.removeAll(keepingCapacity: true)
                return b
            }
            for work in batch {
                execute(work)
                if done() { return }
            }
            runDueTimers()
            if done() { return }
            let idle = state.withLock { s -> Bool in
                guard s.ready.isEmpty else { return false }
                s.waiting = true
                return true
            }
            let n = tocsin_epoll_wait(epoll.fd, &fds, &events, Int32(fds.count), idle ? -1 : 0)
            state.withLock { $0.waiting = false }
            for i in 0..<max(0, Int(n)) {
                let fd = fds[i]
                if fd == wakeup.fd {
                    _ = tocsin_eventfd_drain(wakeup.fd)
                    state.withLock { $0.signalled = false }
                } else if fd == timer.fd {
                    _ = tocsin_timerfd_read(timer.fd)  // due jobs run at the top of the next round
                } else if let handler = state.withLock({ $0.watchers[fd] }) {
                    handler()
                }
            }
        }
    }

    private func runDueTimers() {
        let now = Self.now()
        let due = state.withLock { s -> [Work] in
            var due: [Work] = []
            while let first = s.delayed.min, first.deadline <= now {
                due.append(s.delayed.removeMin().work)
            }
            let next = s.delayed.min?.deadline
            if next != s.armed {
                s.armed = next
                if let next {
                    _ = tocsin_timerfd_arm_absolute_nsec(timer.fd, next)
                } else {
                    _ = tocsin_timerfd_disarm(timer.fd)
                }
            }
            return due
        }
        for work in due { execute(work) }
    }

    private func execute(_ work: Work) {
        switch work {
        case .global(let job):
            tocsin_job_run(unsafeBitCast(job, to: UnsafeMutableRawPointer.self))
        case .main(let job):
            // Main-actor jobs run on the main executor's identity, so isolation checks such as
            // MainActor.assumeIsolated hold on this (the main) thread.
            job.runSynchronously(on: MainActor.sharedUnownedExecutor)
        case .task(let job):
            job.runSynchronously(on: scheduler.asUnownedTaskExecutor())
        case .closure(let body):
            body()
        }
    }

    /// Delayed jobs not yet due (for tests and diagnostics).
    public var delayedCount: Int { state.withLock { $0.delayed.count } }
}

/// The loop as an executor the runtime can hold. A separate internal class because its
/// `SchedulingExecutor` conformance is SPI and cannot be public.
///
/// Swift 6.3's Task.sleep hands its wake-up job to the first `SchedulingExecutor` among the
/// current actor's executor, the task's preferred and current task executors and
/// `Task.defaultExecutor`, and calls the WithDeadline hook only when there is none. This is that
/// default executor once `LoopExecutor` is installed, so sleeps come to the loop's timer.
final class LoopTaskExecutor: TaskExecutor, SchedulingExecutor {
    unowned let loop: ExecutorLoop

    init(_ loop: ExecutorLoop) { self.loop = loop }

    func enqueue(_ job: consuming ExecutorJob) { loop.push(.task(UnownedJob(job))) }


    func enqueue<C: Clock>(_ job: consuming ExecutorJob, at instant: C.Instant, tolerance: C.Duration?, clock: C) {
        let delay = clock.now.duration(to: instant)
        loop.push(.global(UnownedJob(job)), at: Self.deadline(after: delay, on: clock))
    }

    func enqueue<C: Clock>(_ job: consuming ExecutorJob, after delay: C.Duration, tolerance: C.Duration?, clock: C) {
        loop.push(.global(UnownedJob(job)), at: Self.deadline(after: delay, on: clock))
    }

    /// A delay on any clock as a monotonic deadline, read after the clock's own `now` so that the
    /// conversion can only make the job late. A suspend during a ContinuousClock sleep makes it
    /// late by up to the time suspended (the timerfd is CLOCK_MONOTONIC). Only the standard
    /// clocks (`Duration`) get here in practice, custom clocks sleep through them; any other
    /// duration type has no common measure and runs at once.
    static func deadline<C: Clock>(after delay: C.Duration, on clock: C) -> Int64 {
        let now = ExecutorLoop.now()
        guard let d = delay as? Duration else { return now }
        let (seconds, attoseconds) = d.components
        if seconds >= Int64.max / 1_000_000_000 - 1 { return .max }
        let nanos = max(0, seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
        return now > .max - nanos ? .max : now + nanos
    }
}
