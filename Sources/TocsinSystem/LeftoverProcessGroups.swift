#if canImport(Glibc)
public import Glibc
#endif

/// A process group the daemon started (a sound player: `ChildProcess` spawns each in a group of
/// its own, led by the player), as recorded while it ran: enough to find it again after a crash,
/// and to tell it from a later process that was given the same pid.
public struct RecordedProcessGroup: Hashable, Sendable, CustomStringConvertible {
    /// The group's leader, the process the daemon spawned.
    public var pid: pid_t
    public var processGroup: pid_t
    /// The leader's start time (`ProcessStat.startTime`).
    public var startTime: UInt64

    public init(pid: pid_t, processGroup: pid_t, startTime: UInt64) {
        self.pid = pid; self.processGroup = processGroup; self.startTime = startTime
    }

    public var description: String { "pid \(pid) (group \(processGroup), started at tick \(startTime))" }
}

/// Stopping the process groups an earlier run of the daemon left behind (`kill -9`, a crash):
/// their players were reparented and play on, and nothing else would stop them.
///
/// A record is acted on only when it still names the same process: its leader is alive with the
/// recorded start time and still leads the recorded group. Never pid 1 or below, never our own
/// group. The group gets SIGTERM, then SIGKILL `grace` later if its leader is still there, as
/// `ChildProcess.stop` does; the leader is watched through a pidfd opened before its start time
/// was checked, so the process that was checked is the one waited for.
public enum LeftoverProcessGroups: Sendable {
    public enum Outcome: Hashable, Sendable, CustomStringConvertible {
        /// Its leader ended after SIGTERM.
        case terminated
        /// Its leader was still there `grace` after SIGTERM, and got SIGKILL.
        case killed
        /// No process with that pid, or one with another start time or in another group: the
        /// player ended on its own, and the pid may have been given to another process since.
        case gone
        /// Not a group we could have started (pid 1 or below, our own group, a leader that is
        /// not its group's), or one we may not signal; left alone.
        case refused(String)

        public var description: String {
            switch self {
            case .terminated: "stopped (SIGTERM)"
            case .killed: "stopped (SIGKILL after the grace)"
            case .gone: "no longer running"
            case .refused(let why): "left alone: \(why)"
            }
        }

        /// Whether we signalled it.
        public var stopped: Bool { self == .terminated || self == .killed }
    }

    /// Stops each of `records` that is still running (all at once: SIGTERM to each group, one
    /// grace for all). Blocks up to `grace` plus a second: call it off the loop thread.
    public static func stop(_ records: [RecordedProcessGroup], grace: Duration) -> [Outcome] {
        var outcomes = [Outcome](repeating: .gone, count: records.count)
        var watched: [(index: Int, pidfd: Int32, group: pid_t)] = []
        let ownGroup = getpgrp()
        for (i, r) in records.enumerated() {
            if r.pid <= 1 || r.processGroup <= 1 {
                outcomes[i] = .refused("pid or group 1 or below")
                continue
            }
            if r.processGroup == ownGroup || r.pid == getpid() {
                outcomes[i] = .refused("the daemon's own process group")
                continue
            }
            if r.processGroup != r.pid {
                outcomes[i] = .refused("a player leads its own group, and pid \(r.pid) is not group \(r.processGroup)'s leader")
                continue
            }
            // The pidfd first, then the check: if the check passes, the pidfd names the process
            // that was checked (a process given the pid later cannot have the recorded start time).
            let pidfd = Spawn.pidfdOpen(r.pid)
            guard let now = ProcessStat.read(r.pid), now.startTime == r.startTime, now.processGroup == r.processGroup else {
                if pidfd >= 0 { close(pidfd) }
                outcomes[i] = .gone
                continue
            }
            if Glibc.kill(-r.processGroup, SIGTERM) != 0 {
                let e = errno
                if pidfd >= 0 { close(pidfd) }
                outcomes[i] = e == ESRCH ? .gone : .refused(String(cString: strerror(e)))
                continue
            }
            outcomes[i] = .terminated
            watched.append((i, pidfd, r.processGroup))
        }
        guard !watched.isEmpty else { return outcomes }
        let leftAfterGrace = waitForExit(watched.map(\.pidfd), records: watched.map { records[$0.index] }, within: grace)
        for (n, w) in watched.enumerated() where leftAfterGrace[n] {
            // The leader has not ended, so the group is still the one checked.
            _ = Glibc.kill(-w.group, SIGKILL)
            outcomes[w.index] = .killed
        }
        let stillThere = waitForExit(watched.map(\.pidfd), records: watched.map { records[$0.index] }, within: .seconds(1))
        for (n, w) in watched.enumerated() {
            // What the leader left in its group (a child that ignored SIGTERM), as `ChildProcess`
            // does when a player ends. The group's number cannot be given to a new process while
            // a member is left, so only a process that now has the leader's pid could be another
            // group's: then it is not ours, and we stop here. The leader itself, ended but not yet
            // reaped by whoever adopted it (a zombie with the recorded start time), still holds
            // the pid: the group is ours (it was skipped as "still there", and the child lived).
            if !stillThere[n] {
                let leader = ProcessStat.read(w.group)
                let record = records[watched[n].index]
                if leader == nil || (leader!.isZombie && leader!.startTime == record.startTime) {
                    _ = Glibc.kill(-w.group, SIGKILL)
                }
            }
            if w.pidfd >= 0 { close(w.pidfd) }
        }
        return outcomes
    }

    /// For each leader, whether it is still running after waiting up to `timeout` for all of them.
    private static func waitForExit(_ pidfds: [Int32], records: [RecordedProcessGroup], within timeout: Duration) -> [Bool] {
        let deadline = ContinuousClock.now + timeout
        var running = [Bool](repeating: true, count: pidfds.count)
        func check() {
            for i in pidfds.indices where running[i] {
                if pidfds[i] >= 0 {
                    var p = pollfd(fd: pidfds[i], events: Int16(POLLIN), revents: 0)
                    if poll(&p, 1, 0) > 0 { running[i] = false }
                } else {
                    // No pidfd (kernel < 5.3): the pid with its start time.
                    running[i] = ProcessStat.read(records[i].pid)?.startTime == records[i].startTime
                }
            }
        }
        check()
        while running.contains(true) {
            let left = deadline - ContinuousClock.now
            guard left > .zero else { break }
            let c = left.components
            let ms = Int32(clamping: c.seconds * 1000 + (c.attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000)
            var fds = pidfds.indices.filter { running[$0] && pidfds[$0] >= 0 }
                .map { pollfd(fd: pidfds[$0], events: Int16(POLLIN), revents: 0) }
            if fds.isEmpty {
                // Without pidfds, look again every 10 ms until the deadline.
                var ts = timespec(tv_sec: 0, tv_nsec: 10_000_000)
                nanosleep(&ts, nil)
            } else {
                _ = poll(&fds, nfds_t(fds.count), min(ms, 1000))
            }
            check()
        }
        return running
    }
}
