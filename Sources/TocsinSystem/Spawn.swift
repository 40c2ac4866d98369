public import Glibc
import Synchronization

/// Why a program could not be started.
public struct SpawnError: Error, Hashable, Sendable, CustomStringConvertible {
    public var errno: Int32
    public var program: String
    public init(errno: Int32, program: String) { self.errno = errno; self.program = program }
    public var description: String { "cannot run \(program): \(String(cString: strerror(errno)))" }

    /// Whether trying again later may work: the file is being written (`ETXTBSY`, as while a
    /// hook is saved or installed), or the process or system is short of processes, memory or
    /// descriptors. Anything else (missing, not executable, not a program) stays as it is until
    /// someone changes the config or the file.
    public var isTransient: Bool { [ETXTBSY, EAGAIN, ENOMEM, EMFILE, ENFILE].contains(errno) }
}

/// Starting a program, the one way Tocsin does it: the daemon's children (`ChildProcess`) and the
/// test suite's (`TestProcess`, `runBlocking`) all come from here.
///
/// `posix_spawn` with argv only (no shell), in a process group of its own (so a stop reaches
/// what it started), default dispositions for every signal and an empty mask (the daemon traps
/// SIGTERM/SIGHUP and blocks others on its threads; children must not inherit that), stdin on
/// /dev/null, and no descriptor beyond 0–2: the daemon's sockets and the SQLite file never leak.
public enum Spawn: Sendable {
    public enum Output: Sendable {
        case null
        case pipe
    }

    public struct Child: Sendable {
        public var pid: pid_t
        /// Read ends of the pipes asked for, -1 otherwise; close-on-exec, owned by the caller.
        public var stdout: Int32
        public var stderr: Int32
    }

    /// Starts `argv` with exactly `environment`. `searchPath`: a first element without a slash is
    /// looked up on the `PATH` of `environment` (the daemon resolves its programs beforehand).
    public static func child(_ argv: [String], environment: [String: String], stdout: Output, stderr: Output,
                             searchPath: Bool = false) throws(SpawnError) -> Child {
        guard let program = argv.first, !program.isEmpty else { throw SpawnError(errno: ENOENT, program: "(empty)") }
        var path = program
        if searchPath, !program.contains("/") {
            guard let found = lookUp(program, path: environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin") else {
                throw SpawnError(errno: ENOENT, program: program)
            }
            path = found
        }
        var out: [Int32] = [-1, -1], err: [Int32] = [-1, -1]
        // pipe2 creates both ends close-on-exec at once, so a concurrent spawn elsewhere in the
        // process cannot inherit them (and delay our end of file by outliving us).
        if stdout == .pipe, makePipe(&out, O_CLOEXEC) != 0 { throw SpawnError(errno: errno, program: program) }
        if stderr == .pipe, makePipe(&err, O_CLOEXEC) != 0 {
            let e = errno
            closeAll(out)
            throw SpawnError(errno: e, program: program)
        }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        if stdout == .pipe { posix_spawn_file_actions_adddup2(&actions, out[1], 1) } else {
            posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        }
        if stderr == .pipe { posix_spawn_file_actions_adddup2(&actions, err[1], 2) } else {
            posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        }
        if let addCloseFrom { _ = addCloseFrom(&actions, 3) }

        var attr = posix_spawnattr_t()
        posix_spawnattr_init(&attr)
        defer { posix_spawnattr_destroy(&attr) }
        var defaults = sigset_t()
        sigfillset(&defaults)
        sigdelset(&defaults, SIGKILL)
        sigdelset(&defaults, SIGSTOP)
        posix_spawnattr_setsigdefault(&attr, &defaults)
        var empty = sigset_t()
        sigemptyset(&empty)
        posix_spawnattr_setsigmask(&attr, &empty)
        posix_spawnattr_setpgroup(&attr, 0)
        posix_spawnattr_setflags(&attr, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETPGROUP))

        var cargv: [UnsafeMutablePointer<CChar>?] = argv.map { strdup($0) } + [nil]
        var cenv: [UnsafeMutablePointer<CChar>?] = environment.sorted { $0.key < $1.key }.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            for a in cargv { free(a) }
            for e in cenv { free(e) }
        }
        var pid: pid_t = 0
        let rc = posix_spawn(&pid, path, &actions, &attr, &cargv, &cenv)
        if out[1] >= 0 { close(out[1]) }
        if err[1] >= 0 { close(err[1]) }
        guard rc == 0 else {
            if out[0] >= 0 { close(out[0]) }
            if err[0] >= 0 { close(err[0]) }
            throw SpawnError(errno: rc, program: program)
        }
        return Child(pid: pid, stdout: out[0], stderr: err[0])
    }

    /// The executable `name` on `path` (a `PATH` value), or nil. Relative entries are skipped:
    /// the daemon's working directory says nothing about where its programs are.
    public static func lookUp(_ name: String, path: String) -> String? {
        for dir in path.split(separator: ":", omittingEmptySubsequences: true) where dir.hasPrefix("/") {
            let candidate = dir + "/" + name
            if isExecutable(candidate) { return candidate }
        }
        return nil
    }

    /// A regular file this process may execute (a directory on PATH is not a program).
    public static func isExecutable(_ path: String) -> Bool {
        var st = stat()
        return stat(path, &st) == 0 && (st.st_mode & S_IFMT) == S_IFREG && access(path, X_OK) == 0
    }

    /// A pidfd for `pid` (readable when it exits), or -1 where the kernel or glibc lacks them.
    public static func pidfdOpen(_ pid: pid_t) -> Int32 { pidfdOpenFunction.map { $0(pid, 0) } ?? -1 }

    /// pipe2, or pipe and fcntl where glibc lacks it.
    public static func makePipe(_ fds: inout [Int32], _ flags: Int32) -> Int32 {
        if let pipe2 { return pipe2(&fds, flags) }
        let r = pipe(&fds)
        guard r == 0 else { return r }
        for fd in fds {
            if flags & O_CLOEXEC != 0 { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
            if flags & O_NONBLOCK != 0 { _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) }
        }
        return 0
    }

    private static func closeAll(_ fds: [Int32]) {
        for fd in fds where fd >= 0 { close(fd) }
    }
}

private typealias PidfdOpen = @convention(c) (pid_t, UInt32) -> Int32
private typealias AddCloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>?, Int32) -> Int32
private typealias Pipe2 = @convention(c) (UnsafeMutablePointer<Int32>?, Int32) -> Int32

/// glibc 2.36's `pidfd_open`, not in Swift's Glibc module; nil on older systems (the watcher then
/// falls back to `waitid`).
private let pidfdOpenFunction: PidfdOpen? = {
    guard let sym = dlsym(nil, "pidfd_open") else { return nil }
    return unsafeBitCast(sym, to: PidfdOpen.self)
}()

/// Not in Swift's Glibc module (it is behind _GNU_SOURCE).
private let pipe2: Pipe2? = {
    guard let sym = dlsym(nil, "pipe2") else { return nil }
    return unsafeBitCast(sym, to: Pipe2.self)
}()

/// glibc 2.34's `posix_spawn_file_actions_addclosefrom_np`.
private let addCloseFrom: AddCloseFrom? = {
    guard let sym = dlsym(nil, "posix_spawn_file_actions_addclosefrom_np") else { return nil }
    return unsafeBitCast(sym, to: AddCloseFrom.self)
}()
