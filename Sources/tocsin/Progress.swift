import Dispatch
import Synchronization
import TocsinCore
import TocsinSystem

/// Progress on stderr for a command that can take long (`tocsin check` on a huge config): nothing
/// for the first second, so quick runs print exactly what they always did, then one line a
/// second naming the current phase and the time spent. stdout stays the result alone.
final class ProgressReporter: Sendable {
    private let phase = Mutex<String>("")
    private let began = ContinuousClock.now
    /// Signalled by `finish`; the reporting thread's wait on it is also its one-second tick.
    private let stop = DispatchSemaphore(value: 0)
    private let stopped = DispatchSemaphore(value: 0)
    private let write: @Sendable (String) -> Void

    init(phase first: String, interval: Duration = .seconds(1),
         write: @escaping @Sendable (String) -> Void = { StandardStream.error.write($0 + "\n") }) {
        phase.withLock { $0 = first }
        self.write = write
        let ms = Int(interval.components.seconds * 1000 + interval.components.attoseconds / 1_000_000_000_000_000)
        let started = WorkerThread.start { [self] in
            while stop.wait(timeout: .now() + .milliseconds(ms)) == .timedOut { report() }
            stopped.signal()
        }
        // Without a thread there is no progress to report, and `finish` must not wait for one.
        if !started { stopped.signal() }
    }

    /// The phase the next line names.
    func enter(_ name: String) { phase.withLock { $0 = name } }

    /// Stops reporting; no line is written after this returns.
    func finish() {
        stop.signal()
        stopped.wait()
    }

    private func report() {
        let elapsed = ContinuousClock.now - began
        write("\(phase.withLock { $0 }) (\(elapsed.components.seconds) s)")
    }
}
