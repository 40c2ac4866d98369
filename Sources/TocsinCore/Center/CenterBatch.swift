import Logging
import TocsinModel
import TocsinTime
import TocsinSystem

/// Group commit: how requests, ticks and finished deliveries become batches.
extension TocsinCenter {
    enum Request {
        case schedule(Notification, replace: Bool, client: NotificationMachine.Client?)
        case post(Notification, client: NotificationMachine.Client?)
        case cancel(String)
        case cancelAll
        case acknowledge(String)
        case snooze(String, TimeSpan)
        /// A snooze from another machine: until the instant it was given for there.
        case snoozeUntil(String, Instant)
        /// nil backends: keep the running ones (start-up); otherwise swap them once durable.
        case config([(notification: Notification, fingerprint: String)], backends: [any DeliveryBackend]?)
    }

    enum Reply: Sendable {
        case key(String), bool(Bool), count(Int), instant(Instant), report(ReloadReport)
        var key: String { if case .key(let k) = self { return k }; return "" }
        var bool: Bool { if case .bool(let b) = self { return b }; return false }
        var count: Int { if case .count(let n) = self { return n }; return 0 }
        var instant: Instant { if case .instant(let i) = self { return i }; return Instant(microseconds: 0) }
        var report: ReloadReport { if case .report(let r) = self { return r }; return ReloadReport() }
    }

    enum Work {
        case call(Request, CheckedContinuation<Result<Reply, CenterError>, Never>)
        case tick(WakeReason, CheckedContinuation<Void, Never>)
        case finished(key: String, occurrence: Occurrence, backend: String)
        /// Start-up: close the claims a crash left open (`NotificationMachine.closeInterrupted`).
        case closeInterrupted
    }

    /// Requests waiting for the next batch (tests use it to know a batch has formed).
    var queuedRequests: Int { queued.reduce(0) { n, w in if case .call = w { return n + 1 }; return n } }
    var queuedWork: Int { queued.count }

    func submit(_ request: Request) async throws(CenterError) -> Reply {
        let result = await withCheckedContinuation { (c: CheckedContinuation<Result<Reply, CenterError>, Never>) in
            queued.append(.call(request, c))
            startDraining()
        }
        return try result.get()
    }

    /// One drain at a time: what arrives while it commits waits in `queued` for the next batch.
    func startDraining() {
        guard !committing, loaded else { return }
        committing = true
        Task { await self.drain() }
    }

    private func drain() async {
        while !queued.isEmpty {
            let work = queued
            queued = []
            await runBatch(work)
        }
        committing = false
        rearm()
        releaseSettleWaiters()
    }

