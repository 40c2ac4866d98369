import DBus
import Logging
import Synchronization

/// Something that ends once, with a value, and that callers may wait for. The daemon takes its
/// bus name before it loads the persisted state, so that nothing emitted at start is lost; calls
/// that arrive in between wait on this gate rather than seeing an empty or half-loaded schedule.
final class StartGate<Value: Sendable>: Sendable {
    private enum Phase {
        case starting([CheckedContinuation<Value, Never>])
        case ended(Value)
    }
    private let phase = Mutex(Phase.starting([]))

    /// The value start-up ended with. `firstWait` is told when the first caller has to wait, so
    /// that the wait shows in the log once, not once per call.
    func value(firstWait: () -> Void = {}) async -> Value {
        // Once started, every call passes here: no continuation then.
        if let done = ended { return done }
        return await withCheckedContinuation { (c: CheckedContinuation<Value, Never>) in
            let (now, first): (Value?, Bool) = phase.withLock { p in
                switch p {
                case .starting(var waiting):
                    p = .starting([])  // so the array is not shared, and appending does not copy it
                    waiting.append(c)
                    p = .starting(waiting)
                    return (nil, waiting.count == 1)
                case .ended(let v):
                    return (v, false)
                }
            }
            if let now { c.resume(returning: now) } else if first { firstWait() }
        }
    }

    /// The value once start-up has ended, without waiting: every call after start-up takes this
    /// path, and an `async` call costs a frame from the task allocator even when it returns at once.
    var ended: Value? { phase.withLock { p -> Value? in if case .ended(let v) = p { return v }; return nil } }

    /// Ends start-up once; later calls are ignored.
    func end(_ value: Value) {
        let waiting: [CheckedContinuation<Value, Never>] = phase.withLock { p in
            guard case .starting(let w) = p else { return [] }
            p = .ended(value)
            return w
        }
        for c in waiting { c.resume(returning: value) }
    }
}

/// What the gateway's calls wait on during start-up: a value, so that the method closures the
/// connection keeps do not hold the gateway itself.
struct StartWait: Sendable {
    let gate: StartGate<Bool>
    let logger: Logger

    /// What a call that waited gets when start-up failed.
    static let failed = DBusError(.failed, "the daemon could not start")

    /// Returns once start-up has ended: false when it failed. The first call to wait says so in
    /// the log. (Not a typed throw: Swift 6.3's coroutine splitting crashed on one here when built
    /// with `-sanitize=fuzzer,address` at `-O`.)
    func started() async -> Bool {
        let logger = self.logger
        return await gate.value(firstWait: { logger.info("calls wait until the state is loaded") })
    }
}
