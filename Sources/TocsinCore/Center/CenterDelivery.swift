import Logging
import Synchronization
public import TocsinTime
import TocsinSystem

/// Handing firings and withdrawals to backends, and recording when they are done.
///
/// Batch-capable backends (`BatchDeliveryBackend`) get a whole batch in one call. Every other
/// delivery runs in a per-(key, backend) queue: late firings of a key arrive oldest first, and a
/// withdraw never overtakes the delivery it withdraws. Different pairs never wait on each other,
/// so a hanging backend delays only its own queue.
extension TocsinCenter {
    /// Hands firings claimed ahead to the batch backends they go to (`BatchDeliveryBackend.prepare`).
    func prepare(_ firings: [Firing]) {
        var batches: [String: [Firing]] = [:]
        for f in firings { for name in f.backends { batches[name, default: []].append(f) } }
        for (name, list) in batches { (backends[name] as? any BatchDeliveryBackend)?.prepare(batch: list) }
    }

    /// Hands firings to their backends. `firings` are new (quiet hours route them first:
    /// `routeQuiet`); `released` are firings quiet hours held, each for its one backend, which go
    /// out as they are, each backend's oldest first.
    func dispatch(_ firings: [Firing], released: [Firing] = []) {
        // Nothing firing is left once the backends are shut down; were a claim to come this late
        // anyway, it stays open and the next start reports it.
        guard !backendsDown else { return }
        var targets: [DispatchTarget] = []
        // The targets in the order their batches go out: that of each one's first batched firing.
        var order: [Int] = []
        // Each key has its own queue, and queues run in parallel: the released firings of one
        // backend are chained on top of that, so they arrive oldest first as promised.
        var chains: [String: AsyncStream<Void>] = [:]
        let routed = routeQuiet(firings)
        for (list, chained) in [(released, true), (routed, false)] {
            for f in list {
                for name in f.backends {
                    let t = targets.firstIndex { $0.name == name } ?? targets.endIndex
                    if t == targets.endIndex {
                        targets.append(DispatchTarget(name: name, backend: backends[name]))
                        // One allocation for a burst's batch: grown one firing at a time, it would
                        // be copied ten times over, into fresh pages each time.
                        if targets[t].batchable { targets[t].batch.reserveCapacity(routed.count) }
                    }
                    let batched = targets[t].batch.count
                    assign(f, to: &targets[t], chained: chained, chains: &chains)
                    if batched == 0 && targets[t].batch.count == 1 { order.append(t) }
                }
            }
        }
        for t in order {
            guard let backend = targets[t].backend as? any BatchDeliveryBackend else { continue }
            let name = targets[t].name, list = targets[t].batch
            let handOff = backend.deliver(batch: list)
            var done: [(Firing, DeliveryError?)] = []
            done.reserveCapacity(list.count)
            for (i, f) in list.enumerated() {
                let error = i < handOff.errors.count ? handOff.errors[i] : nil
                if let error, error.code != .permanent {
                    enqueueDelivery(f, to: backend)
                } else {
                    if let error {
                        logger.error("delivery failed, giving up", metadata: ["key": "\(f.key)", "backend": "\(name)", "error": "\(error)"])
                    }
                    done.append((f, error))
                }
            }
            // Recorded once out of the process (`BatchHandOff`): a crash before then reports them
            // as interrupted instead of losing them unreported.
            if let departure = handOff.departure, !done.isEmpty {
                let wait = handOffBegan(done.count, backend: name)
                Task { [done] in
                    let dropped = await departure()
                    self.handOffs[wait] = nil
                    // After the store closed, the next start reports them (`finishedDelivery`).
                    if let dropped, !self.closed {
                        logger.error("deliveries dropped before they left", metadata: ["backend": "\(name)", "count": "\(done.count)", "error": "\(dropped)"])
                    }
                    for (f, error) in done { self.finishedDelivery(f, backend: name, error: error ?? dropped) }
                }
            } else {
                for (f, error) in done { finishedDelivery(f, backend: name, error: error) }
            }
        }
    }

    /// A hand-off waits for as long as the bus does not read (a stopped or wedged dbus-daemon):
    /// no bound would be right, since giving up would record what may still go out, but a
    /// person asking why nothing arrives should find the reason in the log. The wake-up timer
    /// carries the warning's instant (`rearm`), not a timer of its own: a sleep cancelled once
    /// the hand-off is out would still wake the process at its deadline, after every firing.
    private func handOffBegan(_ count: Int, backend name: String) -> Int {
        nextHandOff += 1
        handOffs[nextHandOff] = HandOffWait(since: clock.now(), count: count, backend: name)
        return nextHandOff
    }