    private func runBatch(_ work: [Work]) async {
        let now = clock.now()
        // Time and finished deliveries are facts, not requests: they are not rolled back.
        var facts: [MachineAction] = []
        var tickWaiters: [CheckedContinuation<Void, Never>] = []
        var finished = 0
        for w in work {
            switch w {
            case .tick(let reason, let c):
                tickWaiters.append(c)
                if reason == .clockChanged { logger.info("wall clock changed or system resumed; re-evaluating the schedule") }
            case .finished(let key, let occurrence, let backend):
                finished += 1
                machine.deliveryFinished(key: key, occurrence: occurrence, backend: backend, into: &facts)
            case .closeInterrupted:
                let held = Set(quiet.held.map { "\($0.firing.key)\u{0}\($0.firing.occurrence.number)\u{0}\($0.backend)" })
                machine.closeInterrupted(now: now, lead: options.claimAhead, held: { held.contains("\($0)\u{0}\($1)\u{0}\($2)") }, into: &facts)
            case .call: break
            }
        }
        if started && !tickWaiters.isEmpty {
            machine.advance(to: now, into: &facts)
            _ = machine.claimAhead(until: now + claimLead, limit: Self.aheadLimit - staged.count, into: &facts)
        }

        machine.beginRecording()
        var calls: [(CheckedContinuation<Result<Reply, CenterError>, Never>, Result<Reply, CenterError>, [MachineAction])] = []
        var fresh: [String: Notification] = [:]
        var swapTo: [any DeliveryBackend]?
        for case .call(let request, let c) in work {
            var actions: [MachineAction] = []
            do throws(CenterError) {
                let reply = try apply(request, now: now, into: &actions, fresh: &fresh, swapTo: &swapTo)
                calls.append((c, .success(reply), actions))
            } catch {
                calls.append((c, .failure(error), []))
            }
        }
        // A burst is committed and delivered in slices: the store thread commits the next slice
        // while this one is handed to the backends, so the first signals leave within
        // milliseconds of the due time instead of after the whole burst is durable. The requests'
        // changes come last, in a transaction of their own: they apply on top of what time did,
        // and a fact that cannot be recorded (a full disk) must not fail a request that changed
        // nothing.
        let slices = Self.slices(facts, deliveries: Self.sliceSize)
        // Each transaction carries the history entries of what it commits (`HistoryLog`).
        let log = HistoryLog(retention: options.history)
        var batches: [(ops: [StoreOp], reading: [String])] = slices.map { slice in
            (log.ops(slice, now: now), slice.compactMap { if case .deliver(let d) = $0 { return d.key }; return nil })
        }
        batches.append((log.ops(calls.flatMap { $0.2 }, now: now), []))

        // A window of two: the store thread holds up to two commits at once (it never waits for
        // the loop), and commit k+2 is handed to it only once every delivery of slice k has
        // started. A crash then leaves at most two slices claimed and never handed to a backend
        // (deliveries are at most once: `closeInterrupted`), and the confirmations of what went
        // out ride in the burst's next commits instead of waiting for the whole burst.
        // Confirmations are folded only into a batch without requests: the requests' rollback
        // restores whole entries, which would undo a confirmation applied on top of them (and
        // the row it deleted is gone from the store by then). Requests wait for the next batch
        // during a burst anyway.
        let fold = calls.isEmpty
        var commits: [Int: PendingCommit] = [0: startCommit(batches[0], confirming: false)]
        if batches.count > 1 { commits[1] = startCommit(batches[1], confirming: fold && 1 < slices.count, finished: &finished) }
        for done in batches.indices {
            let result = await (commits.removeValue(forKey: done) ?? .done(.success([:]))).result()
            defer {
                if done + 2 < batches.count {
                    commits[done + 2] = startCommit(batches[done + 2], confirming: fold && done + 2 < slices.count, finished: &finished)
                }
            }
            if done < slices.count {
                var contents: [String: Notification]
                switch result {
                case .success(let c):
                    contents = c
                    if done == 0 {
                        for case .finished(let key, let occurrence, let backend) in work {
                            logger.debug("delivery recorded", metadata: ["key": "\(key)", "backend": "\(backend)", "occurrence": "\(occurrence.number)"])
                        }
                    }
                case .failure(let error):
                    contents = await unrecorded(batches[done].reading, error)
                }
                perform(slices[done], contents: contents)
                if done + 2 < batches.count { await deliveriesStarted() }
            } else {
                switch result {
                case .success:
                    machine.endRecording()
                    if !calls.isEmpty { pruneStaged() }
                    // Before anyone is answered: a caller that hears back finds the wake alarm
                    // already armed for what it changed (`Status` reads the kernel's timer).
                    armWake()
                    if let swapTo { await setBackends(swapTo) }
                    for (c, result, actions) in calls {
                        perform(actions, contents: fresh)
                        c.resume(returning: result)
                    }
                    calls = []
                case .failure(let error):
                    failCalls(&calls, error)
                }
            }
        }
        machine.endRecording()
        for _ in 0..<finished { deliveryDone() }
        for c in tickWaiters { c.resume() }
    }

