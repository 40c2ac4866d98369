import CDBus
import Synchronization

/// One outstanding method call: the libdbus pending call plus who to tell.
///
/// Completed exactly once, by the reply, the libdbus timeout (which arrives as a NoReply error
/// reply), a disconnect, or cancellation.
final class PendingReply: Sendable {
    typealias Completion = @Sendable (Result<DBusMessage, DBusError>) -> Void
    private struct State {
        var completion: Completion?
        var pending: RawHandle?
        var onDone: (@Sendable () -> Void)?
    }
    private let state: Mutex<State>

    init(_ completion: @escaping Completion) {
        state = Mutex(State(completion: completion, pending: nil))
    }

    /// Loop thread: remember the libdbus pending call (we own one reference to it).
    func attach(_ pending: OpaquePointer, onDone: @escaping @Sendable () -> Void) {
        let handle = RawHandle(pending)
        state.withLock {
            $0.pending = handle
            $0.onDone = onDone
        }
    }

    /// Loop thread, at teardown: a call libdbus never completed (it raced with the disconnect).
    func abandon() {
        let pending = state.withLock { $0.pending }
        if let pending { dbus_pending_call_cancel(pending.raw) }
        complete(.failure(DBusError(.disconnected, "connection closed before a reply arrived")))
    }

    var isCompleted: Bool { state.withLock { $0.completion == nil } }

    func complete(_ result: Result<DBusMessage, DBusError>) {
        let (completion, pending, onDone) = state.withLock { s -> (Completion?, RawHandle?, (@Sendable () -> Void)?) in
            defer { s.completion = nil; s.pending = nil; s.onDone = nil }
            return (s.completion, s.pending, s.onDone)
        }
        if let pending { dbus_pending_call_unref(pending.raw) }
        onDone?()
        completion?(result)
    }

    /// Loop thread, from the notify callback during dispatch.
    func completeFromLibDBus() {
        let pending = state.withLock { $0.pending }
        guard let pending, let reply = dbus_pending_call_steal_reply(pending.raw) else {
            complete(.failure(DBusError(.noReply, "no reply")))
            return
        }
        let message = DBusMessage(owning: reply)
        if message.kind == .error {
            complete(.failure(message.asError))
        } else {
            complete(.success(message))
        }
    }

    /// Loop thread: give up on the call (task cancelled).
    func cancel() {
        let pending = state.withLock { $0.pending }
        if let pending { dbus_pending_call_cancel(pending.raw) }
        complete(.failure(DBusError(.cancelled, "call cancelled")))
    }
}
