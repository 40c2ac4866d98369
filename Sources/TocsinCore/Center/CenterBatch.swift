import Logging
import TocsinModel
import TocsinTime
import TocsinSystem

/// Group commit: how requests, ticks, quiet changes and finished deliveries become batches.
///
/// Every input of the machine (`NotificationMachine`, quiet hours included) goes through here:
/// applied to the machine, committed in the batch's transactions, then performed
/// (`CenterPerform.swift`). One rollback path: a failed commit of requests rolls the machine,
/// quiet hours included, back to where the batch began.
extension TocsinCenter {
    enum Request {
        // Boxed: a batch copies its requests several times on their way through (the queue, the
        // batch, the pattern matches), and a notification is two dozen references to retain and
        // release at each copy; a box is one.
        indirect case schedule(Notification, replace: Bool, client: NotificationMachine.Client?)
        indirect case post(Notification, replace: Bool, client: NotificationMachine.Client?)
        case cancel(String)
        case cancelAll
        case acknowledge(String)
        case snooze(String, TimeSpan)
        /// A snooze from another machine: until the instant it was given for there.
        case snoozeUntil(String, Instant)
        /// nil backends: keep the running ones (start-up); otherwise swap them once durable
        /// (`kept`: those among them that are the running instances). nil quiet: keep the
        /// `[quiet]` settings.
        case config([(notification: Notification, fingerprint: String)], backends: [any DeliveryBackend]?, kept: Set<String>, quiet: QuietRules?)
        /// `tocsin quiet on [--until T]` (nil: until switched off).
        case quietOn(until: Instant?)
        case quietOff
    }

    enum Reply: Sendable {
        case key(String), bool(Bool), count(Int), instant(Instant), report(ReloadReport), quiet(QuietStatus)
        /// A `Schedule`'s key, and whether it changed anything (false: `replace = false` kept
        /// the notification already there, and there is nothing to tell the fleet).
        case scheduled(String, changed: Bool)
        var key: String {
            switch self {
            case .key(let k), .scheduled(let k, _): return k
            default: return ""
            }
        }
        var bool: Bool { if case .bool(let b) = self { return b }; return false }
        var count: Int { if case .count(let n) = self { return n }; return 0 }
        var instant: Instant { if case .instant(let i) = self { return i }; return Instant(microseconds: 0) }
        var report: ReloadReport { if case .report(let r) = self { return r }; return ReloadReport() }
        var quiet: QuietStatus { if case .quiet(let s) = self { return s }; return QuietStatus(active: false, source: "none", until: nil, held: 0) }
    }

    enum Work {
        case call(Request, CheckedContinuation<Result<Reply, CenterError>, Never>)
        case tick(WakeReason, CheckedContinuation<Void, Never>)
        case finished(key: String, occurrence: Occurrence, backend: String)
        /// A backend holds a firing while quiet (`routeQuiet`): the hold and the backend's
        /// confirmation of the claim commit together.
        case held(Firing, backend: String)
        /// Start-up: close the claims a crash left open (`NotificationMachine.closeInterrupted`).
        case closeInterrupted
        /// A read waiting for the requests queued before it (`caughtUp`): resumed once their
        /// batch has committed and answered them.
        case read(CheckedContinuation<Void, Never>)

        var isRead: Bool { if case .read = self { return true }; return false }
    }

    typealias Call = (continuation: CheckedContinuation<Result<Reply, CenterError>, Never>, result: Result<Reply, CenterError>,
                      actions: [MachineAction])

    /// What one batch collected from its work before committing it.
    struct Batch {
        var work: [Work]
        /// Time, finished deliveries and holds are facts, not requests: they are not rolled back.
        var facts: [MachineAction] = []
        var tickWaiters: [CheckedContinuation<Void, Never>] = []
        /// Deliveries whose end this batch records (`deliveryDone` once it is committed).
        var finished = 0
        var calls: [Call] = []
        /// Content of notifications posted in this batch (no store read needed to deliver them).
        var fresh: [String: Notification] = [:]
        var swapTo: (list: [any DeliveryBackend], kept: Set<String>)?
        /// Quiet hours may have changed: `quietNext` is worked out again at the end.
        var quietTouched = false
        /// Holds whose commit failed: delivered instead once the batch is over (`rescueHolds`).
        var failedHolds: [HeldFiring] = []
    }

