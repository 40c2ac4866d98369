// ExecutorFactory is SPI in Swift 6.3 (the "custom main and global executors" proposal is not final).
@_spi(ExperimentalCustomExecutors) import _Concurrency
import CTocsinSystem
import Glibc
import Synchronization

/// Tocsin's global executor: every task, actor job, main-actor job and `Task.sleep` of the
/// process runs on one `ExecutorLoop` driven by the main thread, instead of libdispatch.
///
/// Why: libdispatch's work-queue monitor on Linux wakes the process once a second as soon as its
/// root queues are used, and Swift's default executor is those root queues, so an idle daemon
/// could not sleep. The loop blocks in `epoll_wait` with no timeout and wakes only for work.
///
/// Clocks: delayed jobs are kept on `CLOCK_MONOTONIC`. `SuspendingClock` deadlines are already
/// monotonic; `ContinuousClock` (`CLOCK_BOOTTIME`) deadlines are converted when enqueued, so a
/// sleep that spans a system suspend ends late by up to the time suspended, never early.
/// Tolerances are ignored. Wall-clock scheduling does not use this path (the scheduler has its
/// own `CLOCK_REALTIME` timerfd).
public enum LoopExecutor: Sendable {
    /// The loop, or why the kernel refused its descriptors; made on first use, never destroyed.
    private static let made = Result { () throws(LoopError) in try ExecutorLoop() }

    /// The loop every hooked job goes to, once `installAsGlobalExecutor` has succeeded; nil
    /// before that, or if it never did.
    public static var loop: ExecutorLoop? { isInstalled ? try? made.get() : nil }

    /// For the runtime's hooks and the executor factory, which exist only once the loop was made.
    fileprivate static var hooked: ExecutorLoop {
        guard case .success(let loop) = made else { preconditionFailure("the hooks are installed only once the loop exists") }
        return loop
    }

    private static let installed = Mutex(false)

    /// Routes the Swift runtime's global and main executors to `loop` through the runtime's
    /// `swift_task_enqueue*_hook` variables. Call it first thing in a synchronous `main`, before
    /// any task exists: jobs the default executor already holds would stay there.
    ///
    /// - Returns: true if the hooks are (now, or already) ours; false if called from inside a
    ///   task (something already runs on another executor) or another hook owner got there first.
    /// - Throws: `LoopError` if the kernel refuses the loop's descriptors (the process is at its
    ///   open-files limit); nothing is installed then.
    @discardableResult
    public static func installAsGlobalExecutor() throws(LoopError) -> Bool {
        if withUnsafeCurrentTask(body: { $0 != nil }) { return installed.withLock { $0 } }
        _ = try made.get()  // the descriptors exist before the runtime can call into us
        return installed.withLock { done in
            if done { return true }
            // Task.sleep in Swift 6.3 asks Task.defaultExecutor (a SchedulingExecutor) rather
            // than the WithDeadline hook; make that the loop too. The main executor stays the
            // platform's: its identity is what MainActor isolation checks compare, and the
            // MainExecutor hook brings its jobs here.
            _createExecutors(factory: Factory.self)
            guard tocsin_executor_install_hooks(enqueueNow, enqueueMain, enqueueDelayed) == 0 else { return false }
            done = true
            return true
        }
    }

    public static var isInstalled: Bool { installed.withLock { $0 } }

    /// Runs `body` as a task and drives the loop on the calling thread (the process's main thread)
    /// until it finishes; returns its result or rethrows its error. Tasks still running then are
    /// abandoned, as they would be at the end of an async `main`.
    ///
    /// Without the hooks installed the body runs on the default executor and this thread only
    /// waits, so the entry point works either way. Throws `LoopError` without running `body` if
    /// the loop cannot be made.
    public static func runMain<T: Sendable>(_ body: sending @escaping () async throws -> T) throws -> T {
        let loop = try made.get()
        let outcome = Mutex<Result<T, any Error>?>(nil)
        // The loop asks after every job whether to stop: a plain flag, not the generic `outcome`,
        // whose lock in this unspecialized function looked up the metadata of three types on each
        // ask (2.5 % of the daemon's instructions per `Schedule` call).
        let finished = FinishedFlag()
        Task {
            let result: Result<T, any Error>
            do { result = .success(try await body()) } catch { result = .failure(error) }
            outcome.withLock { $0 = result }
            finished.set()
            loop.wake()
        }
        loop.run(until: { finished.isSet })
        return try outcome.withLock { $0! }.get()
    }

    /// Delivers `numbers` through a signalfd watched by the loop: they are blocked in the calling
    /// thread, which must be the loop's (inside `runMain`), and reach the stream in order.
    ///
    /// Call it before other threads exist: threads inherit the mask of their creator. A thread
    /// that unblocks them anyway (a library waiting in `epoll_pwait` with an empty mask) gets a
    /// handler that forwards the signal to the loop thread instead of the default action.
    /// Children start with a reset mask and default dispositions (`Spawn.child`), so they are
    /// unaffected. The signals stay trapped after the
    /// stream ends, so a late one is not fatal.
    ///
    /// Throws `LoopError` if the kernel refuses the signalfd (or the loop).
    public static func signals(_ numbers: [Int32]) throws(LoopError) -> AsyncStream<Int32> {
        let loop = try made.get()
        _ = numbers.withUnsafeBufferPointer { tocsin_trap_signals($0.baseAddress, Int32($0.count)) }
        let descriptor = try OwnedDescriptor.make(.signalfd) {
            numbers.withUnsafeBufferPointer { tocsin_signalfd_create($0.baseAddress, Int32($0.count)) }
        }
        let (stream, continuation) = AsyncStream<Int32>.makeStream(bufferingPolicy: .unbounded)
        loop.watch(descriptor.fd) {
            while true {
                let signal = tocsin_signalfd_read(descriptor.fd)
                if signal <= 0 { break }
                continuation.yield(Int32(signal))
            }
        }
        continuation.onTermination = { _ in
            loop.unwatch(descriptor.fd)  // drops the handler, whose reference closes the signalfd
        }
        return stream
    }
}

/// Set once, by the task that finished; read by the loop thread between jobs.
private final class FinishedFlag: Sendable {
    private let value = Atomic<Bool>(false)
    func set() { value.store(true, ordering: .releasing) }
    var isSet: Bool { value.load(ordering: .acquiring) }
}

private struct Factory: ExecutorFactory {
    static var mainExecutor: any MainExecutor { PlatformExecutorFactory.mainExecutor }
    static var defaultExecutor: any TaskExecutor { LoopExecutor.hooked.executor }
}

// The C hooks call these; they must not capture anything (plain C function pointers).

private let enqueueNow: @convention(c) (UnsafeMutableRawPointer?) -> Void = { job in
    LoopExecutor.hooked.push(.global(unsafeBitCast(job!, to: UnownedJob.self)))
}

private let enqueueMain: @convention(c) (UnsafeMutableRawPointer?) -> Void = { job in
    LoopExecutor.hooked.push(.main(unsafeBitCast(job!, to: UnownedJob.self)))
}

private let enqueueDelayed: @convention(c) (UnsafeMutableRawPointer?, Int64) -> Void = { job, deadline in
    LoopExecutor.hooked.push(.global(unsafeBitCast(job!, to: UnownedJob.self)), at: deadline)
}
