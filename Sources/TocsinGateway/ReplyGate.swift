import CTocsinSystem
import DBus
import Synchronization

/// Bounds the replies that grow with the schedule (`List`, `ListPage`): at most `concurrent` are
/// built at once, up to `queue` more wait their turn, and past that a call is refused with
/// `LimitsExceeded`, which the client may retry.
///
/// Each reply is built as values, then marshalled: about 1 KB a notification while it is built.
/// Forty concurrent `List` calls over 100,000 pending held 7.8 GB at once and the heap stayed at
/// 3.5 GB afterwards. With the gate the peak is `concurrent` replies, every other call (`Status`,
/// a firing) still runs between the pages of the one being built, and after a large reply the
/// free heap goes back to the system.
final class ReplyGate: Sendable {
    private struct State {
        var running = 0
        var waiting: [CheckedContinuation<Void, Never>] = []
    }
    private enum Entry { case now, wait, refuse }
    private let state = Mutex(State())
    let concurrent: Int
    let queue: Int

    init(concurrent: Int = 2, queue: Int = 256) {
        self.concurrent = concurrent
        self.queue = queue
    }

    /// Runs `body` when a slot is free; `member` names the call in the refusal.
    func run<T: Sendable>(_ member: String, _ body: () async throws(DBusError) -> T) async throws(DBusError) -> T {
        let entry = state.withLock { s -> Entry in
            if s.running < concurrent { s.running += 1; return .now }
            return s.waiting.count < queue ? .wait : .refuse
        }
        switch entry {
        case .refuse:
            throw DBusError(.limitsExceeded, "\(member): \(concurrent) replies are being built and \(queue) calls wait for them; try again")
        case .wait:
            await withCheckedContinuation { c in
                // The slot may have come free between the check and now.
                let now = state.withLock { s -> Bool in
                    if s.running < concurrent { s.running += 1; return true }
                    s.waiting.append(c)
                    return false
                }
                if now { c.resume() }
            }
        case .now: break
        }
        defer { release() }
        return try await body()
    }

    /// Hands the slot to the next waiting call, or frees it. Once no reply is being built, the
    /// heap they used is given back, after the current reply has been sent (the trim is a job
    /// queued behind the one sending it).
    private func release() {
        let (next, idle) = state.withLock { s -> (CheckedContinuation<Void, Never>?, Bool) in
            if !s.waiting.isEmpty { return (s.waiting.removeFirst(), false) }
            s.running -= 1
            return (nil, s.running == 0)
        }
        if let next { next.resume() }
        // Off the loop too: on a fragmented heap the trim walks every arena.
        if idle { Task { await runOffLoop { _ = tocsin_malloc_trim() } } }
    }
}
