import CDispatch  // `pthread_attr_t()`: clang attributes the merged pthread types to CDispatch
import Glibc

/// The D-Bus layer's one way to start a thread: each connection's loop thread, the server's
/// accept thread and the off-loop jobs. (This module is what an app links with the client
/// library, so it does not use the daemon's `WorkerThread` in TocsinSystem; it has its own, once.)
///
/// The body is boxed and passed retained through `pthread_create`; the thread releases it when
/// the body returns, so whatever the body captures lives as long as the thread needs it.
enum DBusThread {
    /// Starts `body` on a new detached thread. `pthread_create`'s error number when no thread
    /// could be made (the body is then never run), else 0.
    static func start(_ body: @escaping @Sendable () -> Void) -> Int32 {
        var attr = pthread_attr_t()
        pthread_attr_init(&attr)
        defer { pthread_attr_destroy(&attr) }
        pthread_attr_setdetachstate(&attr, Int32(PTHREAD_CREATE_DETACHED))
        var tid = pthread_t()
        let arg = Unmanaged.passRetained(ThreadBody(body)).toOpaque()
        let rc = pthread_create(&tid, &attr, dbusThreadMain, arg)
        if rc != 0 { Unmanaged<ThreadBody>.fromOpaque(arg).release() }
        return rc
    }
}

private final class ThreadBody: Sendable {
    let body: @Sendable () -> Void
    init(_ body: @escaping @Sendable () -> Void) { self.body = body }
}

/// The C entry of every thread `DBusThread` starts (a global function: C cannot call a closure).
private func dbusThreadMain(_ arg: UnsafeMutableRawPointer?) -> UnsafeMutableRawPointer? {
    guard let arg else { return nil }
    Unmanaged<ThreadBody>.fromOpaque(arg).takeRetainedValue().body()
    return nil
}
