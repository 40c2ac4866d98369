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
/// passing test never depends on timing. The deadline holds even for an operation that ignores
/// cancellation (awaiting another task's `value`, a continuation nobody resumes): a task group
/// would wait for such a child after the deadline, and a broken fix would hang the suite instead
/// of failing its test. Such an operation is cancelled and left running.
public func withTimeout<T: Sendable>(
    _ timeout: Duration, _ what: String, _ operation: @escaping @Sendable () async throws -> T
) async throws -> T {
    let answer = FirstAnswer<T>()
    let work = Task {
        do { answer.give(.success(try await operation())) } catch { answer.give(.failure(error)) }
    }
    let deadline = Task {
        do { try await Task.sleep(for: timeout) } catch { return }
        answer.give(.failure(TestTimeoutError(what: what, after: timeout)))
    }
    defer { work.cancel(); deadline.cancel() }
    return try await withTaskCancellationHandler {
        try await answer.value()
    } onCancel: {
        answer.give(.failure(CancellationError()))
    }
}

/// Yields until `condition` holds, failing at the deadline: for state no event announces (an
/// actor's queue length). Checks for cancellation on each turn, so a timed-out wait stops
/// instead of spinning on through the tests after it.
public func waitUntil(_ what: String, timeout: Duration = .seconds(10),
                      _ condition: @escaping @Sendable () async -> Bool) async throws {
    try await withTimeout(timeout, what) {
        while !(await condition()) {
            try Task.checkCancellation()
            await Task.yield()
        }
    }
}

/// The first of several answers, for one waiter that may come before or after it.
private final class FirstAnswer<T: Sendable>: Sendable {
    private enum State {
        case empty
        case waiting(CheckedContinuation<T, any Error>)
        case answered(Result<T, any Error>)
        case done
    }
    private let state = Mutex(State.empty)

    func give(_ result: Result<T, any Error>) {
        let waiter: CheckedContinuation<T, any Error>? = state.withLock { s in
            switch s {
            case .empty: s = .answered(result); return nil
            case .waiting(let c): s = .done; return c
            case .answered, .done: return nil
            }
        }
        waiter?.resume(with: result)
    }

    func value() async throws -> T {
        try await withCheckedThrowingContinuation { (c: CheckedContinuation<T, any Error>) in
            let ready: Result<T, any Error>? = state.withLock { s in
                if case .answered(let r) = s { s = .done; return r }
                s = .waiting(c)
                return nil
            }
            if let ready { c.resume(with: ready) }
        }
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
