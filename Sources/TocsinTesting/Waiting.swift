import Synchronization

/// A test waited longer than its deadline for something to happen.
public struct TestTimeoutError: Error, CustomStringConvertible {
    public let what: String
    public let after: Duration
    public init(what: String, after: Duration) { self.what = what; self.after = after }
    public var description: String { "timed out after \(after) waiting for \(what)" }
}

/// Runs `operation`, failing with `TestTimeoutError` if it has not finished within `timeout`.
///
/// The sleep here is only a deadline: the operation itself must wait on a real event, so a
/// passing test never depends on timing.
public func withTimeout<T: Sendable>(
    _ timeout: Duration, _ what: String, _ operation: @escaping @Sendable () async throws -> T
) async throws -> T {
    try await withThrowingTaskGroup(of: T.self) { group in
        group.addTask { try await operation() }
        group.addTask {
            try await Task.sleep(for: timeout)
            throw TestTimeoutError(what: what, after: timeout)
        }
        defer { group.cancelAll() }
        guard let first = try await group.next() else { throw TestTimeoutError(what: what, after: timeout) }
        return first
    }
}

/// State that changes over time (collected output, received events) and can be awaited:
/// `wait(until:)` returns as soon as a predicate holds, or fails at the deadline.
public final class WaitableState<State: Sendable>: Sendable {
    private struct Waiter {
        let id: UInt64
        let check: @Sendable (State) -> Bool
        let continuation: CheckedContinuation<State, any Error>
    }
    private struct Inner {
        var state: State
        var waiters: [Waiter] = []
        var cancelled: Set<UInt64> = []
        var nextID: UInt64 = 0
    }
    private let inner: Mutex<Inner>

    public init(_ initial: State) { inner = Mutex(Inner(state: initial)) }

    public var value: State { inner.withLock { $0.state } }

    /// Changes the state and wakes every waiter whose predicate now holds.
    public func update(_ body: @Sendable (inout State) -> Void) {
        let ready = inner.withLock { s -> [(CheckedContinuation<State, any Error>, State)] in
            body(&s.state)
            var ready: [(CheckedContinuation<State, any Error>, State)] = []
            s.waiters.removeAll { w in
                if w.check(s.state) {
                    ready.append((w.continuation, s.state))
                    return true
                }
                return false
            }
            return ready
        }
        for (c, state) in ready { c.resume(returning: state) }
    }

    /// Waits until `predicate` holds, at most `timeout`; returns the state that satisfied it.
    @discardableResult
    public func wait(
        _ what: String, timeout: Duration, until predicate: @escaping @Sendable (State) -> Bool
    ) async throws -> State {
        try await withTimeout(timeout, what) { try await self.waitForever(until: predicate) }
    }

    private func waitForever(until predicate: @escaping @Sendable (State) -> Bool) async throws -> State {
        let id = inner.withLock { s in
            s.nextID += 1
            return s.nextID
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (c: CheckedContinuation<State, any Error>) in
                let action = inner.withLock { s -> WaitAction<State> in
                    if predicate(s.state) { return .resume(s.state) }
                    if s.cancelled.remove(id) != nil { return .cancel }
                    s.waiters.append(Waiter(id: id, check: predicate, continuation: c))
                    return .wait
                }
                switch action {
                case .resume(let state): c.resume(returning: state)
                case .cancel: c.resume(throwing: CancellationError())
                case .wait: break
                }
            }
        } onCancel: {
            let waiter = inner.withLock { s -> Waiter? in
                if let i = s.waiters.firstIndex(where: { $0.id == id }) { return s.waiters.remove(at: i) }
                s.cancelled.insert(id)
                return nil
            }
            waiter?.continuation.resume(throwing: CancellationError())
        }
    }
}

private enum WaitAction<State> { case resume(State), cancel, wait }
