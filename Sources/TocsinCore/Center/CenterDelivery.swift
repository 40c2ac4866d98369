import Logging
import TocsinTime
import TocsinSystem

/// Handing firings and withdrawals to backends, and recording when they are done.
///
/// Batch-capable backends (`BatchDeliveryBackend`) get a whole batch in one call. Every other
/// delivery runs in a per-(key, backend) queue: late firings of a key arrive oldest first, and a
/// withdraw never overtakes the delivery it withdraws. Different pairs never wait on each other,
/// so a hanging backend delays only its own queue.
extension TocsinCenter {
    func dispatch(_ firings: [Firing]) {
        let firings = routeQuiet(firings)
        var batches: [String: [Firing]] = [:]
        var order: [String] = []
        for f in firings {
            for name in f.backends {
                inFlight += 1
                guard let backend = backends[name] else {
                    logger.error("backend is not configured; skipping", metadata: ["key": "\(f.key)", "backend": "\(name)"])
                    finishedDelivery(f, backend: name, error: nil)
                    continue
                }
                if backend is any BatchDeliveryBackend, queues[Self.queueKey(f.key, name)] == nil {
                    if batches[name] == nil { order.append(name) }
                    batches[name, default: []].append(f)
                } else {
                    enqueueDelivery(f, to: backend)
                }
            }
        }
        for name in order {
            guard let backend = backends[name] as? any BatchDeliveryBackend, let list = batches[name] else { continue }
            let errors = backend.deliver(batch: list)
            for (i, f) in list.enumerated() {
                let error = i < errors.count ? errors[i] : nil
                if let error, error.code != .permanent {
                    enqueueDelivery(f, to: backend)
                } else {
                    if let error {
                        logger.error("delivery failed, giving up", metadata: ["key": "\(f.key)", "backend": "\(name)", "error": "\(error)"])
                    }
                    finishedDelivery(f, backend: name, error: error)
                }
            }
        }
    }

    func enqueueDelivery(_ firing: Firing, to backend: any DeliveryBackend) {
        let policy = options.delivery
        let clock = self.clock
        let logger = self.logger
        let name = backend.name
        // A delivery queued behind an earlier one of the same key and backend starts when that
        // one ends, maybe after a hanging backend's timeout: a burst does not wait for it.
        let counted = queues[Self.queueKey(firing.key, name)] == nil
        if counted { unstarted += 1 }
        enqueue(key: firing.key, backend: name, cancelPrevious: false) {
            if counted { await self.deliveryStarted() }
            let error = await Deliverer.deliver(firing, to: backend, policy: policy, clock: clock, logger: logger)
            await self.finishedDelivery(firing, backend: name, error: error)
        }
    }

    private func deliveryStarted() {
        unstarted -= 1
        if unstarted == 0 {
            let w = startWaiters
            startWaiters = []
            for c in w { c.resume() }
        }
    }

    /// Returns once every delivery dispatched so far has been handed to its backend (or is queued
    /// behind an earlier delivery of the same key): what bounds a burst's claims ahead of its
    /// deliveries (`runBatch`).
    func deliveriesStarted() async {
        if unstarted == 0 { return }
        await withCheckedContinuation { startWaiters.append($0) }
    }

    /// Records (in the next batch) that `backend` is done with `firing`, delivered or not.
    func finishedDelivery(_ f: Firing, backend: String, error: DeliveryError?) {
        if let error { emit(.deliveryFailed(key: f.key, backend: backend, message: error.message)) }
        queued.append(.finished(key: f.key, occurrence: f.occurrence, backend: backend))
        startDraining()
    }

    func withdraw(key: String, from names: [String], reason: WithdrawReason, snoozedUntil: Instant? = nil) {
        for name in names {
            guard let b = backends[name] else { continue }
            enqueue(key: key, backend: name, cancelPrevious: reason != .replaced) {
                await b.withdraw(key: key, reason: reason, snoozedUntil: snoozedUntil)
            }
        }
    }

    static func queueKey(_ key: String, _ backend: String) -> String { key + "\u{0}" + backend }

    /// `cancelPrevious` abandons what is queued before (a delivery still retrying is pointless
    /// once the key is acknowledged or cancelled), so the withdraw runs at once.
    func enqueue(key: String, backend: String, cancelPrevious: Bool, _ work: @escaping @Sendable () async -> Void) {
        let queueKey = Self.queueKey(key, backend)
        let previous = queues[queueKey]?.task
        if cancelPrevious { previous?.cancel() }
        queueCounter += 1
        let id = queueCounter
        let task = Task.detached {
            await previous?.value
            await work()
            await self.queueFinished(queueKey, id)
        }
        queues[queueKey] = (id, task)
    }

    private func queueFinished(_ queueKey: String, _ id: Int) {
        if queues[queueKey]?.id == id { queues[queueKey] = nil }
    }

    /// Returns once every delivery dispatched so far has finished and been recorded.
    /// Shutdown uses it to flush; tests use it to assert that nothing else was delivered.
    public func waitForDeliveries() async {
        if inFlight == 0 { return }
        let id = nextWaiter
        nextWaiter += 1
        await withCheckedContinuation { idleWaiters[id] = $0 }
    }

    /// Like `waitForDeliveries`, but gives up after `limit` of real time.
    public func waitForDeliveries(atMost limit: Duration) async {
        if inFlight == 0 { return }
        let id = nextWaiter
        nextWaiter += 1
        // Real time, not the injected clock: the grace bounds how long a process takes to stop,
        // and a test's virtual clock that nobody moves would make a shutdown with a hung
        // delivery wait for ever (the in-process daemon tests with a hung dbus-service did).
        let sleeper = Task {
            try? await Task.sleep(for: limit)
            self.releaseWaiter(id)
        }
        await withCheckedContinuation { idleWaiters[id] = $0 }
        sleeper.cancel()
    }

    private func releaseWaiter(_ id: Int) {
        idleWaiters.removeValue(forKey: id)?.resume()
    }

    func deliveryDone() {
        inFlight -= 1
        if inFlight == 0 {
            let w = idleWaiters
            idleWaiters = [:]
            for c in w.values { c.resume() }
        }
    }
}