    /// Commits one transaction of a batch on the store thread. With `confirming`, the deliveries
    /// confirmed since the batch began (`.finished` work waiting in the queue) are recorded in it
    /// too, outside the batch's undo log: they are facts, not requests.
    /// A commit on its way, or none needed (a batch of requests has an empty first slice: no
    /// round trip to the store thread for it).
    enum PendingCommit {
        case done(Result<[String: Notification], StoreError>)
        case running(Task<Result<[String: Notification], StoreError>, Never>)

        func result() async -> Result<[String: Notification], StoreError> {
            switch self {
            case .done(let r): return r
            case .running(let t): return await t.value
            }
        }
    }

    private func startCommit(_ batch: (ops: [StoreOp], reading: [String]), confirming: Bool) -> PendingCommit {
        var unused = 0
        return startCommit(batch, confirming: confirming, finished: &unused)
    }

    private func startCommit(_ batch: (ops: [StoreOp], reading: [String]), confirming: Bool,
                             finished: inout Int) -> PendingCommit {
        var ops = batch.ops
        if confirming {
            var facts: [MachineAction] = []
            queued.removeAll { w in
                guard case .finished(let key, let occurrence, let backend) = w else { return false }
                machine.unrecorded { $0.deliveryFinished(key: key, occurrence: occurrence, backend: backend, into: &facts) }
                finished += 1
                return true
            }
            for case .persist(let op) in facts { ops.append(op) }
        }
        if ops.isEmpty && batch.reading.isEmpty { return .done(.success([:])) }
        let store = self.store
        let reading = batch.reading
        return .running(Task {
            do throws(StoreError) { return .success(try await store.commit(ops, reading: reading)) } catch { return .failure(error) }
        })
    }

    /// Firings per slice of a burst: small enough that the first slice is out in a few
    /// milliseconds, large enough that a slice's fsync is shared by many.
    static let sliceSize = 128

    /// Cuts actions into slices of about `limit` deliveries, only between notifications, so
    /// each notification's actions stay in one slice and in order.
    static func slices(_ actions: [MachineAction], deliveries limit: Int) -> [[MachineAction]] {
        var out: [[MachineAction]] = [[]]
        var count = 0
        var lastKey: String?
        for a in actions {
            let key = a.key
            if count >= limit, key != lastKey {
                out.append([])
                count = 0
            }
            out[out.count - 1].append(a)
            if case .deliver = a { count += 1 }
            lastKey = key
        }
        return out
    }

    /// A failed first commit: the requests of the batch are rolled back and fail.
    private func failCalls(_ calls: inout [(CheckedContinuation<Result<Reply, CenterError>, Never>, Result<Reply, CenterError>, [MachineAction])],
                           _ error: StoreError) {
        machine.rollback()
        logger.error("could not save a batch of changes; its requests fail and nothing of them was changed: \(error.message)")
        for (c, result, _) in calls {
            if case .failure = result { c.resume(returning: result); continue }
            c.resume(returning: .failure(CenterError(.storage, "the change could not be saved, nothing was changed: \(error.message)")))
        }
        calls = []
    }

    /// Claimed firings whose claim could not be recorded are delivered anyway: a restart may
    /// deliver them again, never lose them.
    private func unrecorded(_ keys: [String], _ error: StoreError) async -> [String: Notification] {
        guard !keys.isEmpty else { return [:] }
        logger.error("could not record firings; delivering anyway: \(error.message)")
        return (try? await store.notifications(keys)) ?? [:]
    }

