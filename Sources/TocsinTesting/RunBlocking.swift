import Glibc
import TocsinCore
import TocsinSystem

/// The output of a finished child process.
public struct CapturedRun: Sendable {
    public var status: Int32
    public var stdout: String
    public var stderr: String
}

/// Runs a program to completion and captures its output, for synchronous tests that consult an
/// oracle (`systemd-analyze`, `date`, `python3`). Started the daemon's way (`Spawn.child`); both
/// pipes are drained together with poll, so a chatty child never blocks on a full pipe while we
/// read the other. `environment` nil: this process's own.
///
/// A chosen environment still carries the run's sanitizer settings (`sanitizerSettings`): a
/// `tocsin` started from a ThreadSanitizer run without them has no Mutex shim and no report
/// file, so a contended lock is reported as a race on its stderr and fails the test that reads it.
public func runBlocking(_ executable: String, _ arguments: [String], environment: [String: String]? = nil) throws -> CapturedRun {
    let env = environment.map { $0.merging(sanitizerSettings()) { chosen, _ in chosen } } ?? currentEnvironment()
    let child: Spawn.Child
    do {
        child = try Spawn.child([executable] + arguments, environment: env, stdout: .pipe, stderr: .pipe, searchPath: true)
    } catch {
        throw TestProcessError(error.description)
    }
    var out: [UInt8] = [], err: [UInt8] = []
    var fds = [pollfd(fd: child.stdout, events: Int16(POLLIN), revents: 0), pollfd(fd: child.stderr, events: Int16(POLLIN), revents: 0)]
    var buffer = [UInt8](repeating: 0, count: 65536)
    while fds.contains(where: { $0.fd >= 0 }) {
        if poll(&fds, nfds_t(fds.count), -1) < 0 {
            if errno == EINTR { continue }
            break
        }
        for i in fds.indices where fds[i].fd >= 0 && fds[i].revents != 0 {
            let n = buffer.withUnsafeMutableBytes { read(fds[i].fd, $0.baseAddress, $0.count) }
            if n > 0 {
                if i == 0 { out += buffer[0..<n] } else { err += buffer[0..<n] }
            } else if n == 0 || errno != EINTR {
                close(fds[i].fd)
                fds[i].fd = -1
            }
        }
    }
    var status: Int32 = 0
    while waitpid(child.pid, &status, 0) < 0 && errno == EINTR {}
    // WIFEXITED/WEXITSTATUS are macros; a signal shows as 128 + its number, as in a shell.
    let code = status & 0x7f == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
    return CapturedRun(status: code, stdout: String(decoding: out, as: UTF8.self), stderr: String(decoding: err, as: UTF8.self))
}

/// What `scripts/sanitize.sh` sets for every process of a sanitizer run: the sanitizers' options
/// (report files, suppressions), the TSan Mutex shim it preloads, and the timing scale.
func sanitizerSettings() -> [String: String] {
    currentEnvironment().filter { ["TSAN_OPTIONS", "ASAN_OPTIONS", "LD_PRELOAD", "TOCSIN_TIMING_SCALE"].contains($0.key) }
}

func currentEnvironment() -> [String: String] {
    var env: [String: String] = [:]
    var p = environ
    while let entry = p.pointee {
        let s = String(cString: entry)
        if let eq = s.firstIndex(of: "=") { env[String(s[..<eq])] = String(s[s.index(after: eq)...]) }
        p += 1
    }
    return env
}

/// Whether `pid`, which need not be our child, exits (or is already gone) within the deadline:
/// a pidfd becomes readable when the process ends, so this waits on the event itself.
public func waitForExit(ofAnyProcess pid: Int32, timeoutMilliseconds: Int32) -> Bool {
    let fd = Spawn.pidfdOpen(pid)
    if fd < 0 { return errno == ESRCH }
    defer { close(fd) }
    var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
    return poll(&p, 1, timeoutMilliseconds) == 1
}

/// Whether `path` appears within the deadline, watched with inotify on its directory, so this
/// waits on the event itself. A fixture that writes the file should write it elsewhere and
/// rename it into place (`mv`): appearing then means complete.
public func waitForFile(_ path: String, timeoutMilliseconds: Int32) -> Bool {
    guard let slash = path.lastIndex(of: "/") else { return false }
    let directory = slash == path.startIndex ? "/" : String(path[..<slash])
    let fd = inotify_init1(Int32(IN_CLOEXEC))
    if fd < 0 { return access(path, F_OK) == 0 }
    defer { close(fd) }
    // Watch first, then look: a file that appears in between is not missed.
    guard inotify_add_watch(fd, directory, UInt32(IN_CREATE | IN_MOVED_TO | IN_CLOSE_WRITE)) >= 0 else { return false }
    var clock = timespec()
    clock_gettime(CLOCK_MONOTONIC, &clock)
    let deadline = Int64(clock.tv_sec) * 1000 + Int64(clock.tv_nsec) / 1_000_000 + Int64(timeoutMilliseconds)
    var buffer = [UInt8](repeating: 0, count: 4096)
    while access(path, F_OK) != 0 {
        clock_gettime(CLOCK_MONOTONIC, &clock)
        let left = deadline - (Int64(clock.tv_sec) * 1000 + Int64(clock.tv_nsec) / 1_000_000)
        if left <= 0 { return false }
        var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        let ready = poll(&p, 1, Int32(left))
        if ready < 0 && errno != EINTR { return false }
        // The events only wake us; the check is the file itself.
        if ready > 0 { _ = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) } }
    }
    return true
}