    /// Requests waiting for the next batch (tests use it to know a batch has formed).
    var queuedRequests: Int { queued.reduce(0) { n, w in if case .call = w { return n + 1 }; return n } }
    var queuedWork: Int { queued.count }

    /// What a request meets once the stop has begun (a reload too).
    public static let stoppingError = CenterError(.stopping, "the daemon is stopping; nothing was changed")

    /// `fromBackend`: an answer a backend relays (a popup's Acknowledge, a fleet message), taken
    /// until the store closes, since the backend may already count it as handled (the mqtt
    /// backend records a fleet message's id, and would ignore the broker's redelivery).
    func submit(_ request: Request, fromBackend: Bool = false) async throws(CenterError) -> Reply {
        // The daemon stops firing before it stops serving the bus: a call in between must hear
        // why, and must not reach backends that are shutting down or a store about to close.
        // Relayed answers are still applied during the stop, but only to a loaded state: before
        // that, nothing would ever run them.
        if closed || (stopping && !(fromBackend && loaded)) { throw Self.stoppingError }
        let result = await withCheckedContinuation { (c: CheckedContinuation<Result<Reply, CenterError>, Never>) in
            queued.append(.call(request, c))
            startDraining()
        }
        return try result.get()
    }

    /// A stop before the state has loaded: the calls and wake-ups waiting for the load are
    /// answered (calls with `Stopping`), since no batch will run them.
    func abandonQueued() {
        let work = queued
        queued = []
        for w in work {
            switch w {
            case .call(_, let c): c.resume(returning: .failure(Self.stoppingError))
            case .tick(_, let c), .read(let c): c.resume()
            case .finished, .held, .closeInterrupted: break
            }
        }
    }

