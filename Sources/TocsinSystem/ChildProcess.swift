public import Glibc
import Synchronization

/// How a child process ended.
public enum ChildStatus: Hashable, Sendable, CustomStringConvertible {
    case exited(Int32)
    case signaled(Int32)
    public var isSuccess: Bool { self == .exited(0) }
    public var description: String {
        switch self {
        case .exited(let c): "exit status \(c)"
        case .signaled(let s): "signal \(s)"
        }
    }
}

/// Why we stopped a child, if we did.
public enum ChildStopCause: Hashable, Sendable, CustomStringConvertible {
    /// `withdraw` (acknowledged, snoozed, cancelled, unanswered), a newer ring (`.replaced`) or
    /// shutdown, as the engine's `WithdrawReason` spells it: a word here, so the system layer
    /// need not know the engine's types (TocsinCore adds `.withdrawn(_: WithdrawReason)`).
    case withdrawn(reason: String)
    /// Still running at its cap (a sound's length limit, a hook's timeout).
    case capped
    public var description: String {
        switch self {
        case .withdrawn(let r): r
        case .capped: "length cap"
        }
    }
}

/// What we know once a child is reaped.
public struct ChildExit: Hashable, Sendable {
    public var status: ChildStatus
    /// Set when we asked it to stop; its status is then ours, not an error of the player.
    public var stoppedBy: ChildStopCause?
    /// The end of what it wrote to stderr (paplay's "Connection refused" and the like).
    public var stderr: String
    /// From spawn to reap.
    public var elapsed: Duration
    /// When we asked it to stop (withdraw, replacement, cap), and when it was reaped: the sound
    /// is gone at the latest then.
    public var stopRequestedAt: ContinuousClock.Instant?
    public var reapedAt: ContinuousClock.Instant
    /// From the stop request to the reaped player.
    public var stopLatency: Duration? { stopRequestedAt.map { reapedAt - $0 } }
}


/// A child process of the daemon: an alarm's sound player, an `exec` hook. The one way the daemon
/// runs programs, so every child gets the same isolation and the same guaranteed end.
///
/// Spawned by `Spawn.child` (argv only, no shell) in its own process group, with default signal
/// dispositions and an empty mask (the daemon traps SIGTERM/SIGHUP and children must not inherit
/// that), stdin and stdout on /dev/null, stderr on a pipe, and no other descriptor.
///
/// One thread per child waits with `poll` on a pidfd (readable when the child exits), the stderr
/// pipe and a wake-up pipe, with a timeout only while a deadline is pending: the length cap, and
/// SIGKILL `grace` after SIGTERM. Deadlines live on that thread rather than in Swift tasks so that a
/// busy executor can never keep a sound playing (or a hook running) past its stop. When the child exits the thread kills
/// what is left of its process group, then reaps it. Signals go to the group only while the leader
/// is not yet reaped, so a recycled pid is never hit.
public final class ChildProcess: Sendable {
    private struct Waiter {
        let id: UInt64
        let continuation: CheckedContinuation<ChildExit?, Never>
    }
    private struct State {
        var exit: ChildExit?
        var reaping = false
        var stoppedBy: ChildStopCause?
        var stopRequestedAt: ContinuousClock.Instant?
        /// SIGKILL is due then, if it has not exited.
        var killAt: ContinuousClock.Instant?
        var capped = false
        /// Write end of the watcher's wake-up pipe; -1 once reaping (or without a watcher that polls).
        var wakeFD: Int32 = -1
        var waiters: [Waiter] = []
        var cancelled: Set<UInt64> = []
        var nextID: UInt64 = 0
    }

    public let pid: pid_t
    public let argv: [String]
    /// Its start time in `/proc` (`ProcessStat.startTime`), read before anyone could reap it:
    /// with the pid, what names this process for its whole life. nil without `/proc`.
    public let startTime: UInt64?
    private let state: Mutex<State>
    /// When it was spawned: the cap and the start window count from here.
    public let started: ContinuousClock.Instant
    /// Stopped with SIGTERM then, if still running.
    public let capAt: ContinuousClock.Instant
    /// From SIGTERM to SIGKILL.
    public let grace: Duration

    private init(pid: pid_t, argv: [String], started: ContinuousClock.Instant, cap: Duration, grace: Duration) {
        self.pid = pid
        self.argv = argv
        // Our child, not yet reaped (the watcher starts after this): the pid is still its.
        self.startTime = ProcessStat.read(pid)?.startTime
        self.started = started
        self.capAt = started + cap
        self.grace = grace
        state = Mutex(State())
    }

