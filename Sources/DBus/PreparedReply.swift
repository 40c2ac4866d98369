import CDispatch  // `pthread_attr_t()`: clang attributes the merged pthread types to CDispatch
import Glibc
import Synchronization

/// A reply a handler marshalled itself, away from the loop thread.
///
/// Marshalling is proportional to the reply: 20 MB of `List` took a second of a debug build's
/// loop thread, and every firing and call of the daemon waited behind it. A handler with a large
/// reply builds the message on a thread of its own (`DBusMethodCall.prepareReply`) and the export
/// sends it as it is; the values the handler returns then only carry the declared signature.
public final class PreparedReply: Sendable {
    private let message = Mutex<DBusMessage?>(nil)
    init() {}
    func set(_ m: DBusMessage?) { message.withLock { $0 = m } }
    func take() -> DBusMessage? { message.withLock { m in defer { m = nil }; return m } }
}

extension DBusMethodCall {
    /// Marshals the reply `values` on a thread of its own, checked against `maxMessageSize` as the
    /// export would (too large: a `LimitsExceeded` error reply instead), and leaves it for the export
    /// to send. Returns once it is ready.
    public func prepareReply(_ values: [DBusValue], maxMessageSize: Int) async {
        let call = message
        let member = self.member
        let prepared = await runOffLoop { () -> DBusMessage? in
            if let problem = DBusWireSize.problem(values, limit: maxMessageSize) {
                return DBusMessage.error(replyingTo: call, DBusError(.limitsExceeded, "the reply of \(member) is too large to send: \(problem)"))
            }
            do throws(DBusError) {
                return try DBusMessage.methodReturn(replyingTo: call, arguments: values)
            } catch {
                return DBusMessage.error(replyingTo: call, DBusError(.failed, "reply could not be encoded: \(error.message)"))
            }
        }
        self.prepared.set(prepared)
    }
}

/// Runs `body` on a new detached thread and resumes with its result; the caller's thread (the
/// loop) goes on with other work meanwhile. For rare, large jobs: a thread per call.
public func runOffLoop<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { (c: CheckedContinuation<T, Never>) in
        let job = OffLoopJob(body, c)
        // No thread to be had: do the work here rather than not at all.
        if DBusThread.start({ job.run() }) != 0 { job.run() }
    }
}

/// Lets go of the work, and of everything it captured, before resuming the caller. A `List`
/// marshalled here captures 20 MB of reply values; had the thread kept them until it exited,
/// the caller, resumed meanwhile on another thread, could trim the heap before they were freed,
/// and the heap then stayed 20 MB larger until the next large reply (seen under CPU load).
final class OffLoopJob<T: Sendable>: Sendable {
    private let body: Mutex<(@Sendable () -> T)?>
    private let continuation: CheckedContinuation<T, Never>

    init(_ body: @escaping @Sendable () -> T, _ continuation: CheckedContinuation<T, Never>) {
        self.body = Mutex(body)
        self.continuation = continuation
    }

    func run() {
        let result: T
        do {
            guard let work = body.withLock({ b in defer { b = nil }; return b }) else { return }
            result = work()
        }  // `work` is released here, before the caller goes on
        continuation.resume(returning: result)
    }
}
