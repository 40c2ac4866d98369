import CLibNotify
import Glibc
import Synchronization
import TocsinSystem

/// A GLib main loop on a thread of its own, and the one door into it.
///
/// libnotify delivers `ActionInvoked` and `NotificationClosed` through GDBus signal subscriptions,
/// which dispatch on the main context that was thread-default when the proxy was made; so every
/// libnotify call runs here, on a private context that this thread pushes as its default. The loop
/// blocks in `poll` with no timeout while idle: no wake-ups unless the bus or a caller has something.
final class GLibLoop: Sendable {
    /// Raw GLib pointers, shared by design: `g_main_context_invoke_full` and `g_main_loop_quit` are
    /// thread-safe, and nothing else touches them off the loop thread.
    private struct Handles: @unchecked Sendable {
        let context: OpaquePointer
        let loop: OpaquePointer
    }
    private let handles: Handles
    /// Set once the thread runs; the loop then lives as long as the process (libnotify's state is global too).
    private let thread: Mutex<pthread_t?> = Mutex(nil)

    /// nil only if GLib could not allocate (it normally aborts first).
    init?() {
        guard let context = g_main_context_new() else { return nil }
        guard let loop = g_main_loop_new(context, 0) else {
            g_main_context_unref(context)
            return nil
        }
        handles = Handles(context: context, loop: loop)
    }

    deinit {
        g_main_loop_unref(handles.loop)
        g_main_context_unref(handles.context)
    }

    /// Starts the thread; false if it could not be created (the caller reports deliveries unavailable).
    func start() -> Bool {
        thread.withLock { t in
            if t != nil { return true }
            // The thread holds the loop for as long as it runs (the process's lifetime).
            guard case .success(let tid) = WorkerThread.startJoinable({ [self] in run() }) else { return false }
            t = tid
            return true
        }
    }

    private func run() {
        g_main_context_push_thread_default(handles.context)
        g_main_loop_run(handles.loop)
        g_main_context_pop_thread_default(handles.context)
    }

    /// True on the loop's thread, while it runs.
    var isCurrent: Bool { g_main_context_is_owner(handles.context) != 0 }

    /// Queues `job` onto the loop (never runs it inline: callers are Swift tasks, not this thread).
    func enqueue(_ job: @escaping @Sendable () -> Void) {
        let box = Unmanaged.passRetained(JobBox(job)).toOpaque()
        g_main_context_invoke_full(handles.context, tocsin_priority_default(), glibRunJob, box, glibReleaseJob)
    }

    /// Runs `body` on the loop and returns its result. On task cancellation it returns `cancelled`
    /// at once; the job still runs later (a libnotify call cannot be interrupted), its result dropped.
    func perform<T: Sendable>(cancelled: T, _ body: @escaping @Sendable () -> T) async -> T {
        let once = OnceContinuation<T>()
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (c: CheckedContinuation<T, Never>) in
                once.set(c)
                if Task.isCancelled { once.resume(cancelled); return }
                enqueue { once.resume(body()) }
            }
        } onCancel: {
            once.resume(cancelled)
        }
    }
}

/// A continuation resumed by whichever comes first, the job or a cancellation; later values are dropped.
private final class OnceContinuation<T: Sendable>: Sendable {
    private struct State {
        var continuation: CheckedContinuation<T, Never>?
        /// A value that arrived before the continuation was installed (cancelled before start).
        var early: T?
        var done = false
    }
    private let state = Mutex(State())

    func set(_ c: CheckedContinuation<T, Never>) {
        let early = state.withLock { s -> T? in
            if let e = s.early { s.early = nil; return e }
            s.continuation = c
            return nil
        }
        if let early { c.resume(returning: early) }
    }

    func resume(_ value: T) {
        let c = state.withLock { s -> CheckedContinuation<T, Never>? in
            if s.done { return nil }
            s.done = true
            if let c = s.continuation { s.continuation = nil; return c }
            s.early = value
            return nil
        }
        c?.resume(returning: value)
    }
}

/// A job on its way through GLib's queue.
///
/// GLib orders the hand-off with its own lock, but GLib is not instrumented, so ThreadSanitizer
/// cannot see it and reports everything the job touches that its sender wrote before
/// `enqueue` (the box, a NotifyServerLink made just before its first job) as racing with the loop
/// thread. Taking the job out under a Mutex states the same ordering in code TSan checks: every
/// job run on the loop is then verified instead of excused by a suppression broad enough to hide
/// real races on this thread.
private final class JobBox: Sendable {
    private let job: Mutex<(@Sendable () -> Void)?>
    init(_ job: @escaping @Sendable () -> Void) {
        self.job = Mutex(nil)
        // Stored under the lock (not as the initial value), so the sender's release pairs with
        // the loop thread's acquire in `take`.
        self.job.withLock { $0 = job }
    }
    /// The job, once; nil if it was already taken.
    func take() -> (@Sendable () -> Void)? {
        job.withLock { j in
            defer { j = nil }
            return j
        }
    }
}

private func glibRunJob(_ data: gpointer?) -> gboolean {
    if let data { Unmanaged<JobBox>.fromOpaque(data).takeUnretainedValue().take()?() }
    return tocsin_source_remove()
}

private func glibReleaseJob(_ data: gpointer?) {
    if let data { Unmanaged<JobBox>.fromOpaque(data).release() }
}
