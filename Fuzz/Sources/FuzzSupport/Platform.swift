#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// Straight to fd 2: `stderr` is a C global Swift 6 will not share, and the message must get out
/// before `abort`.
func fwriteStderr(_ buf: UnsafeBufferPointer<UInt8>) -> Int {
    write(2, buf.baseAddress, buf.count)
}

func abortProcess() -> Never { abort() }

/// CPU time of the calling thread in microseconds, for timing single calls.
///
/// CPU time rather than wall time: on a shared machine a descheduled fuzzer would otherwise
/// "measure" other processes (a 20 ms call once read 720 ms of wall time while tests ran
/// alongside), and a hang is a call that keeps computing, which CPU time catches all the same.
public func threadCPUMicroseconds() -> Int64 {
    var ts = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
    return Int64(ts.tv_sec) * 1_000_000 + Int64(ts.tv_nsec) / 1_000
}

/// The slowest call a target has seen, printed when the fuzzer exits so a run's log says how
/// close the code under test came to its time budget, not only that it stayed under it.
public final class SlowestCall: Sendable {
    private let state = Mutex<(micros: Int64, what: String)>((0, ""))
    private let label: String

    public init(label: String) { self.label = label }

    public func record(_ micros: Int64, _ what: @autoclosure () -> String) {
        state.withLock { s in
            if micros > s.micros { s = (micros, what()) }
        }
    }

    public var report: String {
        state.withLock { s in "\(label): slowest call \(s.micros) µs (\(s.what))" }
    }
}

/// Prints every registered report at process exit (libFuzzer exits through `exit`).
public enum ExitReport {
    private static let reports = Mutex<[SlowestCall]>([])
    private static let installed = Mutex(false)

    public static func register(_ r: SlowestCall) {
        reports.withLock { $0.append(r) }
        let first = installed.withLock { done in
            defer { done = true }
            return !done
        }
        if first { atexit { ExitReport.printAll() } }
    }

    static func printAll() {
        for r in reports.withLock({ $0 }) {
            var line = r.report + "\n"
            line.withUTF8 { _ = fwriteStderr($0) }
        }
    }
}
