// With Foundation imported elsewhere in this module, clang attributes the merged pthread
// declarations to CDispatch, so `pthread_attr_t()` needs it by name.
import CDispatch
import Glibc
import Synchronization
import TocsinCore
import TocsinSystem

/// How a child process ended.
public enum ExitStatus: Sendable, Hashable, CustomStringConvertible {
    case exited(Int32)
    case signaled(Int32)
    public var isSuccess: Bool { self == .exited(0) }
    public var description: String {
        switch self {
        case .exited(let c): "exit \(c)"
        case .signaled(let s): "signal \(s)"
        }
    }
}

/// A child process for tests: output captured, waits bounded by deadlines, always reaped.
///
/// Spawned with `posix_spawnp` in its own process group with default signal dispositions, stdin
/// from /dev/null and no inherited descriptors besides 0-2. A per-process reader thread collects
/// stdout/stderr and reaps the child after both pipes close, so waiting never polls. Dropping the
/// last reference kills a child that is still running.
public final class TestProcess: Sendable {
    public struct Output: Sendable {
        public var stdout: [UInt8] = []
        public var stderr: [UInt8] = []
        public var status: ExitStatus?
        public var stdoutText: String { String(decoding: stdout, as: UTF8.self) }
        public var stderrText: String { String(decoding: stderr, as: UTF8.self) }
    }

    /// The child's `pid_t`, spelled `Int32` so the public API names no C module: the typealias
    /// resolves to Glibc or CDispatch depending on what else this module imports.
    public let pid: Int32
    public let command: [String]
    /// Output so far and, once reaped, the exit status.
    public let output: WaitableState<Output>

    /// Spawns `executable` (looked up in PATH) with `arguments`. `environment` adds to or
    /// overrides the inherited environment.
    public init(_ executable: String, _ arguments: [String] = [], environment: [String: String] = [:]) throws {
        command = [executable] + arguments
        output = WaitableState(Output())
        let (pid, out, err) = try spawn(command, environment: environment)
        self.pid = pid
        let reader = ProcessReader(pid: pid, stdoutFD: out, stderrFD: err, output: output)
        reader.start()
    }

    deinit {
        if output.value.status == nil { _ = Glibc.kill(pid, SIGKILL) }
    }

    public var stdout: String { output.value.stdoutText }
    public var stderr: String { output.value.stderrText }
    public var status: ExitStatus? { output.value.status }

    public func signal(_ signal: Int32) {
        if output.value.status == nil { _ = Glibc.kill(pid, signal) }
    }

    /// Kills the child and waits until it is reaped.
    @discardableResult
    public func kill(timeout: Duration = .seconds(10)) async throws -> ExitStatus {
        signal(SIGKILL)
        return try await waitForExit(timeout: timeout)
    }

    /// Waits until stdout contains `text`; returns all stdout so far.
    @discardableResult
    public func waitForOutput(containing text: String, timeout: Duration) async throws -> String {
        let needle = Array(text.utf8)
        let state = try await output.wait("'\(text)' in output of \(command.joined(separator: " "))", timeout: timeout) {
            $0.stdout.containsSubsequence(needle) || $0.status != nil
        }
        guard state.stdout.containsSubsequence(needle) else {
            throw TestProcessError(
                "\(command.first ?? "") ended (\(state.status.map(\.description) ?? "?")) without printing '\(text)'; "
                    + "stdout: \(state.stdoutText.prefix(2000)) stderr: \(state.stderrText.prefix(2000))")
        }
        return state.stdoutText
    }

    /// Waits for the child to exit (and its output to be complete).
    @discardableResult
    public func waitForExit(timeout: Duration) async throws -> ExitStatus {
        let state = try await output.wait("exit of \(command.joined(separator: " ").prefix(200))", timeout: timeout) {
            $0.status != nil
        }
        return state.status ?? .exited(-1)
    }

    /// Runs a command to completion (killed at the deadline) and returns its output.
    public static func run(
        _ executable: String, _ arguments: [String] = [], environment: [String: String] = [:],
        timeout: Duration = .seconds(30)
    ) async throws -> Output {
        let process = try TestProcess(executable, arguments, environment: environment)
        do {
            try await process.waitForExit(timeout: timeout)
        } catch {
            _ = try? await process.kill()
            throw error
        }
        return process.output.value
    }
}

public struct TestProcessError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

extension Array where Element == UInt8 {
    func containsSubsequence(_ needle: [UInt8]) -> Bool {
        if needle.isEmpty { return true }
        if needle.count > count { return false }
        let first = needle[0]
        var i = 0
        while i <= count - needle.count {
            if self[i] == first, self[i..<(i + needle.count)].elementsEqual(needle) { return true }
            i += 1
        }
        return false
    }
}

// MARK: - Spawning

/// The daemon's own way of starting programs (`Spawn.child`), with the test's environment laid
/// over this process's and the program looked up on PATH.
private func spawn(_ command: [String], environment: [String: String]) throws -> (pid_t, Int32, Int32) {
    var env = currentEnvironment()
    for (k, v) in environment { env[k] = v }
    do {
        let child = try Spawn.child(command, environment: env, stdout: .pipe, stderr: .pipe, searchPath: true)
        return (child.pid, child.stdout, child.stderr)
    } catch {
        throw TestProcessError(error.description)
    }
}

/// Owns the read ends and the reaping of one child, on its own thread.
private final class ProcessReader: Sendable {
    let pid: pid_t
    let stdoutFD: Int32
    let stderrFD: Int32
    let output: WaitableState<TestProcess.Output>

    init(pid: pid_t, stdoutFD: Int32, stderrFD: Int32, output: WaitableState<TestProcess.Output>) {
        self.pid = pid
        self.stdoutFD = stdoutFD
        self.stderrFD = stderrFD
        self.output = output
    }

    func start() {
        if !WorkerThread.start({ self.run() }) {
            run()  // no thread: read synchronously rather than leak the child
        }
    }

    func run() {
        var fds = [pollfd(fd: stdoutFD, events: Int16(POLLIN), revents: 0),
                   pollfd(fd: stderrFD, events: Int16(POLLIN), revents: 0)]
        var open = 2
        var buffer = [UInt8](repeating: 0, count: 65536)
        while open > 0 {
            let n = poll(&fds, nfds_t(fds.count), -1)
            if n < 0 {
                if errno == EINTR { continue }
                break
            }
            for i in 0..<fds.count where fds[i].fd >= 0 && fds[i].revents != 0 {
                let got = buffer.withUnsafeMutableBytes { read(fds[i].fd, $0.baseAddress, $0.count) }
                if got > 0 {
                    let chunk = Array(buffer[0..<got])
                    let isStdout = i == 0
                    output.update { o in
                        if isStdout { o.stdout += chunk } else { o.stderr += chunk }
                    }
                } else if got == 0 || (errno != EINTR && errno != EAGAIN) {
                    close(fds[i].fd)
                    fds[i].fd = -1
                    open -= 1
                }
            }
        }
        for f in fds where f.fd >= 0 { close(f.fd) }
        var status: Int32 = 0
        var r: pid_t
        repeat { r = waitpid(pid, &status, 0) } while r < 0 && errno == EINTR
        let exit: ExitStatus
        if r < 0 {
            exit = .exited(-1)
        } else if status & 0x7f == 0 {
            exit = .exited((status >> 8) & 0xff)
        } else {
            exit = .signaled(status & 0x7f)
        }
        output.update { $0.status = exit }
    }
}