    /// The earliest instant a hand-off still inside is to be named in the log.
    var nextHandOffWarning: Instant? {
        handOffs.values.lazy.filter { !$0.warned }.map { $0.since + Self.departureWarning }.min()
    }

    /// Names in the log, once each, the hand-offs inside for `departureWarning` by now.
    func warnSlowHandOffs(now: Instant) {
        for (id, wait) in handOffs where !wait.warned && wait.since + Self.departureWarning <= now {
            handOffs[id]?.warned = true
            logger.warning("deliveries still waiting to leave the process: the bus has not read them; they are recorded once written",
                           metadata: ["backend": "\(wait.backend)", "count": "\(wait.count)", "since": "\(Timestamp.rfc3339UTC(wait.since))"])
        }
    }

    /// How long a hand-off may stay inside before the log says so.
    static let departureWarning = TimeSpan.seconds(10)

    /// A backend a dispatch hands firings to, looked up once per dispatch rather than once per
    /// firing: a burst's thousand firings otherwise cost a dictionary lookup and a protocol
    /// cast each between its instant and the first signal.
    struct DispatchTarget {
        let name: String
        let backend: (any DeliveryBackend)?
        let batchable: Bool
        /// Firings for its `deliver(batch:)`.
        var batch: [Firing] = []

        init(name: String, backend: (any DeliveryBackend)?) {
            self.name = name
            self.backend = backend
            batchable = backend is any BatchDeliveryBackend
        }
    }

    /// One firing for one backend: into that backend's batch, or its queue (a released one
    /// chained behind the one released before it).
    private func assign(_ f: Firing, to target: inout DispatchTarget, chained: Bool, chains: inout [String: AsyncStream<Void>]) {
        inFlight += 1
        let name = target.name
        guard let backend = target.backend else {
            if chained {
                logger.warning("quiet hours ended; a held firing's backend is no longer configured", metadata: ["key": "\(f.key)", "backend": "\(name)"])
            } else {
                logger.error("backend is not configured; skipping", metadata: ["key": "\(f.key)", "backend": "\(name)"])
            }
            finishedDelivery(f, backend: name, error: nil)
            return
        }
        // A released firing never joins a batch: only the per-backend chain keeps released
        // firings oldest first, and a batch would overtake one chained behind its key's queue.
        // No queue at all is the usual case of a burst: no key string is built to look one up.
        if !chained, target.batchable, queues.isEmpty || queues[Self.queueKey(f.key, name)] == nil {
            target.batch.append(f)
        } else if chained {
            let (done, finish) = AsyncStream<Void>.makeStream()
            enqueueDelivery(f, to: backend, after: chains[name], done: finish)
            chains[name] = done
        } else {
            enqueueDelivery(f, to: backend)
        }
    }

    /// Routes claimed firings through quiet hours: a backend that drops one is done with it at
    /// once; a backend that holds one is done with it once the hold is durable, committed with
    /// its confirmation in the next batch (`heldDelivery`): a crash before that leaves the claim
    /// open, and the next start reports it interrupted. What is left goes out as usual.
    func routeQuiet(_ firings: [Firing]) -> [Firing] {
        guard !firings.isEmpty, machine.quiet.isQuiet(at: clock.now()) else { return firings }
        var out: [Firing] = []
        out.reserveCapacity(firings.count)
        for var f in firings {
            let r = machine.quiet.route(f, quiet: true)
            for name in r.drop {
                inFlight += 1
                logger.info("quiet hours: firing dropped", metadata: ["key": "\(f.key)", "backend": "\(name)"])
                finishedDelivery(f, backend: name, error: nil)
            }
            for name in r.hold {
                inFlight += 1
                logger.info("quiet hours: firing held", metadata: ["key": "\(f.key)", "backend": "\(name)"])
                heldDelivery(f, backend: name)
            }
            f.backends = r.deliver
            if !f.backends.isEmpty { out.append(f) }
        }
        return out
    }

    /// Queues one delivery behind the earlier ones of its key and backend (and, for a released
    /// firing, behind `previous`, the one released before it to the same backend; `done` is
    /// finished when this one ends).
    func enqueueDelivery(_ firing: Firing, to backend: any DeliveryBackend, after previous: AsyncStream<Void>? = nil,
                         done: AsyncStream<Void>.Continuation? = nil) {
        let policy = options.delivery
        let clock = self.clock
        let logger = self.logger
        let name = backend.name
        // A delivery queued behind an earlier one of the same key and backend starts when that
        // one ends, maybe after a hanging backend's timeout: a burst does not wait for it.
        let counted = previous == nil && queues[Self.queueKey(firing.key, name)] == nil
        if counted { unstarted += 1 }
        enqueue(key: firing.key, backend: name, cancelPrevious: false) {
            if counted { await self.deliveryStarted() }
            if let previous { for await _ in previous {} }
            let error = await Deliverer.deliver(firing, to: backend, policy: policy, clock: clock, logger: logger,
                                                current: { await self.retryTarget(name) })
            done?.finish()
            await self.finishedDelivery(firing, backend: name, error: error)
        }
    }

