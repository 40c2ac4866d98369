import CTocsinSystem
public import Glibc

/// Threads for work that must not run on the loop thread: work whose cost the input decides
/// (reading and checking the config file a reload names), work that may block (waiting for a
/// child, for the wall-clock timer), or a long scan. The loop keeps firing and answering meanwhile.
///
/// The one place the process starts a thread of its own: the closure is boxed, passed retained
/// through `pthread_create`, and released by the thread when the body returns.
public enum WorkerThread: Sendable {
    /// Starts `body` on a new detached thread. False when no thread could be created (the
    /// process is at its thread limit); the caller then decides what to do instead.
    public static func start(stackSize: Int? = nil, _ body: @escaping @Sendable () -> Void) -> Bool {
        create(detached: true, stackSize: stackSize, body).result == 0
    }

    /// Starts `body` on a new thread the caller joins (`pthread_join`) when it stops it; the
    /// `pthread_create` error number when none could be created.
    public static func startJoinable(_ body: @escaping @Sendable () -> Void) -> Result<pthread_t, ThreadError> {
        let (tid, rc) = create(detached: false, stackSize: nil, body)
        return rc == 0 ? .success(tid) : .failure(ThreadError(code: rc))
    }

    /// Why no thread was made: `pthread_create`'s error number.
    public struct ThreadError: Error, Sendable, CustomStringConvertible {
        public var code: Int32
        public var description: String { "pthread_create: \(code)" }
    }

    private static func create(detached: Bool, stackSize: Int?, _ body: @escaping @Sendable () -> Void) -> (tid: pthread_t, result: Int32) {
        var attr = pthread_attr_t()
        pthread_attr_init(&attr)
        defer { pthread_attr_destroy(&attr) }
        if detached { pthread_attr_setdetachstate(&attr, Int32(PTHREAD_CREATE_DETACHED)) }
        if let stackSize { pthread_attr_setstacksize(&attr, stackSize) }
        var tid = pthread_t()
        let arg = Unmanaged.passRetained(WorkerBody(body)).toOpaque()
        let rc = pthread_create(&tid, &attr, workerThreadMain, arg)
        if rc != 0 { Unmanaged<WorkerBody>.fromOpaque(arg).release() }
        return (tid, rc)
    }

    /// `body`'s result, computed on a thread of its own; the calling task waits without holding
    /// the loop. Without a thread the body runs on the caller's (late, rather than never).
    ///
    /// `background`: the thread runs at nice 10, so on a busy machine the scheduler gives the
    /// loop thread (firings, calls) the cores first and this work what is left.
    public static func run<T: Sendable>(background: Bool = false, _ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { (c: CheckedContinuation<T, Never>) in
            let box = ResumeOnce(c)
            let started = start {
                if background { _ = tocsin_thread_set_nice(10) }
                box.resume(body())
            }
            if !started { box.resume(body()) }
        }
    }
}

private final class WorkerBody: Sendable {
    let body: @Sendable () -> Void
    init(_ body: @escaping @Sendable () -> Void) { self.body = body }
}

/// Holds the continuation for the thread that resumes it.
private final class ResumeOnce<T: Sendable>: Sendable {
    private let continuation: CheckedContinuation<T, Never>
    init(_ c: CheckedContinuation<T, Never>) { continuation = c }
    func resume(_ value: T) { continuation.resume(returning: value) }
}

private func workerThreadMain(_ arg: UnsafeMutableRawPointer?) -> UnsafeMutableRawPointer? {
    guard let arg else { return nil }
    Unmanaged<WorkerBody>.fromOpaque(arg).takeRetainedValue().body()
    return nil
}
