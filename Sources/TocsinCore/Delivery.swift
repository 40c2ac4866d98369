import Logging
import Synchronization
public import TocsinTime
import TocsinSystem

/// Timeouts and retries of deliveries. Each (firing, backend) pair runs in its own task, so a slow
/// or hanging backend delays nobody else, and an attempt that outlives its timeout is abandoned.
public struct DeliveryPolicy: Hashable, Sendable {
    public var timeout: TimeSpan = .seconds(10)
    /// Waits before each retry; the number of entries bounds the attempts.
    public var retryDelays: [TimeSpan] = [.seconds(1), .seconds(2), .seconds(4), .seconds(8), .seconds(16), .seconds(30)]
    public init() {}
}

enum Deliverer {
    /// Delivers with retries; returns nil on success or the last error. `current` names the
    /// backend to retry on: a reload may have replaced the instance this began with (and shut it
    /// down) or removed the backend (nil), and a firing must not go where the config no longer
    /// sends it.
    static func deliver(_ firing: Firing, to backend: any DeliveryBackend, policy: DeliveryPolicy,
                        clock: any TocsinClock, logger: Logger,
                        current: @Sendable () async -> (any DeliveryBackend)?) async -> DeliveryError? {
        var backend = backend
        var attempt = 0
        while true {
            if attempt > 0 {
                guard let now = await current() else {
                    logger.warning("a retried firing's backend was removed by a reload or shut down; not retried", metadata: [
                        "key": "\(firing.key)", "backend": "\(backend.name)"])
                    return DeliveryError(.failed, "backend gone before the retry")
                }
                backend = now
            }
            // A withdraw (acknowledge, cancel, snooze, replace) cancels the task: the attempt runs
            // in a task of its own, which would not see it, so it is checked before every attempt,
            // and after the wait above, during which the withdraw may have come.
            if Task.isCancelled { return DeliveryError(.failed, "abandoned") }
            let result = await attemptOnce(firing, backend, timeout: policy.timeout, clock: clock)
            guard let error = result else { return nil }
            if Task.isCancelled { return error }
            let retryable = error.code != .permanent
            guard retryable, attempt < policy.retryDelays.count else {
                logger.error("delivery failed, giving up", metadata: [
                    "key": "\(firing.key)", "backend": "\(backend.name)", "attempts": "\(attempt + 1)", "error": "\(error)"])
                return error
            }
            let delay = policy.retryDelays[attempt]
            logger.warning("delivery failed, will retry", metadata: [
                "key": "\(firing.key)", "backend": "\(backend.name)", "retry-in": "\(delay)", "error": "\(error)"])
            attempt += 1
            do { try await clock.sleep(until: clock.now() + delay) } catch { return DeliveryError(.failed, "cancelled while waiting to retry") }
        }
    }

    private static func attemptOnce(_ firing: Firing, _ backend: any DeliveryBackend, timeout: TimeSpan,
                                    clock: any TocsinClock) async -> DeliveryError? {
        let gate = ResultGate()
        let workBox = Mutex<Task<Void, Never>?>(nil)
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (cont: CheckedContinuation<DeliveryError?, Never>) in
                gate.install(cont)
                // Under the lock `onCancel` takes: an attempt abandoned before it began is never
                // started, since the backend would deliver it after the withdraw.
                let work = workBox.withLock { box -> Task<Void, Never>? in
                    guard !gate.isDone else { return nil }
                    let work = Task {
                        do throws(DeliveryError) {
                            try await backend.deliver(firing)
                            gate.resume(nil)
                        } catch {
                            gate.resume(error)
                        }
                    }
                    box = work
                    return work
                }
                guard let work else { return }
                let deadline = clock.now() + timeout
                let timer = Task {
                    do { try await clock.sleep(until: deadline) } catch { return }
                    if gate.resume(DeliveryError(.timedOut, "no answer within \(timeout)")) { work.cancel() }
                }
                gate.onResume { timer.cancel() }
            }
        } onCancel: {
            // Abandoned (the key was acknowledged or cancelled): stop waiting and tell the backend.
            if gate.resume(DeliveryError(.failed, "abandoned")) { workBox.withLock { $0 }?.cancel() }
        }
    }
}

/// Resumes a continuation exactly once, whichever of the delivery or its timeout finishes first.
private final class ResultGate: Sendable {
    private struct State {
        var continuation: CheckedContinuation<DeliveryError?, Never>?
        var done = false
        var pending: DeliveryError??
        var onResume: (@Sendable () -> Void)?
    }
    private let state = Mutex(State())

    func install(_ c: CheckedContinuation<DeliveryError?, Never>) {
        let early: DeliveryError?? = state.withLock { s in
            if let p = s.pending { return .some(p) }
            s.continuation = c
            return nil
        }
        if let early { c.resume(returning: early) }
    }

    var isDone: Bool { state.withLock { $0.done } }

    func onResume(_ f: @escaping @Sendable () -> Void) {
        let fireNow = state.withLock { s -> Bool in
            if s.done { return true }
            s.onResume = f
            return false
        }
        if fireNow { f() }
    }

    /// True for the caller that won the race.
    @discardableResult
    func resume(_ value: DeliveryError?) -> Bool {
        let (won, cont, hook) = state.withLock { s -> (Bool, CheckedContinuation<DeliveryError?, Never>?, (@Sendable () -> Void)?) in
            guard !s.done else { return (false, nil, nil) }
            s.done = true
            let c = s.continuation
            s.continuation = nil
            if c == nil { s.pending = .some(value) }
            let h = s.onResume
            s.onResume = nil
            return (true, c, h)
        }
        cont?.resume(returning: value)
        hook?()
        return won
    }
}
