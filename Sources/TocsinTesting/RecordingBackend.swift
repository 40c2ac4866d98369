import Synchronization
import TocsinConfig
public import TocsinCore
import TocsinTime
public import TocsinModel

/// A spy backend: records every delivery and withdrawal, and can be told to fail or hang.
/// Tests wait on what it recorded with a deadline instead of sleeping.
public final class RecordingBackend: DeliveryBackend, Sendable {
    public enum Behaviour: Sendable {
        case succeed
        /// Throws this error on every attempt.
        case fail(DeliveryError)
        /// Fails the first `n` attempts with `.unavailable`, then succeeds.
        case failFirst(Int)
        /// Never returns until cancelled.
        case hang
    }

    public struct Withdrawal: Hashable, Sendable {
        public var key: String
        public var reason: WithdrawReason
    }

    private struct State {
        var deliveries: [Firing] = []
        var attempts = 0
        var withdrawals: [Withdrawal] = []
        var behaviour: Behaviour
        var waiters: [(predicate: @Sendable ([Firing], [Withdrawal]) -> Bool, continuation: CheckedContinuation<Bool, Never>)] = []
        var events: (any BackendEventSink)?
    }

    public let name: String
    public let ringPolicy: RingPolicy?
    /// As a popup backend (`.hold`) or a signal/log one (`.deliver`) during quiet hours.
    public let quietMode: QuietMode
    /// As a popup backend, which an alarm's rings also reach.
    public let followsRings: Bool
    private let state: Mutex<State>

    public init(name: String, ringPolicy: RingPolicy? = nil, behaviour: Behaviour = .succeed, quietMode: QuietMode = .deliver,
                followsRings: Bool = false) {
        self.name = name
        self.ringPolicy = ringPolicy
        self.quietMode = quietMode
        self.followsRings = followsRings
        self.state = Mutex(State(behaviour: behaviour))
    }

    public var deliveries: [Firing] { state.withLock { $0.deliveries } }
    public var withdrawals: [Withdrawal] { state.withLock { $0.withdrawals } }
    public var attempts: Int { state.withLock { $0.attempts } }
    public var deliveredKeys: [String] { deliveries.map(\.key) }

    public func setBehaviour(_ b: Behaviour) { state.withLock { $0.behaviour = b } }

    /// Simulates a person pressing a button in this backend's UI.
    public func send(_ event: BackendEvent) { state.withLock { $0.events }?.send(event) }

    public func start(events: any BackendEventSink) async { state.withLock { $0.events = events } }

    public func deliver(_ firing: Firing) async throws(DeliveryError) {
        let behaviour = state.withLock { s -> Behaviour in s.attempts += 1; return s.behaviour }
        switch behaviour {
        case .succeed: break
        case .fail(let e): throw e
        case .failFirst(let n):
            let attempt = state.withLock { $0.attempts }
            if attempt <= n { throw DeliveryError(.unavailable, "simulated failure \(attempt)") }
        case .hang:
            while !Task.isCancelled { await Task.yield(); try? await Task.sleep(for: .seconds(3600)) }
            throw DeliveryError(.timedOut, "cancelled")
        }
        record { $0.deliveries.append(firing) }
    }

    public func withdraw(key: String, reason: WithdrawReason) async {
        record { $0.withdrawals.append(Withdrawal(key: key, reason: reason)) }
    }

    private func record(_ change: (inout State) -> Void) {
        let ready = state.withLock { s -> [CheckedContinuation<Bool, Never>] in
            change(&s)
            var done: [CheckedContinuation<Bool, Never>] = []
            s.waiters.removeAll { w in
                if w.predicate(s.deliveries, s.withdrawals) { done.append(w.continuation); return true }
                return false
            }
            return done
        }
        for c in ready { c.resume(returning: true) }
    }

    /// Waits until `predicate` holds for what was recorded, or `timeout` of real time passes
    /// (a deadline for a broken test, not a synchronisation sleep). Returns whether it held.
    public func wait(timeout: Duration = .seconds(10),
                     until predicate: @escaping @Sendable ([Firing], [Withdrawal]) -> Bool) async -> Bool {
        await withCheckedContinuation { (c: CheckedContinuation<Bool, Never>) in
            let now = state.withLock { s -> Bool in
                if predicate(s.deliveries, s.withdrawals) { return true }
                s.waiters.append((predicate, c))
                return false
            }
            if now { c.resume(returning: true); return }
            Task {
                try? await Task.sleep(for: timeout)
                let expired = state.withLock { s -> [CheckedContinuation<Bool, Never>] in
                    var out: [CheckedContinuation<Bool, Never>] = []
                    s.waiters.removeAll { w in
                        // Continuations are not comparable; expire every waiter still pending on this backend
                        // whose predicate is false. Each test waits on one condition at a time.
                        if !w.predicate(s.deliveries, s.withdrawals) { out.append(w.continuation); return true }
                        return false
                    }
                    return out
                }
                for c in expired { c.resume(returning: false) }
            }
        }
    }

    public func waitForDeliveries(_ n: Int, timeout: Duration = .seconds(10)) async -> Bool {
        await wait(timeout: timeout) { d, _ in d.count >= n }
    }
}