    /// Returns once every request submitted before this call has been applied, committed and
    /// answered. Reads wait here, so that a client that sends a `Schedule` and a `List` without
    /// waiting for the first reply finds the notification in the list: the machine answers reads
    /// at once, while requests wait in `queued` for the batch after the one committing. At once
    /// when nothing is queued or committing, or before the state is loaded (nothing applies then).
    public func caughtUp() async {
        guard loaded, committing || !queued.isEmpty else { return }
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            queued.append(.read(c))
            startDraining()
        }
    }

    /// Whether `key` is pending or ringing, once the state is loaded and what was queued before
    /// is applied (`BackendEventSink.stillShown`). A stop before the load answers true: nothing
    /// is known, and the stop closes what the backends show anyway.
    public func stillShown(_ key: String) async -> Bool {
        if !loaded {
            // Resumed by the first drain after the load, or by the stop.
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in queued.append(.read(c)) }
            if !loaded { return true }
        }
        await caughtUp()
        switch machine.summary(key)?.state {
        case .idle?, .ringing?: return true
        case .snoozed?, .unanswered?, nil: return false
        }
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
            if work.contains(where: { !$0.isRead }) { await runBatch(work) }
            for case .read(let c) in work { c.resume() }
        }
        committing = false
        rearm()
        releaseSettleWaiters()
    }

    private func runBatch(_ work: [Work]) async {
        let now = clock.now()
        // Held firings due by `now` go out before the requests apply: the machine treats a claim
        // whose instant has come as out (a Cancel or replace then keeps its `fired` entry), and a
        // request that reaches a batch after the instant, before the wake-up, must find it so.
        releaseStaged(now: now)
        var batch = Batch(work: work)
        applyFacts(work, now: now, into: &batch)
        machine.beginRecording()
        for case .call(let request, let c) in work {
            var actions: [MachineAction] = []
            do throws(CenterError) {
                let reply = try apply(request, now: now, into: &actions, batch: &batch)
                batch.calls.append((c, .success(reply), actions))
            } catch {
                batch.calls.append((c, .failure(error), []))
            }
        }
        await commitAndPerform(&batch, now: now)
        machine.endRecording()
        rescueHolds(batch.failedHolds)
        if batch.quietTouched { quietNext = machine.quiet.nextChange(after: clock.now()) }
        for _ in 0..<batch.finished { deliveryDone() }
        for c in batch.tickWaiters { c.resume() }
    }

    /// The facts of a batch, in the order they arrived, then what time did: quiet hours first
    /// (a window that begins now holds what falls due with it), then the claims.
    private func applyFacts(_ work: [Work], now: Instant, into batch: inout Batch) {
        for w in work {
            switch w {
            case .tick(let reason, let c):
                batch.tickWaiters.append(c)
                if reason == .clockChanged { logger.info("wall clock changed or system resumed; re-evaluating the schedule") }
            case .finished(let key, let occurrence, let backend):
                batch.finished += 1
                machine.deliveryFinished(key: key, occurrence: occurrence, backend: backend, into: &batch.facts)
            case .held(let f, let backend):
                batch.finished += 1
                machine.hold(f, backend: backend, into: &batch.facts)
            case .closeInterrupted:
                machine.closeInterrupted(now: now, lead: options.claimAhead, into: &batch.facts)
            case .call, .read: break
            }
        }
        if started && !batch.tickWaiters.isEmpty {
            batch.quietTouched = true
            machine.evaluateQuiet(now: now, into: &batch.facts)
            machine.advance(to: now, into: &batch.facts)
            _ = machine.claimAhead(until: now + claimLead, limit: Self.aheadLimit - staged.count, into: &batch.facts)
        }
    }

    /// Commits the batch and performs each part once it is durable.
    ///
    /// A burst is committed and delivered in slices: the store thread commits the next slice
    /// while this one is handed to the backends, so the first signals leave within milliseconds
    /// of the due time instead of after the whole burst is durable. The requests' changes come
    /// last, in a transaction of their own: they apply on top of what time did, and a fact that
    /// cannot be recorded (a full disk) must not fail a request that changed nothing.
    ///
    /// A window of two: the store thread holds up to two commits at once (it never waits for
    /// the loop), and commit k+2 is handed to it only once every delivery of slice k has
    /// started. A crash then leaves at most two slices of this batch claimed and never handed to
    /// a backend, besides the firings claimed ahead and held for their instant (`aheadLimit`)
    /// (deliveries are at most once: `closeInterrupted`), and the confirmations of what went
    /// out ride in the burst's next commits instead of waiting for the whole burst (a batch
    /// backend's, once its hand-off has left the process: `BatchHandOff.departure`).
    /// Confirmations are folded only into a batch without requests: the requests' rollback
    /// restores whole entries, which would undo a confirmation applied on top of them (and
    /// the row it deleted is gone from the store by then). Requests wait for the next batch
    /// during a burst anyway.
    private func commitAndPerform(_ batch: inout Batch, now: Instant) async {
        let slices = Self.slices(batch.facts, deliveries: Self.sliceSize)
        // Each transaction carries the history entries of what it commits (`HistoryLog`).
        let log = HistoryLog(retention: options.history)
        var parts: [(ops: [StoreOp], reading: [String])] = slices.map { slice in
            (log.ops(slice, now: now), slice.compactMap { if case .deliver(let d) = $0 { return d.key }; return nil })
        }
        parts.append((log.ops(withoutSentClaims(batch.calls.flatMap(\.actions), facts: batch.facts), now: now), []))
        let fold = batch.calls.isEmpty
        var commits: [Int: PendingCommit] = [0: startCommit(parts[0], confirming: false, into: &batch)]
        if parts.count > 1 { commits[1] = startCommit(parts[1], confirming: fold && 1 < slices.count, into: &batch) }
        for done in parts.indices {
            let commit = commits.removeValue(forKey: done) ?? PendingCommit(ops: [], task: nil)
            let result = await commit.result()
            if done < slices.count {
                var contents: [String: Notification]
                switch result {
                case .success(let c):
                    contents = c
                    if done == 0 { logRecorded(batch) }
                case .failure(let error):
                    contents = await unrecorded(parts[done].reading, error)
                    for case .hold(let h) in commit.ops { batch.failedHolds.append(h) }
                }
                perform(slices[done], contents: contents, claimedAt: now)
                // A long batch (a thousand claims made and prepared ahead) must not hold back what
                // falls due meanwhile: the loop's next tick waits for this batch to end.
                releaseStaged(now: clock.now())
                if done + 2 < parts.count { await deliveriesStarted() }
            } else {
                await finishCalls(&batch, result)
            }
            // Only now: the confirmations of this slice's deliveries may ride in commit k+2.
            if done + 2 < parts.count {
                commits[done + 2] = startCommit(parts[done + 2], confirming: fold && done + 2 < slices.count, into: &batch)
            }
        }
    }

    private func logRecorded(_ batch: Batch) {
        guard logger.logLevel <= .debug else { return }
        for case .finished(let key, let occurrence, let backend) in batch.work {
            logger.debug("delivery recorded", metadata: ["key": "\(key)", "backend": "\(backend)", "occurrence": "\(occurrence.number)"])
        }
    }

    /// The requests' commit is done: on success they are performed and answered, else rolled
    /// back (quiet hours with the rest) and failed.
    private func finishCalls(_ batch: inout Batch, _ result: Result<[String: Notification], StoreError>) async {
        switch result {
        case .success:
            machine.endRecording()
            if !batch.calls.isEmpty { pruneStaged() }
            // Before anyone is answered: a caller that hears back finds the wake alarm
            // already armed for what it changed (`Status` reads the kernel's timer), and after
            // a quiet change the timer too (for the window's next start or end).
            if batch.quietTouched {
                quietNext = machine.quiet.nextChange(after: clock.now())
                batch.quietTouched = false
                rearm()
            } else {
                armWake()
            }
            if let swapTo = batch.swapTo { await installBackends(swapTo.list, keeping: swapTo.kept) }
            for call in batch.calls {
                perform(call.actions, contents: batch.fresh)
                call.continuation.resume(returning: call.result)
            }
        case .failure(let error):
            failCalls(batch.calls, error)
        }
        batch.calls = []
    }

    /// A commit on its way (nil task: none needed, as for a batch of requests' empty first
    /// slice, which costs no round trip to the store thread), with the ops it carries.
    struct PendingCommit {
        var ops: [StoreOp]
        var task: Task<Result<[String: Notification], StoreError>, Never>?

        func result() async -> Result<[String: Notification], StoreError> {
            await task?.value ?? .success([:])
        }
    }

    /// Commits one transaction of a batch on the store thread. With `confirming`, the deliveries
    /// confirmed and the holds made since the batch began (`.finished` and `.held` work waiting
    /// in the queue) are recorded in it too, outside the batch's undo log: they are facts, not
    /// requests.
    ///
    /// It is queued on the store here, synchronously (`commitEach`): a batch's transactions must
    /// apply in the order the machine made them (a Cancel's `unrecordFired` after the claim's
    /// `fired` entry, a config notification's `markCancelled` after its claim), and a task per
    /// commit could reach the store thread in either order. Waiting for the commit before to
    /// finish instead would leave the store thread idle until a busy executor ran the next (in
    /// alternated runs of `tocsin-bench precision`, a 1,000-burst's last `Fired` 72–89 ms after
    /// its instant, against 61–72 ms queued here).
    private func startCommit(_ part: (ops: [StoreOp], reading: [String]), confirming: Bool,
                             into batch: inout Batch) -> PendingCommit {
        var ops = part.ops
        if confirming {
            var facts: [MachineAction] = []
            var finished = 0
            queued.removeAll { w in
                switch w {
                case .finished(let key, let occurrence, let backend):
                    machine.unrecorded { $0.deliveryFinished(key: key, occurrence: occurrence, backend: backend, into: &facts) }
                case .held(let f, let backend):
                    machine.unrecorded { $0.hold(f, backend: backend, into: &facts) }
                default: return false
                }
                finished += 1
                return true
            }
            batch.finished += finished
            for case .persist(let op) in facts { ops.append(op) }
        }
        if ops.isEmpty && part.reading.isEmpty { return PendingCommit(ops: [], task: nil) }
        let results = store.commitEach([(ops, part.reading)])
        return PendingCommit(ops: ops, task: Task {
            for await result in results { return result }
            return .failure(StoreError(.failed, "the store ended a commit without a result"))
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

    /// A failed commit of requests: the machine (quiet hours included) is rolled back, and the
    /// requests of the batch fail.
    private func failCalls(_ calls: [Call], _ error: StoreError) {
        machine.rollback()
        logger.error("could not save a batch of changes; its requests fail and nothing of them was changed: \(error.message)")
        for call in calls {
            if case .failure = call.result { call.continuation.resume(returning: call.result); continue }
            call.continuation.resume(returning: .failure(CenterError(.storage, "the change could not be saved, nothing was changed: \(error.message)")))
        }
    }

    /// Claimed firings whose claim could not be recorded are delivered anyway: a restart may
    /// deliver them again, never lose them.
    private func unrecorded(_ keys: [String], _ error: StoreError) async -> [String: Notification] {
        logger.error("could not record firings or quiet-hours changes; acting on them anyway: \(error.message)")
        guard !keys.isEmpty else { return [:] }
        return (try? await store.notifications(keys)) ?? [:]
    }

    private func apply(_ request: Request, now: Instant, into out: inout [MachineAction],
                       batch: inout Batch) throws(CenterError) -> Reply {
        switch request {
        case .schedule(let n, let replace, let client):
            let before = out.count
            let key = try machine.schedule(n, replace: replace, now: now, maxPending: options.maxPending, client: client, into: &out)
            return .scheduled(key, changed: out.count > before)
        case .post(let n, let replace, let client):
            let before = out.count
            let key = try machine.post(n, replace: replace, now: now, client: client, into: &out)
            if out.count > before { batch.fresh[n.key] = n }
            return .key(key)
        case .cancel(let key): return .bool(machine.cancel(key, now: now, into: &out))
        case .cancelAll: return .count(machine.cancelAll(now: now, into: &out))
        case .acknowledge(let key): return .bool(try machine.acknowledge(key, into: &out))
        case .snooze(let key, let d): return .instant(try machine.snooze(key, for: d, now: now, into: &out))
        case .snoozeUntil(let key, let until):
            // Already over there (a late message): due again now, as it is there.
            let d = max(until - now, TimeSpan(microseconds: 1))
            return .instant(try machine.snooze(key, for: d, now: now, into: &out))
        case .config(let list, let newBackends, let kept, let quiet):
            if let newBackends {
                machine.setBackends(Self.infos(newBackends))
                machine.endRingingWithoutRinger(into: &out)
                batch.swapTo = (newBackends, kept)
            }
            if let quiet {
                machine.setQuiet(quiet, now: now, into: &out)
                batch.quietTouched = true
            }
            let report = machine.applyConfig(list, now: now, into: &out)
            if !report.skipped.isEmpty {
                // The reason `tocsin check` gives for the same entry, from the same function.
                let skipped = Set(report.skipped)
                for (n, _) in list where skipped.contains(n.key) {
                    guard case .failure(let reason) = n.trigger.firstFiring(after: now) else { continue }
                    logger.warning("config notification never fires, skipped: \(reason.message)", metadata: ["key": "\(n.key)"])
                }
            }
            return .report(report)
        case .quietOn(let until):
            if let until, until <= now {
                throw CenterError(.invalidArguments, "'until' is not in the future", field: "until")
            }
            machine.quietOn(until: until, now: now, into: &out)
            batch.quietTouched = true
            return .quiet(machine.quiet.status(at: now))
        case .quietOff:
            machine.quietOff(now: now, into: &out)
            batch.quietTouched = true
            return .quiet(machine.quiet.status(at: now))
        }
    }

    /// What the machine knows of each backend instance.
    static func infos(_ list: [any DeliveryBackend]) -> [BackendInfo] {
        list.map { BackendInfo(name: $0.name, ringPolicy: $0.ringPolicy, quietMode: $0.quietMode, followsRings: $0.followsRings) }
    }
}
