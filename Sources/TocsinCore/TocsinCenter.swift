import Logging
import TocsinConfig
import TocsinTime

/// Settings of the center that come from `[daemon]` and the command line.
public struct CenterOptions: Sendable {
    public var maxPending: Int = 1_000_000
    public var defaultMissed: MissedPolicy = .fireOnce
    public var defaultMaxLate: TimeSpan?
    /// The zone of notifications that name none.
    public var defaultZone: TimeZoneRules
    public var zones: ZoneInfoDirectory
    public var delivery = DeliveryPolicy()
    public var defaultSnooze: TimeSpan = .minutes(5)
    public var limits = SpecLimits()

    public init(defaultZone: TimeZoneRules, zones: ZoneInfoDirectory = ZoneInfoDirectory()) {
        self.defaultZone = defaultZone
        self.zones = zones
    }
}

/// What a config reload did.
public struct ReloadReport: Hashable, Sendable {
    public var added: [String] = []
    public var changed: [String] = []
    public var removed: [String] = []
    public var unchanged: [String] = []
    /// Entries whose trigger never fires again (an `at` in the past): reported, not delivered.
    public var skipped: [String] = []
}

/// The keyed notification center: the I/O shell around `Scheduler`.
///
/// Every mutation is committed to SQLite before the call returns, then the scheduler's state is
/// changed and the wake-up timer re-armed. Deliveries run in their own tasks; their completion is
/// recorded, so a restart neither loses a claimed firing nor repeats a confirmed one.
public actor TocsinCenter {
    public let options: CenterOptions
    private let clock: any TocsinClock
    private let timer: (any WakeupTimer)?
    private let store: StateStore
    private let zones: ZoneCache
    private var logger: Logger
    private var scheduler = Scheduler()
    private var backends: [String: any DeliveryBackend] = [:]
    private var backendOrder: [String] = []
    private var pending: [String: PendingDelivery] = [:]
    private var subscribers: [Int: AsyncStream<CenterEvent>.Continuation] = [:]
    private var nextSubscriber = 0
    private var started = false
    private var keyCounter: UInt64 = 0
    private var inFlight = 0
    private var idleWaiters: [Int: CheckedContinuation<Void, Never>] = [:]
    private var nextWaiter = 0

    /// Opens the state in `stateDirectory`; throws when it cannot be opened or is damaged.
    public init(options: CenterOptions, stateDirectory: String, clock: any TocsinClock,
                timer: (any WakeupTimer)?, logger: Logger) throws(CenterError) {
        self.options = options
        self.clock = clock
        self.timer = timer
        self.logger = logger
        self.zones = ZoneCache(directory: options.zones)
        do {
            store = try StateStore(directory: stateDirectory)
        } catch {
            throw CenterError(.storage, error.message)
        }
    }

    // MARK: Lifecycle

    /// Installs the backends, loads the persisted state, re-delivers what a crash interrupted, and
    /// handles what fell due while the daemon was down (by each notification's missed policy).
    public func start(backends list: [any DeliveryBackend]) async throws(CenterError) {
        await setBackends(list)
        let loaded: StateStore.Loaded
        do { loaded = try store.loadAll(zones: zones) } catch { throw CenterError(.storage, error.message) }
        for p in loaded.problems { logger.error("\(p)") }
        let origin = Instant(microseconds: Int64.min / 2)
        for (var entry, pend) in loaded.entries {
            entry.ring = ringPolicy(for: entry.notification)
            if !entry.cancelled {
                entry.next = entry.notification.trigger.next(after: entry.last?.instant ?? origin, previous: entry.last)
            }
            scheduler.put(entry)
            if let pend { pending[entry.notification.key] = pend }
        }
        started = true
        for (key, pend) in pending {
            guard let e = scheduler[key] else { continue }
            let firing = Firing(notification: e.notification, occurrence: pend.occurrence, due: pend.due,
                                fired: clock.now(), reason: .recovered)
            logger.notice("re-delivering a firing interrupted by a restart", metadata: ["key": "\(key)"])
            dispatch(firing, to: pend.remaining)
        }
        tick(.due)
    }

    /// Replaces the backend instances (config reload); firings in flight keep their old instances.
    public func setBackends(_ list: [any DeliveryBackend]) async {
        let old = backends
        backends = [:]
        backendOrder = []
        for b in list {
            backends[b.name] = b
            backendOrder.append(b.name)
        }
        let sink = CenterSink(center: self)
        for b in list { await b.start(events: sink) }
        for (name, b) in old where backends[name] == nil { await b.shutdown() }
    }

    public var backendNames: [String] { backendOrder }

    /// Waits on the wake-up timer and fires what is due, until the timer closes.
    public func run() async {
        guard let timer else { return }
        rearm()
        for await reason in timer.wakeups {
            tick(reason)
        }
    }

    /// Stops firing, waits up to `grace` for deliveries in flight (so a claimed firing is not cut
    /// off half-way), then shuts the backends down.
    public func shutdown(grace: Duration = .seconds(2)) async {
        timer?.close()
        started = false
        if inFlight > 0 {
            await waitForDeliveries(atMost: grace)
            if inFlight > 0 { logger.warning("shutting down with \(inFlight) deliveries still running") }
        }
        for name in backendOrder { await backends[name]?.shutdown() }
        for c in subscribers.values { c.finish() }
        subscribers = [:]
    }

    // MARK: Events

    public func events() -> AsyncStream<CenterEvent> {
        let (stream, cont) = AsyncStream.makeStream(of: CenterEvent.self, bufferingPolicy: .bufferingNewest(10_000))
        let id = nextSubscriber
        nextSubscriber += 1
        subscribers[id] = cont
        cont.onTermination = { [weak self] _ in
            guard let self else { return }
            Task { await self.unsubscribe(id) }
        }
        return stream
    }

    private func unsubscribe(_ id: Int) { subscribers[id] = nil }

    private func emit(_ e: CenterEvent) {
        for c in subscribers.values { c.yield(e) }
    }

    // MARK: Operations

    /// Adds a notification, or replaces the one with the same key (unless `spec.replace` is false,
    /// which keeps the existing one and returns its key).
    @discardableResult
    public func schedule(_ spec: NotificationSpec) throws(CenterError) -> String {
        let now = clock.now()
        if let key = spec.key, let existing = scheduler[key], existing.isActive, !spec.replace {
            return existing.notification.key
        }
        let n = try resolve(spec, source: .runtime, now: now)
        guard let next = n.trigger.next(after: now, previous: nil) else {
            throw neverFires(spec, n)
        }
        let replaced = scheduler[n.key]
        if replaced == nil || !(replaced?.isActive ?? false) {
            guard activeCount < options.maxPending else {
                throw CenterError(.quotaExceeded, "\(activeCount) notifications are pending, the limit ([daemon] max_pending) is \(options.maxPending); cancel some first")
            }
        }
        let entry = Scheduler.Entry(notification: n, next: next)
        try durably { () throws(StoreError) in try store.save(entry, pending: nil) }
        pending[n.key] = nil
        scheduler.put(entry)
        if let replaced, replaced.isActive { withdrawAll(replaced.notification, reason: .replaced) }
        rearm()
        return n.key
    }

    /// Delivers now, without a trigger; the key is tracked so the alarm can be acknowledged.
    @discardableResult
    public func postNow(_ spec: NotificationSpec) throws(CenterError) -> String {
        let now = clock.now()
        var s = spec
        s.trigger = .at(.instant(now))
        var n = try resolve(s, source: .runtime, now: now)
        n.trigger = .at(now)
        let occ = Occurrence(instant: now, number: 1)
        let replaced = scheduler[n.key]
        var entry = Scheduler.Entry(notification: n, last: occ, next: nil)
        let firing = Firing(notification: n, occurrence: occ, due: now, fired: now, reason: .postNow)
        let targets = targetNames(n)
        entry.ring = ringPolicy(for: n)
        if entry.ring != nil { entry.alert = .ringing(since: now, rings: 1) }
        let pend = PendingDelivery(occurrence: occ, due: now, remaining: targets)
        try durably { () throws(StoreError) in try store.save(entry, pending: targets.isEmpty ? nil : pend) }
        // No withdraw of a replaced one here: the delivery below replaces its popup by key, and a
        // withdraw racing with it could close the new popup.
        _ = replaced
        scheduler.put(entry)
        if !targets.isEmpty { pending[n.key] = pend }
        emit(.fired(firing, backends: targets))
        dispatch(firing, to: targets)
        cleanUpIfDone(n.key)
        rearm()
        return n.key
    }

    /// Cancels one notification. A config-defined one stays cancelled across reloads and restarts
    /// for as long as its definition in the file is unchanged; editing it there brings it back.
    @discardableResult
    public func cancel(_ key: String) throws(CenterError) -> Bool {
        guard let e = scheduler[key], e.isActive else { return false }
        try durably { () throws(StoreError) in
            if e.notification.source == .config { try store.markCancelled(key: key) } else { try store.delete(key: key) }
        }
        if e.notification.source == .config {
            scheduler.update(key) { $0.cancelled = true; $0.alert = .idle }
        } else {
            scheduler.remove(key)
        }
        pending[key] = nil
        withdrawAll(e.notification, reason: .cancelled)
        emit(.cancelled(key: key))
        rearm()
        return true
    }

    /// Cancels every pending notification; returns how many.
    @discardableResult
    public func cancelAll() throws(CenterError) -> Int {
        let active = scheduler.entries.values.filter(\.isActive)
        try durably { () throws(StoreError) in
            for e in active {
                if e.notification.source == .config { try store.markCancelled(key: e.notification.key) }
                else { try store.delete(key: e.notification.key) }
            }
        }
        for e in active {
            let key = e.notification.key
            if e.notification.source == .config { scheduler.update(key) { $0.cancelled = true; $0.alert = .idle } }
            else { scheduler.remove(key) }
            pending[key] = nil
            withdrawAll(e.notification, reason: .cancelled)
            emit(.cancelled(key: key))
        }
        rearm()
        return active.count
    }

    /// Pending notifications, soonest first (ringing ones first of all).
    public func list() -> [PendingNotification] {
        let active = scheduler.entries.values.filter(\.isActive)
        let items = active.map { PendingNotification(notification: $0.notification, nextFire: $0.wakeAt, state: $0.alert) }
        return items.sorted { a, b in
            switch (a.nextFire, b.nextFire) {
            case (nil, nil): return a.notification.key < b.notification.key
            case (nil, _): return true
            case (_, nil): return false
            case (let x?, let y?): return x != y ? x < y : a.notification.key < b.notification.key
            }
        }
    }

    public func lookup(_ key: String) -> PendingNotification? {
        guard let e = scheduler[key], e.isActive else { return nil }
        return PendingNotification(notification: e.notification, nextFire: e.wakeAt, state: e.alert)
    }

    public var activeCount: Int { scheduler.activeCount }

    /// Which of `keys` are no longer pending (fired and finished, cancelled, replaced by a
    /// config entry...): one actor hop for a whole batch, for the gateway's per-client quota.
    public func inactiveKeys(among keys: some Sequence<String>) -> Set<String> {
        var out = Set<String>()
        for k in keys where !(scheduler[k]?.isActive ?? false) { out.insert(k) }
        return out
    }

    /// Stops a ringing or snoozed notification. False when there was nothing to acknowledge.
    @discardableResult
    public func acknowledge(_ key: String) throws(CenterError) -> Bool {
        guard let e = scheduler[key], !e.cancelled else {
            throw CenterError(.notFound, "no notification with key '\(key)'", field: "key")
        }
        if case .idle = e.alert { return false }
        try durably { () throws(StoreError) in try store.saveAlert(key: key, .idle) }
        scheduler.update(key) { $0.alert = .idle }
        withdrawAll(e.notification, reason: .acknowledged)
        emit(.acknowledged(key: key))
        cleanUpIfDone(key)
        rearm()
        return true
    }

    /// Silences a notification now and delivers its last firing again after `duration`.
    @discardableResult
    public func snooze(_ key: String, for duration: TimeSpan?) throws(CenterError) -> Instant {
        guard let e = scheduler[key], !e.cancelled else {
            throw CenterError(.notFound, "no notification with key '\(key)'", field: "key")
        }
        guard e.last != nil else {
            throw CenterError(.invalidArguments, "notification '\(key)' has not fired yet; there is nothing to snooze", field: "key")
        }
        let d = duration ?? options.defaultSnooze
        guard d.microseconds > 0 else {
            throw CenterError(.invalidArguments, "snooze duration must be positive", field: "duration")
        }
        let until = clock.now() + d
        try durably { () throws(StoreError) in try store.saveAlert(key: key, .snoozed(until: until)) }
        scheduler.update(key) { $0.alert = .snoozed(until: until) }
        withdrawAll(e.notification, reason: .snoozed)
        emit(.snoozed(key: key, until: until))
        rearm()
        return until
    }

    /// Replaces every config-defined notification in one transaction (cancel-before-schedule).
    /// Unchanged definitions keep their state and do not re-fire; runtime ones are untouched.
    /// Nothing changes when any entry is invalid or the transaction cannot be committed.
    @discardableResult
    public func applyConfig(_ specs: [NotificationSpec]) throws(CenterError) -> ReloadReport {
        let plan = try planConfig(specs, backendNames: backendOrder)
        try durably { () throws(StoreError) in try commit(plan) }
        apply(plan)
        return plan.report
    }

    /// A config reload: the new backends and notifications together. The notifications are
    /// checked against the new backends and made durable first, so a reload that fails (an
    /// invalid entry, a full disk) leaves the running backends and schedule exactly as they were.
    @discardableResult
    public func reload(backends list: [any DeliveryBackend], specs: [NotificationSpec]) async throws(CenterError) -> ReloadReport {
        let plan = try planConfig(specs, backendNames: list.map(\.name))
        try durably { () throws(StoreError) in try commit(plan) }
        await setBackends(list)
        apply(plan)
        return plan.report
    }

    /// What a config means for the schedule, computed without changing anything.
    private struct ConfigPlan {
        var report = ReloadReport()
        var removed: [Scheduler.Entry] = []
        var writes: [Scheduler.Entry] = []
        var replacedOld: [Notification] = []
    }

    private func planConfig(_ specs: [NotificationSpec], backendNames: [String]) throws(CenterError) -> ConfigPlan {
        let now = clock.now()
        var plan = ConfigPlan()
        var resolved: [(Notification, Occurrence?)] = []
        var wanted = Set<String>()
        for spec in specs {
            var n = try resolve(spec, source: .config, now: now, backendNames: backendNames)
            n.fingerprint = Self.fingerprint(spec)
            wanted.insert(n.key)
            resolved.append((n, n.trigger.next(after: now, previous: nil)))
        }
        plan.removed = scheduler.entries.values.filter { $0.notification.source == .config && !wanted.contains($0.notification.key) }
        plan.report.removed = plan.removed.map(\.notification.key)
        for (n, next) in resolved {
            if let old = scheduler[n.key], old.notification.source == .config, old.notification.fingerprint == n.fingerprint {
                plan.report.unchanged.append(n.key)
                continue
            }
            if let old = scheduler[n.key] {
                plan.report.changed.append(n.key)
                if old.isActive { plan.replacedOld.append(old.notification) }
            } else {
                plan.report.added.append(n.key)
            }
            if next == nil { plan.report.skipped.append(n.key) }
            plan.writes.append(Scheduler.Entry(notification: n, next: next))
        }
        return plan
    }

    private func commit(_ plan: ConfigPlan) throws(StoreError) {
        for e in plan.removed { try store.delete(key: e.notification.key) }
        for e in plan.writes { try store.save(e, pending: nil) }
    }

    private func apply(_ plan: ConfigPlan) {
        for e in plan.removed {
            scheduler.remove(e.notification.key)
            pending[e.notification.key] = nil
            if e.isActive {
                withdrawAll(e.notification, reason: .cancelled)
                emit(.cancelled(key: e.notification.key))
            }
        }
        for n in plan.replacedOld { withdrawAll(n, reason: .replaced) }
        for e in plan.writes {
            pending[e.notification.key] = nil
            scheduler.put(e)
        }
        for key in plan.report.skipped {
            logger.warning("config notification never fires: its time is in the past", metadata: ["key": "\(key)"])
        }
        rearm()
    }

    // MARK: Firing

    /// Fires everything due now. Called by the loop on each wake-up; tests call it after moving a virtual clock.
    public func tick(_ reason: WakeReason = .due) {
        guard started else { return }
        let now = clock.now()
        if reason == .clockChanged {
            logger.info("wall clock changed or system resumed; re-evaluating the schedule")
        }
        let actions = scheduler.advance(to: now)
        guard !actions.isEmpty else { rearm(); return }
        var firings: [(Firing, [String])] = []
        var touched: [String] = []
        for a in actions {
            switch a {
            case .deliver(let f):
                let targets = targetNames(f.notification)
                firings.append((f, targets))
                if let ring = ringPolicy(for: f.notification) {
                    // A new firing (or the end of a snooze) starts ringing afresh.
                    scheduler.update(f.key) { e in
                        e.ring = ring
                        e.alert = .ringing(since: now, rings: 1)
                    }
                }
                if !targets.isEmpty {
                    pending[f.key] = PendingDelivery(occurrence: f.occurrence, due: f.due, remaining: targets)
                }
            case .ring(let f):
                let ringers = targetNames(f.notification).filter { backends[$0]?.ringPolicy != nil }
                firings.append((f, ringers))
            case .unanswered(let key, let rings):
                logger.warning("alarm unanswered", metadata: ["key": "\(key)", "rings": "\(rings)"])
                emit(.unanswered(key: key, rings: rings))
                if let e = scheduler[key] { withdrawAll(e.notification, reason: .unanswered) }
            case .missed(let key, let due, let count):
                logger.notice("missed firing(s) skipped", metadata: ["key": "\(key)", "due": "\(Timestamp.rfc3339UTC(due))", "count": "\(count)"])
                emit(.missed(key: key, due: due, count: count))
            case .progress(let key):
                touched.append(key)
            }
        }
        do {
            try store.transaction { () throws(StoreError) in
                for key in touched {
                    guard let e = scheduler[key] else { continue }
                    try store.saveProgress(e)
                    try store.savePending(key: key, pending[key])
                }
            }
        } catch {
            // The claims are not durable: deliver anyway (a restart may deliver again, never lose it).
            logger.error("could not record firings; delivering anyway: \(error.message)")
        }
        for (f, targets) in firings {
            emit(.fired(f, backends: targets))
            dispatch(f, to: targets)
        }
        for key in touched { cleanUpIfDone(key) }
        rearm()
    }

    /// The instant of the next wake-up (for tests and `next`-style previews).
    public func nextDeadline() -> Instant? { scheduler.nextDeadline() }

    private func dispatch(_ original: Firing, to targets: [String]) {
        let isAlarm = ringPolicy(for: original.notification) != nil
        let firing = { var f = original; f.backends = targets; f.isAlarm = isAlarm; return f }()
        for name in targets {
            guard let backend = backends[name] else {
                logger.error("backend is not configured; skipping", metadata: ["key": "\(firing.key)", "backend": "\(name)"])
                deliveryFinished(key: firing.key, occurrence: firing.occurrence, backend: name, error: nil)
                continue
            }
            inFlight += 1
            let policy = options.delivery
            let clock = self.clock
            let logger = self.logger
            enqueue(key: firing.key, backend: name, cancelPrevious: false) {
                let error = await Deliverer.deliver(firing, to: backend, policy: policy, clock: clock, logger: logger)
                await self.deliveryFinished(key: firing.key, occurrence: firing.occurrence, backend: name, error: error)
                await self.deliveryDone()
            }
        }
    }

    /// Work for one (key, backend) pair runs in order: late firings of a key arrive oldest first,
    /// and a withdraw never overtakes the delivery it withdraws. Different pairs never wait on
    /// each other, so a hanging backend delays only its own queue.
    private var queues: [String: (id: Int, task: Task<Void, Never>)] = [:]
    private var queueCounter = 0

    /// `cancelPrevious` abandons what is queued before (a delivery still retrying is pointless
    /// once the key is acknowledged or cancelled), so the withdraw runs at once.
    private func enqueue(key: String, backend: String, cancelPrevious: Bool, _ work: @escaping @Sendable () async -> Void) {
        let queueKey = key + "\u{0}" + backend
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

    /// Returns once every delivery dispatched so far has finished (delivered or given up).
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
        Task {
            try? await Task.sleep(for: limit)
            await self.releaseWaiter(id)
        }
        await withCheckedContinuation { idleWaiters[id] = $0 }
    }

    private func releaseWaiter(_ id: Int) {
        idleWaiters.removeValue(forKey: id)?.resume()
    }

    private func deliveryDone() {
        inFlight -= 1
        if inFlight == 0 {
            let w = idleWaiters
            idleWaiters = [:]
            for c in w.values { c.resume() }
        }
    }

    private func deliveryFinished(key: String, occurrence: Occurrence, backend: String, error: DeliveryError?) {
        if let error { emit(.deliveryFailed(key: key, backend: backend, message: error.message)) }
        guard var p = pending[key], p.occurrence == occurrence else { return }
        p.remaining.removeAll { $0 == backend }
        pending[key] = p.remaining.isEmpty ? nil : p
        do {
            try store.savePending(key: key, pending[key])
            logger.debug("delivery recorded", metadata: ["key": "\(key)", "backend": "\(backend)",
                                                         "occurrence": "\(occurrence.number)"])
        } catch {
            logger.error("could not record a delivery: \(error.message)")
        }
        cleanUpIfDone(key)
    }

    /// A runtime notification with nothing left to fire, ring or deliver is forgotten, except for
    /// its `user_info`, kept for the most recent ones so a popup clicked later still hands it back.
    private func cleanUpIfDone(_ key: String) {
        guard let e = scheduler[key], e.notification.source == .runtime, !e.isActive, pending[key] == nil else { return }
        do {
            try store.delete(key: key)
            scheduler.remove(key)
            rememberUserInfo(key, e.notification.userInfo)
        } catch {
            logger.error("could not remove a finished notification: \(error.message)")
        }
    }

    fileprivate func handle(_ event: BackendEvent) {
        do {
            switch event {
            case .acknowledge(let key): try acknowledge(key)
            case .snooze(let key, let d): try snooze(key, for: d)
            case .actionInvoked(let key, let action):
                let info = scheduler[key]?.notification.userInfo ?? recentUserInfo[key] ?? [:]
                emit(.actionInvoked(key: key, action: action, userInfo: info))
            }
        } catch {
            logger.warning("backend event could not be applied: \(error.message)")
        }
    }

    // MARK: Helpers

    /// Bounded: at most `recentLimit` finished notifications are remembered, oldest dropped first.
    private var recentUserInfo: [String: [String: String]] = [:]
    private var recentOrder: [String] = []
    private let recentLimit = 1024

    private func rememberUserInfo(_ key: String, _ info: [String: String]) {
        guard !info.isEmpty else { return }
        if recentUserInfo.updateValue(info, forKey: key) == nil { recentOrder.append(key) }
        if recentOrder.count > recentLimit {
            let drop = recentOrder.count - recentLimit
            for k in recentOrder.prefix(drop) { recentUserInfo[k] = nil }
            recentOrder.removeFirst(drop)
        }
    }

    /// A notification without `backends` goes to every backend except alarms: ringing is opt-in,
    /// so adding an alarm to a config never makes ordinary reminders ring.
    private func targetNames(_ n: Notification) -> [String] {
        n.backends ?? defaultTargets
    }

    public var defaultTargets: [String] { backendOrder.filter { backends[$0]?.ringPolicy == nil } }

    /// The ring policy of the first alarm backend the notification goes to, if any.
    private func ringPolicy(for n: Notification) -> RingPolicy? {
        for name in targetNames(n) { if let r = backends[name]?.ringPolicy { return r } }
        return nil
    }

    private func withdrawAll(_ n: Notification, reason: WithdrawReason) {
        let key = n.key
        for name in targetNames(n) {
            guard let b = backends[name] else { continue }
            enqueue(key: key, backend: name, cancelPrevious: reason != .replaced) { await b.withdraw(key: key, reason: reason) }
        }
    }

    private func rearm() { timer?.arm(at: scheduler.nextDeadline()) }

    private func durably(_ body: () throws(StoreError) -> Void) throws(CenterError) {
        do { try store.transaction(body) } catch {
            throw CenterError(.storage, "the change could not be saved, nothing was changed: \(error.message)")
        }
    }

    private func neverFires(_ spec: NotificationSpec, _ n: Notification) -> CenterError {
        switch spec.trigger {
        case .at, .after:
            return CenterError(.invalidTrigger, "'at' is in the past; a past time is never delivered", field: "at")
        case .remindBefore:
            return CenterError(.invalidTrigger, "every reminder of 'remind_before' is in the past", field: "remind_before")
        case .every:
            return CenterError(.invalidTrigger, "'every' never fires: 'until' is before the first firing or 'count' is used up", field: "every")
        case .onCalendar(let c):
            return CenterError(.invalidTrigger, "'on_calendar' expression '\(c.normalized)' never elapses again", field: "on_calendar")
        }
    }

    private func generatedKey(now: Instant) -> String {
        keyCounter &+= 1
        return "n-\(String(UInt64(bitPattern: now.microseconds), radix: 36))-\(keyCounter)"
    }

    /// Turns a request into a notification: zone, absolute instants, backends checked.
    func resolve(_ spec: NotificationSpec, source: NotificationSource, now: Instant,
                 backendNames: [String]? = nil) throws(CenterError) -> Notification {
        let known = backendNames ?? backendOrder
        let zone: TimeZoneRules
        if let name = spec.timezone {
            do { zone = try zones.rules(name) } catch {
                throw CenterError(.invalidTrigger, "unknown time zone '\(name)'", field: "timezone")
            }
        } else {
            zone = options.defaultZone
        }
        func instant(_ v: TimeValue) -> Instant {
            switch v {
            case .instant(let i): return i
            case .local(let c): return Timestamp.instant(of: c, in: zone)
            case .relative(let d): return now + d
            }
        }
        let trigger: Trigger
        switch spec.trigger {
        case .at(let v): trigger = .at(instant(v))
        case .after(let d):
            guard d.microseconds > 0 else { throw CenterError(.invalidTrigger, "'after' must be positive", field: "after") }
            trigger = .at(now + d)
        case .every(let p, let count, let starting, let until):
            guard p.microseconds > 0 else { throw CenterError(.invalidTrigger, "'every' must be positive; an interval of 0 is refused", field: "every") }
            trigger = .every(period: p, starting: starting.map(instant) ?? now + p, count: count, until: until.map(instant))
        case .onCalendar(let c):
            var z = zone
            if let own = c.timeZoneName {
                do { z = try zones.rules(own) } catch {
                    throw CenterError(.invalidTrigger, "unknown time zone '\(own)' in 'on_calendar'", field: "on_calendar")
                }
            }
            trigger = .calendar(c, zone: z)
        case .remindBefore(let event, let offsets):
            trigger = .remindBefore(event: instant(event), offsets: offsets)
        }
        if let names = spec.backends {
            for b in names where !known.contains(b) {
                var message = "unknown backend '\(b)'"
                if let s = Suggestion.closest(to: b, among: known) { message += "; did you mean '\(s)'?" }
                message += " (configured: \(known.joined(separator: ", ")))"
                throw CenterError(.unknownBackend, message, field: "backends")
            }
        }
        return Notification(
            key: spec.key ?? generatedKey(now: now), title: spec.title, body: spec.body, trigger: trigger,
            backends: spec.backends, urgency: spec.urgency, icon: spec.icon, category: spec.category, sound: spec.sound,
            actions: spec.actions, userInfo: spec.userInfo, missed: spec.missed ?? options.defaultMissed,
            maxLate: spec.maxLate ?? options.defaultMaxLate, timezone: zone.identifier, source: source,
            fingerprint: source == .config ? Self.fingerprint(spec) : "")
    }

    /// A stable digest of a definition as written (positions excluded), so moving an entry in the
    /// file or reformatting it does not count as a change.
    static func fingerprint(_ s: NotificationSpec) -> String {
        var parts: [String] = [s.key ?? "", s.title, s.body, "\(s.trigger)", s.backends.map { $0.joined(separator: "\u{1}") } ?? "*",
                               s.urgency.rawValue, s.icon ?? "", s.category ?? "", s.sound ?? "",
                               s.actions.map { "\($0.id)=\($0.label)" }.joined(separator: "\u{1}"),
                               s.userInfo.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: "\u{1}"),
                               s.missed?.rawValue ?? "", s.maxLate.map { "\($0.microseconds)" } ?? "", s.timezone ?? ""]
        parts = parts.map { "\($0.utf8.count):\($0)" }
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        for b in parts.joined().utf8 {
            h ^= UInt64(b)
            h = h &* 0x0000_0100_0000_01b3
        }
        return String(h, radix: 16)
    }
}

/// Hands backend events to the center without making backends depend on it.
private struct CenterSink: BackendEventSink {
    let center: TocsinCenter
    func send(_ event: BackendEvent) {
        Task { await center.handle(event) }
    }
}
