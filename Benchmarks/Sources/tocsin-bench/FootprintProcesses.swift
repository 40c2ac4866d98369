import Foundation
import Glibc
import TocsinSystem

/// Child processes for `footprint`, all started with `posix_spawn` (no shell, no Foundation
/// `Process`): short commands timed with the monotonic clock from spawn to reaped, and long-lived
/// ones (bus, X server, daemons) kept until the benchmark ends. Children start with an empty
/// signal mask and default dispositions: this process's executor may block signals it reads
/// through a signalfd, and a child inheriting that would ignore the SIGTERM that stops it.
enum Spawn {
    /// One run of a short command: wall time from spawn to reaped, the CPU time (user + system)
    /// it used, and its exit status. CPU time is what another process's load disturbs least. (No
    /// peak RSS: `posix_spawn` shares this process's memory until the exec, so the child's
    /// `ru_maxrss` reports the benchmark's own size.)
    struct Run {
        var seconds: Double
        var cpuSeconds: Double
        var status: Int32
    }

    /// Starts `argv` with `environment`; stdin and stderr on /dev/null, stdout on `stdoutFD` (or /dev/null).
    static func start(_ argv: [String], environment: [String], stdoutFD: Int32? = nil) throws -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        if let stdoutFD { posix_spawn_file_actions_adddup2(&actions, stdoutFD, 1) } else {
            posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        }
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        var attr = posix_spawnattr_t()
        posix_spawnattr_init(&attr)
        defer { posix_spawnattr_destroy(&attr) }
        var none = sigset_t(), all = sigset_t()
        sigemptyset(&none)
        sigfillset(&all)
        posix_spawnattr_setsigmask(&attr, &none)
        posix_spawnattr_setsigdefault(&attr, &all)
        posix_spawnattr_setflags(&attr, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        let cArgs = argv.map { strdup($0) } + [nil]
        let cEnv = environment.map { strdup($0) } + [nil]
        defer { (cArgs + cEnv).forEach { free($0) } }
        var pid: pid_t = 0
        let rc = posix_spawn(&pid, argv[0], &actions, &attr, cArgs, cEnv)
        guard rc == 0 else { throw VersusError("cannot run \(argv[0]): \(String(cString: strerror(rc)))") }
        return pid
    }

    /// Runs `argv` to its end: the wall time includes the spawn and the reaping.
    static func run(_ argv: [String], environment: [String]) throws -> Run {
        var begin = timespec(), end = timespec()
        clock_gettime(CLOCK_MONOTONIC, &begin)
        let pid = try start(argv, environment: environment)
        var status: Int32 = 0
        var usage = rusage()
        while wait4(pid, &status, 0, &usage) < 0 && errno == EINTR {}
        clock_gettime(CLOCK_MONOTONIC, &end)
        let seconds = Double(end.tv_sec - begin.tv_sec) + Double(end.tv_nsec - begin.tv_nsec) * 1e-9
        let code = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
        let cpu = Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) * 1e-6
        return Run(seconds: seconds, cpuSeconds: cpu, status: code)
    }
}

/// A process kept running (dbus-daemon, Xvfb, dunst, the daemon); stopped with SIGTERM and reaped.
final class Background {
    let pid: pid_t
    let name: String
    /// The read end of its stdout, when captured.
    let output: Int32?

    init(_ argv: [String], environment: [String: String], captureOutput: Bool = false) throws {
        name = String(argv[0].split(separator: "/").last ?? "")
        var fds: [Int32] = [-1, -1]
        if captureOutput { guard pipe(&fds) == 0 else { throw VersusError("pipe: \(errno)") } }
        defer { if captureOutput { close(fds[1]) } }
        pid = try Spawn.start(argv, environment: environment.map { "\($0.key)=\($0.value)" },
                              stdoutFD: captureOutput ? fds[1] : nil)
        output = captureOutput ? fds[0] : nil
    }

    /// The first line it prints (dbus-daemon's address).
    func firstLine() -> String {
        guard let output else { return "" }
        var bytes: [UInt8] = []
        var c: UInt8 = 0
        while read(output, &c, 1) == 1 && c != UInt8(ascii: "\n") { bytes.append(c) }
        return String(decoding: bytes, as: UTF8.self)
    }

    func stop() {
        kill(pid, SIGTERM)
        var status: Int32 = 0
        var usage = rusage()
        while wait4(pid, &status, 0, &usage) < 0 && errno == EINTR {}
        if let output { close(output) }
    }