    /// Starts `argv` (its first element an absolute path) with exactly `environment`; stops it
    /// `cap` after the start, and `grace` after a SIGTERM with SIGKILL.
    public static func spawn(_ argv: [String], environment: [String: String], cap: Duration,
                             grace: Duration) throws(SpawnError) -> ChildProcess {
        guard let program = argv.first, !program.isEmpty else { throw SpawnError(errno: ENOENT, program: "(empty)") }
        let child = try Spawn.child(argv, environment: environment, stdout: .null, stderr: .pipe)
        let (pid, stderrRead) = (child.pid, child.stderr)
        let process = ChildProcess(pid: pid, argv: argv, started: .now, cap: cap, grace: grace)
        // Open the pidfd before anyone could reap the child, so it cannot name another process.
        let pidfd = Spawn.pidfdOpen(pid)
        var wake: [Int32] = [-1, -1]
        if pidfd >= 0, Spawn.makePipe(&wake, O_CLOEXEC | O_NONBLOCK) == 0 {
            process.state.withLock { $0.wakeFD = wake[1] }
        } else if pidfd >= 0 {
            wake = [-1, -1]
        }
        let watcher = Watcher(process: process, pidfd: pidfd, stderrFD: stderrRead, wakeFD: wake[0])
        watcher.start()
        if pidfd < 0 || wake[0] < 0 {
            // No thread that can keep time (kernel without pidfd): the cap on the executor instead.
            Task.detached {
                try? await Task.sleep(until: process.capAt, clock: .continuous)
                if process.exit == nil { _ = await process.stop(.capped) }
            }
        }
        return process
    }

    /// The exit, once reaped.
    public var exit: ChildExit? { state.withLock { $0.exit } }

    /// Sends `signal` to the player's process group; false once it is reaped.
    @discardableResult
    public func signal(_ signal: Int32) -> Bool {
        state.withLock { s in
            guard !s.reaping else { return false }
            return Glibc.kill(-pid, signal) == 0
        }
    }

    /// SIGTERM now, SIGKILL `grace` later if it is still there; returns once it is reaped.
    public func stop(_ cause: ChildStopCause) async -> ChildExit {
        let onExecutor = state.withLock { s -> Bool in
            requestStop(&s, cause, now: .now)
            return !s.reaping && s.wakeFD < 0
        }
        if onExecutor {
            Task.detached {
                try? await Task.sleep(for: self.grace)
                self.signal(SIGKILL)
            }
        }
        // SIGKILL cannot be refused; the deadline only guards against a child stuck in the kernel.
        if let e = await waitForExit(within: grace + .seconds(5)) { return e }
        let now = ContinuousClock.now
        return ChildExit(status: .signaled(SIGKILL), stoppedBy: cause, stderr: "not reaped 5 s after SIGKILL",
                          elapsed: now - started, stopRequestedAt: nil, reapedAt: now)
    }

    /// Under the lock: SIGTERM to the group, SIGKILL scheduled, the watcher woken to keep time.
    private func requestStop(_ s: inout State, _ cause: ChildStopCause, now: ContinuousClock.Instant) {
        guard !s.reaping else { return }
        if s.stoppedBy == nil {
            s.stoppedBy = cause
            s.stopRequestedAt = now
        }
        _ = Glibc.kill(-pid, SIGTERM)
        if s.killAt == nil { s.killAt = now + grace }
        if s.wakeFD >= 0 {
            var byte: UInt8 = 1
            _ = write(s.wakeFD, &byte, 1)
        }
    }

