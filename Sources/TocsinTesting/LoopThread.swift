import Foundation
import TocsinCore
import Synchronization
public import TocsinSystem

/// An `ExecutorLoop` driven by a thread of its own until `stop()`.
///
/// A test process already runs on libdispatch's executor (swift-testing started it), so tests of
/// the loop's machinery, or of a connection hosted on it, drive their own loop this way.
public final class LoopThread: Sendable {
    public let loop: ExecutorLoop
    private let stopped = Mutex(false)
    private let exited = DispatchSemaphore(value: 0)
    private let thread = Mutex<pthread_t?>(nil)

    public init() throws(LoopError) {
        loop = try ExecutorLoop()
        let t = Thread { [self] in
            thread.withLock { $0 = pthread_self() }
            loop.run(until: { stopped.withLock { $0 } })
            exited.signal()
        }
        t.start()
    }

    /// Whether the caller runs on the loop's thread.
    public func isCurrent() -> Bool { thread.withLock { $0.map { pthread_equal($0, pthread_self()) != 0 } ?? false } }

    /// Ends the loop and waits for its thread to leave it.
    public func stop() {
        stopped.withLock { $0 = true }
        loop.wake()
        exited.wait()
    }
}