    /// VmRSS, RssAnon, RssFile (kB) and Threads from /proc/PID/status; PSS and USS from
    /// /proc/PID/smaps_rollup.
    func memory() throws -> ProcessMemory {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else {
            throw VersusError("\(name) (pid \(pid)) is not running")
        }
        var fields: [String: Int] = [:]
        for line in text.split(separator: "\n") {
            let parts = line.split(whereSeparator: { $0 == ":" || $0 == " " || $0 == "\t" })
            if parts.count >= 2, let n = Int(parts[1]) { fields[String(parts[0])] = n }
        }
        var rollup: [String: Int] = [:]
        if let text = try? String(contentsOfFile: "/proc/\(pid)/smaps_rollup", encoding: .utf8) {
            for line in text.split(separator: "\n") {
                let parts = line.split(whereSeparator: { $0 == ":" || $0 == " " || $0 == "\t" })
                if parts.count >= 2, let n = Int(parts[1]) { rollup[String(parts[0])] = n }
            }
        }
        return ProcessMemory(rssKB: fields["VmRSS"] ?? 0, anonKB: fields["RssAnon"] ?? 0, fileKB: fields["RssFile"] ?? 0,
                             threads: fields["Threads"] ?? 0, pssKB: rollup["Pss"] ?? 0,
                             ussKB: (rollup["Private_Clean"] ?? 0) + (rollup["Private_Dirty"] ?? 0))
    }
}

struct ProcessMemory {
    var rssKB: Int
    var anonKB: Int
    var fileKB: Int
    var threads: Int
    /// Proportional set size: each shared page divided among the processes that map it.
    var pssKB: Int
    /// Unique set size: the pages only this process maps (what exiting it would free of its mappings).
    var ussKB: Int

    var megabytes: Double { Double(rssKB) / 1024 }
    var text: String {
        "\(formatted(megabytes)) MB (anon \(formatted(Double(anonKB) / 1024)), file \(formatted(Double(fileKB) / 1024)), "
            + "PSS \(formatted(Double(pssKB) / 1024)), USS \(formatted(Double(ussKB) / 1024)), \(threads) threads)"
    }
}

/// Waits until `condition` holds, polling every 10 ms, or throws after `seconds`.
func waitFor(_ what: String, seconds: Double = 15, _ condition: () -> Bool) throws {
    let deadline = Date().addingTimeInterval(seconds)
    while !condition() {
        if Date() > deadline { throw VersusError("timed out after \(Int(seconds)) s waiting for \(what)") }
        usleep(10_000)
    }
}

/// A minimal valid WAV (8 kHz mono, 0.1 s of silence): `tocsin check` of the alarm example looks
/// for an alarm sound in the data directories, and a machine without a sound theme has none.
func writeSilentWAV(to path: String) throws {
    let samples = 800
    var bytes: [UInt8] = []
    func u32(_ v: Int) { bytes += withUnsafeBytes(of: UInt32(v).littleEndian, Array.init) }
    func u16(_ v: Int) { bytes += withUnsafeBytes(of: UInt16(v).littleEndian, Array.init) }
    bytes += Array("RIFF".utf8); u32(36 + samples * 2); bytes += Array("WAVEfmt ".utf8)
    u32(16); u16(1); u16(1); u32(8_000); u32(16_000); u16(2); u16(16)
    bytes += Array("data".utf8); u32(samples * 2); bytes += Array(repeating: 0, count: samples * 2)
    try Data(bytes).write(to: URL(fileURLWithPath: path))
}

func median(_ xs: [Double]) -> Double {
    let s = xs.sorted()
    guard !s.isEmpty else { return .nan }
    return s.count % 2 == 1 ? s[s.count / 2] : (s[s.count / 2 - 1] + s[s.count / 2]) / 2
}

/// Drops an executable's pages from the page cache before it starts, so that it is read from
/// disk as after a boot. Why: a file just written (by the build, `strip`, `cp`) sits in the page
/// cache in large folios, and the kernel maps a whole large folio at the first fault in it. The
/// same tocsin read up to 6 MB more just after `strip -o` than from disk: the figure measured
/// how recently the binary was built. Returns the pages still cached afterwards (0 unless
/// something maps it), or nil when that cannot be known: for a file the caller may not write,
/// `mincore` reports every page as cached (Linux 5.0 and later), whatever the cache holds.
func evictFromPageCache(_ path: String) throws -> Int? {
    let fd = open(path, O_RDONLY)
    guard fd >= 0 else { throw VersusError("cannot open \(path): errno \(errno)") }
    defer { close(fd) }
    // Written pages must reach the disk before the kernel may drop them.
    guard fsync(fd) == 0 else { throw VersusError("cannot sync \(path): errno \(errno)") }
    // posix_fadvise returns its error rather than setting errno.
    let advice = posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED)
    guard advice == 0 else { throw VersusError("cannot drop \(path) from the page cache: error \(advice)") }
    var st = stat()
    guard fstat(fd, &st) == 0, st.st_size > 0 else { return 0 }
    guard st.st_uid == geteuid() || access(path, W_OK) == 0 else { return nil }
    let length = Int(st.st_size)
    guard let map = mmap(nil, length, PROT_READ, MAP_SHARED, fd, 0), map != MAP_FAILED else { return nil }
    defer { munmap(map, length) }
    let pageSize = Int(sysconf(Int32(_SC_PAGESIZE)))
    var resident = [UInt8](repeating: 0, count: (length + pageSize - 1) / pageSize)
    guard mincore(map, length, &resident) == 0 else { return nil }
    return resident.reduce(0) { $0 + Int($1 & 1) }
}