    private func apply(_ request: Request, now: Instant, into out: inout [MachineAction],
                       fresh: inout [String: Notification], swapTo: inout [any DeliveryBackend]?) throws(CenterError) -> Reply {
        switch request {
        case .schedule(let n, let replace, let client):
            return .key(try machine.schedule(n, replace: replace, now: now, maxPending: options.maxPending, client: client, into: &out))
        case .post(let n, let client):
            let key = try machine.post(n, now: now, client: client, into: &out)
            fresh[n.key] = n
            return .key(key)
        case .cancel(let key): return .bool(machine.cancel(key, now: now, into: &out))
        case .cancelAll: return .count(machine.cancelAll(now: now, into: &out))
        case .acknowledge(let key): return .bool(try machine.acknowledge(key, into: &out))
        case .snooze(let key, let d): return .instant(try machine.snooze(key, for: d, now: now, into: &out))
        case .snoozeUntil(let key, let until):
            // Already over there (a late message): due again now, as it is there.
            let d = max(until - now, TimeSpan(microseconds: 1))
            return .instant(try machine.snooze(key, for: d, now: now, into: &out))
        case .config(let list, let newBackends):
            if let newBackends {
                machine.setBackends(newBackends.map { BackendInfo(name: $0.name, ringPolicy: $0.ringPolicy) })
                swapTo = newBackends
            }
            let report = machine.applyConfig(list, now: now, into: &out)
            for key in report.skipped {
                logger.warning("config notification never fires: its time is in the past", metadata: ["key": "\(key)"])
            }
            return .report(report)
        }
    }

    /// Performs what a durable batch decided, in order: withdrawals, events and deliveries.
    private func perform(_ actions: [MachineAction], contents: [String: Notification]) {
        var firings: [Firing] = []
        // A `CancelAll` past the limit signals its first keys one by one and the rest in its
        // `cancelledAll`, which always closes it (`CenterEvent.cancelledSignalLimit`).
        let bulk = actions.contains { if case .emit(.cancelledAll(let n)) = $0 { return n > CenterEvent.cancelledSignalLimit }; return false }
        var cancelledSignals = 0
        for a in actions {
            switch a {
            case .persist: continue
            case .deliver(let d):
                guard let n = contents[d.key] else {
                    logger.error("a claimed firing's notification could not be read; it is not delivered", metadata: ["key": "\(d.key)"])
                    continue
                }
                if d.fired > clock.now() {
                    stage(d, n)
                    continue
                }
                let f = firing(d, n)
                emit(.fired(f, backends: d.targets))
                firings.append(f)
            case .withdraw(let key, let names, let reason):
                // A snooze's end instant travels with its withdraw (the fleet shares it); the
                // machine emits it right after, in the same list.
                var until: Instant?
                if reason == .snoozed {
                    for case .emit(.snoozed(let k, let u)) in actions where k == key { until = u }
                }
                withdraw(key: key, from: names, reason: reason, snoozedUntil: until)
            case .emit(let event):
                switch event {
                case .missed(let key, let due, let count):
                    logger.notice("missed firing(s) skipped", metadata: ["key": "\(key)", "due": "\(Timestamp.rfc3339UTC(due))", "count": "\(count)"])
                case .unanswered(let key, let rings):
                    logger.warning("alarm unanswered", metadata: ["key": "\(key)", "rings": "\(rings)"])
                case .interrupted(let key, let due, _, let names):
                    logger.warning("a firing claimed before the daemon stopped may not have been delivered; it is not repeated (deliveries are at most once)",
                                   metadata: ["key": "\(key)", "due": "\(Timestamp.rfc3339UTC(due))", "backends": "\(names.joined(separator: ","))"])
                case .cancelled where bulk:
                    cancelledSignals += 1
                    if cancelledSignals > CenterEvent.cancelledSignalLimit { continue }
                default: break
                }
                emit(event)
            }
        }
        if !firings.isEmpty { dispatch(firings) }
    }

    func firing(_ d: PlannedDelivery, _ n: Notification) -> Firing {
        var f = Firing(notification: n, occurrence: d.occurrence, due: d.due, fired: d.fired, reason: d.reason)
        f.backends = d.targets
        f.isAlarm = d.isAlarm
        f.ring = d.ring
        return f
    }
}
