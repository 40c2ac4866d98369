import Synchronization

/// The bus name is taken before the persisted state is loaded, so a client can call `Reload`
/// while the daemon is still starting. Such a call waits for start-up to end rather than being
/// refused: a client that saw the name owned has every reason to think the daemon is there.
final class StartGate<Value: Sendable>: Sendable {
    private enum Phase {
        case starting([CheckedContinuation<Value?, Never>])
        case ended(Value?)
    }
    private let phase = Mutex(Phase.starting([]))

    /// The started value, or nil when start-up failed. `waiting` is told when the caller has to
    /// wait, so that the wait shows in the log.
    func value(waiting: () -> Void = {}) async -> Value? {
        await withCheckedContinuation { (c: CheckedContinuation<Value?, Never>) in
            let now: Value?? = phase.withLock { p in
                switch p {
                case .starting(var waiting):
                    waiting.append(c)
                    p = .starting(waiting)
                    return nil
                case .ended(let v):
                    return .some(v)
                }
            }
            if let now { c.resume(returning: now) } else { waiting() }
        }
    }

    /// Ends start-up once; later calls are ignored.
    func end(_ value: Value?) {
        let waiting: [CheckedContinuation<Value?, Never>] = phase.withLock { p in
            guard case .starting(let w) = p else { return [] }
            p = .ended(value)
            return w
        }
        for c in waiting { c.resume(returning: value) }
    }
}