    /// Waits until it is reaped; nil if the waiting task is cancelled.
    public func waitForExit() async -> ChildExit? {
        let id = state.withLock { s -> UInt64 in s.nextID += 1; return s.nextID }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (c: CheckedContinuation<ChildExit?, Never>) in
                let now = state.withLock { s -> ChildExit?? in
                    if let e = s.exit { return .some(e) }
                    if s.cancelled.remove(id) != nil { return .some(nil) }
                    s.waiters.append(Waiter(id: id, continuation: c))
                    return nil
                }
                if let now { c.resume(returning: now) }
            }
        } onCancel: {
            let w = state.withLock { s -> Waiter? in
                if let i = s.waiters.firstIndex(where: { $0.id == id }) { return s.waiters.remove(at: i) }
                s.cancelled.insert(id)
                return nil
            }
            w?.continuation.resume(returning: nil)
        }
    }

    /// Waits at most `timeout`; nil if it is still running (or the task is cancelled).
    public func waitForExit(within timeout: Duration) async -> ChildExit? {
        if let e = exit { return e }
        return await withTaskGroup(of: ChildExit?.self) { group in
            group.addTask { await self.waitForExit() }
            group.addTask {
                try? await Task.sleep(for: timeout)
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first ?? self.exit
        }
    }

    // MARK: Called by the watcher thread

    /// Fires the deadlines that are due; returns the poll timeout until the next one (-1: none).
    fileprivate func keepTime() -> Int32 {
        state.withLock { s -> Int32 in
            let now = ContinuousClock.now
            if !s.capped, now >= capAt {
                s.capped = true
                requestStop(&s, .capped, now: now)
            }
            if let k = s.killAt, now >= k, !s.reaping {
                _ = Glibc.kill(-pid, SIGKILL)
                s.killAt = nil
            }
            var next = s.capped ? nil : capAt
            if let k = s.killAt { next = next.map { min($0, k) } ?? k }
            guard let next else { return -1 }
            let c = (next - now).components
            let ms = c.seconds * 1000 + (c.attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000
            return Int32(clamping: max(0, ms))
        }
    }

    fileprivate func beginReaping() {
        state.withLock { s in
            // Anything the player left behind in its group goes with it; the leader is a zombie
            // until reaped, so the group id cannot have been recycled yet.
            _ = Glibc.kill(-pid, SIGKILL)
            s.reaping = true
            if s.wakeFD >= 0 {
                close(s.wakeFD)
                s.wakeFD = -1
            }
        }
    }

    fileprivate func finish(_ status: ChildStatus, stderr: [UInt8]) {
        let waiters = state.withLock { s -> ([Waiter], ChildExit) in
            let now = ContinuousClock.now
            let e = ChildExit(status: status, stoppedBy: s.stoppedBy,
                               stderr: String(decoding: stderr, as: UTF8.self).trimmingTrailingWhitespace(),
                               elapsed: now - started, stopRequestedAt: s.stopRequestedAt, reapedAt: now)
            s.exit = e
            let w = s.waiters
            s.waiters = []
            return (w, e)
        }
        for w in waiters.0 { w.continuation.resume(returning: waiters.1) }
    }
}

extension String {
    func trimmingTrailingWhitespace() -> String {
        var s = Substring(self)
        while let l = s.last, l.isWhitespace { s.removeLast() }
        return String(s)
    }
}

// MARK: - The watcher thread

/// Owns the pidfd and the stderr read end of one player.
private final class Watcher: Sendable {
    let process: ChildProcess
    let pidfd: Int32
    let stderrFD: Int32
    let wakeFD: Int32
    static let keep = 2048

    init(process: ChildProcess, pidfd: Int32, stderrFD: Int32, wakeFD: Int32) {
        self.process = process
        self.pidfd = pidfd
        self.stderrFD = stderrFD
        self.wakeFD = wakeFD
    }

    func start() {
        if !WorkerThread.start(stackSize: 128 * 1024, { self.run() }) {
            // No thread to watch it: end the player now and reap it here rather than leak it;
            // the delivery then sees it killed and reports the failure.
            _ = kill(-process.pid, SIGKILL)
            run()
        }
    }

    func run() {
        var tail: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        func drain(_ fd: Int32) -> Bool {
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n > 0 {
                tail += buffer[0..<n]
                if tail.count > Self.keep { tail.removeFirst(tail.count - Self.keep) }
                return true
            }
            return n < 0 && errno == EINTR
        }
        if pidfd >= 0, wakeFD >= 0 {
            var fds = [pollfd(fd: pidfd, events: Int16(POLLIN), revents: 0),
                       pollfd(fd: stderrFD, events: Int16(POLLIN), revents: 0),
                       pollfd(fd: wakeFD, events: Int16(POLLIN), revents: 0)]
            while true {
                let timeout = process.keepTime()
                let n = poll(&fds, nfds_t(fds.count), timeout)
                if n < 0 {
                    if errno == EINTR { continue }
                    break  // cannot happen with valid fds; fall through to a blocking reap
                }
                if fds[1].fd >= 0, fds[1].revents != 0, !drain(stderrFD) { fds[1].fd = -1 }
                if fds[2].revents != 0 {
                    var sink = [UInt8](repeating: 0, count: 64)
                    while sink.withUnsafeMutableBytes({ read(wakeFD, $0.baseAddress, $0.count) }) > 0 {}
                }
                if fds[0].revents != 0 { break }
            }
            // The child is gone; whatever it wrote is in the pipe (non-blocking so a surviving
            // grandchild holding the write end cannot stall us).
            _ = fcntl(stderrFD, F_SETFL, fcntl(stderrFD, F_GETFL) | O_NONBLOCK)
            while drain(stderrFD) {}
            close(pidfd)
        } else {
            if pidfd >= 0 { close(pidfd) }
            // No pidfd (kernel < 5.3): wait without reaping, then read what is buffered.
            var info = siginfo_t()
            while waitid(P_PID, id_t(process.pid), &info, WEXITED | WNOWAIT) < 0, errno == EINTR {}
            _ = fcntl(stderrFD, F_SETFL, fcntl(stderrFD, F_GETFL) | O_NONBLOCK)
            while drain(stderrFD) {}
        }
        close(stderrFD)
        process.beginReaping()
        if wakeFD >= 0 { close(wakeFD) }
        var status: Int32 = 0
        var r: pid_t
        repeat { r = waitpid(process.pid, &status, 0) } while r < 0 && errno == EINTR
        let result: ChildStatus
        if r < 0 {
            result = .exited(-1)
        } else if status & 0x7f == 0 {
            result = .exited((status >> 8) & 0xff)
        } else {
            result = .signaled(status & 0x7f)
        }
        process.finish(result, stderr: tail)
    }
}