    /// Where a retry goes: the backend configured under `name` now, none once a reload removed
    /// it or the stop shut it down (quiet hours refuse a held firing's removed backend alike).
    private func retryTarget(_ name: String) -> (any DeliveryBackend)? {
        backendsDown || down.contains(name) ? nil : backends[name]
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
        // A delivery that outlived shutdown's grace (signals the bus had not read yet) cannot be
        // recorded any more; its claim stays open, and the next start reports it interrupted.
        guard !closed else {
            if endedAfterClose == 0 {
                logger.notice("deliveries ended after the state was closed; the next start reports them as interrupted", metadata: ["backend": "\(backend)"])
            }
            endedAfterClose += 1
            deliveryDone()
            return
        }
        queued.append(.finished(key: f.key, occurrence: f.occurrence, backend: backend))
        startDraining()
    }

    /// Records (in the next batch) that `backend` holds `firing` for quiet hours: the hold is
    /// that backend's end of the claim, committed with it (`NotificationMachine.hold`).
    func heldDelivery(_ f: Firing, backend: String) {
        guard !closed else {
            deliveryDone()
            return
        }
        queued.append(.held(f, backend: backend))
        startDraining()
    }

    /// Every reason abandons the key's deliveries still queued or retrying for the backend: the
    /// withdraw takes down what they would show (a replaced popup, a ring after `max_rings`
    /// too), so one that got through after it would stay up, and the withdraw would wait
    /// behind its backoff.
    func withdraw(key: String, from names: [String], reason: WithdrawReason, snoozedUntil: Instant? = nil) {
        for name in names where !down.contains(name) {
            guard let b = backends[name] else { continue }
            enqueue(key: key, backend: name, cancelPrevious: true) {
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
            // A cancel reaches every task queued before, down the chain: cancelling only the last
            // would leave an earlier delivery retrying, to ring after the acknowledge.
            await withTaskCancellationHandler { await previous?.value } onCancel: { previous?.cancel() }
            await work()
            await self.queueFinished(queueKey, id)
        }
        queues[queueKey] = (id, task)
    }

    /// Whether anything (a withdraw, a delivery) is queued or running for `backend`.
    func hasQueue(for backend: String) -> Bool {
        let suffix = Self.queueKey("", backend)
        return queues.keys.contains { $0.hasSuffix(suffix) }
    }

    /// Returns once everything queued so far for `backend` has run, or at `deadline` on the
    /// center's clock: a delivery retrying with backoff may take minutes, and the stop must not.
    func queuesSettled(for backend: String, until deadline: Instant) async {
        let suffix = Self.queueKey("", backend)
        let tasks = queues.filter { $0.key.hasSuffix(suffix) }.map(\.value.task)
        guard !tasks.isEmpty else { return }
        let clock = self.clock
        var sleeper: Task<Void, Never>?
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let once = ResumeOnce(c)
            Task {
                for t in tasks { await t.value }
                once.resume()
            }
            sleeper = Task {
                try? await clock.sleep(until: deadline)
                once.resume()
            }
        }
        sleeper?.cancel()
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

    /// Like `waitForDeliveries`, but gives up once the center's clock has moved on by `limit`.
    /// The injected clock, as every wait of the engine: under a virtual clock the grace elapses
    /// when the test moves time, and no test waits out a grace in real time. A test that shuts
    /// down with a delivery hung on a virtual clock must move that clock past the grace (the
    /// in-process daemon harness does: `InProcessDaemon.shutdown (Tests/IntegrationTests/Harness)`).
    public func waitForDeliveries(atMost limit: TimeSpan) async {
        if inFlight == 0 { return }
        let id = nextWaiter
        nextWaiter += 1
        let (clock, deadline) = (self.clock, TimeLimit.adding(limit, to: clock.now()) ?? TimeLimit.latest)
        graceDeadline = deadline
        let sleeper = Task {
            // Cancelled: the deliveries finished first and the waiter is already released.
            try? await clock.sleep(until: deadline)
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

/// A continuation several tasks race to resume: the first one does.
private final class ResumeOnce: Sendable {
    private let continuation: Mutex<CheckedContinuation<Void, Never>?>
    init(_ c: CheckedContinuation<Void, Never>) { continuation = Mutex(c) }
    func resume() { continuation.withLock { $0.take() }?.resume() }
}
