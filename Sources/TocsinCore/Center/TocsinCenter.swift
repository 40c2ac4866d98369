public import Logging
import TocsinModel
public import TocsinTime
import Synchronization
public import TocsinSystem

/// The keyed notification center: the I/O shell that executes what `NotificationMachine` decides.
///
/// Requests are applied to the machine as they arrive and collected into a batch; one store
/// transaction commits the batch (group commit), and only then are its callers answered and its
/// withdrawals, deliveries and events performed. Requests that arrive while a commit is in flight
/// wait for the next batch. A commit that fails rolls the machine back to the state before the
/// batch and fails exactly the calls in it.
public actor TocsinCenter {
    public let options: CenterOptions
    let clock: any TocsinClock
    private let timer: (any WakeupTimer)?
    /// Armed for the machine's `nextWake` whenever the ordinary timer is re-armed (`rearm`).
    let wakeAlarm: (any WakeAlarm)?
    let store: any NotificationStore
    let resolver: SpecResolver
    var logger: Logger
    var machine = NotificationMachine()
    var backends: [String: any DeliveryBackend] = [:]
    /// The `[fleet]` backend's name and hook, if the config has one: see `CenterFleet.swift`.
    var fleetBackend: (name: String, link: any FleetLink)?
    /// The hook while its backend is up: a fleet message relayed as that backend shuts down is
    /// still applied, but a backend already shut down is not asked to share anything.
    var fleet: (any FleetLink)? { fleetBackend.flatMap { down.contains($0.name) ? nil : $0.link } }
    /// The one sink every backend relays to, for the center's whole life: shutdown waits on it, so
    /// it must be one queue, not one per reload.
    private var sink: CenterSink?
    var started = false
    /// Shutdown has begun: requests are refused (the bus is still served while firing stops).
    var stopping = false
    /// Shutdown is shutting the backends down: nothing is delivered any more.
    var backendsDown = false
    /// The backends shutdown has shut down (or is shutting down): no withdraw reaches them.
    var down: Set<String> = []
    /// Shutdown closed the store: reads are refused too, and deliveries that end later are left
    /// for the next start to report (`finishedDelivery`).
    var closed = false
    /// Deliveries that ended after `closed`, counted for one log line.
    var endedAfterClose = 0
    /// Each subscriber's stream, and whether it wants `fired`/`deliveryFailed` (a burst yields
    /// one per firing, and a subscriber that drops them would still be woken for each).
    private var subscribers: [Int: (continuation: AsyncStream<CenterEvent>.Continuation, firings: Bool)] = [:]
    private var nextSubscriber = 0
    /// Backend events waiting to be tried again, by key: the stamp of the one that may still
    /// apply (`RetryGuard`). Only keys with a retry pending, so it does not grow with the schedule.
    var retryStamp: UInt64 = 0
    var pendingRetries: [String: UInt64] = [:]
    var queued: [Work] = []
    var committing = false
    /// Requests wait until the persisted state is loaded (the API may be served before that).
    var loaded = false
    var inFlight = 0
    var idleWaiters: [Int: CheckedContinuation<Void, Never>] = [:]
    /// Until when a bounded wait for deliveries (shutdown's grace) waits, on the center's clock:
    /// a test on a virtual clock moves the clock there, and only there.
    public internal(set) var graceDeadline: Instant?
    var nextWaiter = 0
    /// Per (key, backend) delivery queues: see `CenterDelivery.swift`.
    var queues: [String: (id: Int, task: Task<Void, Never>)] = [:]
    /// Batch hand-offs still inside the process (`BatchHandOff.departure`), for the warning.
    var handOffs: [Int: HandOffWait] = [:]
    var nextHandOff = 0
    var queueCounter = 0
    /// Deliveries dispatched and not yet handed to their backend, and who waits for none to be left.
    var unstarted = 0
    var startWaiters: [CheckedContinuation<Void, Never>] = []
    /// Firings claimed ahead of their instant, soonest first, held until it: see `CenterAhead.swift`.
    var staged: [(delivery: PlannedDelivery, notification: Notification)] = []
    /// When quiet hours may next change by themselves (`machine.quiet`), kept so `rearm` does
    /// no calendar search.
    var quietNext: Instant?
    /// Who waits for the batches queued now to be committed (`settle`).
    var settleWaiters: [CheckedContinuation<Void, Never>] = []

    /// Opens the SQLite state in `stateDirectory`; throws when it cannot be opened or is damaged.
    public init(options: CenterOptions, stateDirectory: String, clock: any TocsinClock,
                timer: (any WakeupTimer)?, wakeAlarm: (any WakeAlarm)? = nil, logger: Logger) throws(CenterError) {
        let store: SQLiteStore
        do { store = try SQLiteStore(directory: stateDirectory, zones: options.zones) } catch {
            throw CenterError(.storage, error.message)
        }
        self.init(options: options, store: store, clock: clock, timer: timer, wakeAlarm: wakeAlarm, logger: logger)
    }

    public init(options: CenterOptions, store: any NotificationStore, clock: any TocsinClock,
                timer: (any WakeupTimer)?, wakeAlarm: (any WakeAlarm)? = nil, logger: Logger) {
        self.options = options
        self.clock = clock
        self.timer = timer
        self.wakeAlarm = wakeAlarm
        self.logger = logger
        self.store = store
        machine.minPeriod = options.limits.minPeriod
        resolver = SpecResolver(zones: ZoneCache(directory: options.zones), defaultZone: options.defaultZone,
                                defaultMissed: options.defaultMissed, defaultMaxLate: options.defaultMaxLate)
    }

    // MARK: Lifecycle

    /// Installs the backends, loads the persisted state, closes and reports what a crash
    /// interrupted (deliveries are at most once), and handles what fell due while the daemon was
    /// down (by each notification's missed policy).
    public func start(backends list: [any DeliveryBackend]) async throws(CenterError) {
        await setBackends(list)
        // A stop may come at any wait of the start (library callers; the daemon stops only once
        // started): from then on `start` gives up, and the stop has answered what waited for it.
        if stopping { throw Self.stoppingError }
        // The store decodes the next chunk on its thread while this one is put back.
        let now = clock.now()
        machine.beginRestore(expecting: 0)
        // A large state takes seconds to load: say so once a second, so a slow start-up reads as work, not a hang.
        var progress = LoadProgress()
        for await chunk in store.load(chunkSize: 16_384) {
            if stopping { break }
            switch chunk {
            case .failure(let error):
                machine.endRestore()
                // A stop during the load closes the store under it: that is the stop, not a fault.
                throw stopping ? Self.stoppingError : CenterError(.storage, error.message)
            case .success(let part):
                if let total = part.totalRows { machine.beginRestore(expecting: total); progress.total = total }
                for p in part.problems { logger.error("\(p)") }
                machine.restore(contentsOf: part.rows, now: now)
                if let line = progress.advance(by: part.rows.count) { logger.info("\(line)") }
            }
        }
        machine.endRestore()
        if stopping { throw Self.stoppingError }
        if let line = progress.finished() { logger.info("\(line)") }
        await restoreQuiet()
        if stopping { throw Self.stoppingError }
        quietNext = machine.quiet.nextChange(after: now)
        started = true
        loaded = true
        if !queued.isEmpty { startDraining() }
        // What a crash left claimed is closed, not delivered again, in the first batch: before
        // the first tick's claims and quiet hours' evaluation (quiet that ended while the daemon
        // was down releases what it held), in the same transaction (`closeInterrupted`).
        if !machine.inDelivery.isEmpty {
            queued.append(.closeInterrupted)
            startDraining()
        }
        await tick(.due)
    }

    /// Replaces the backend instances (start-up; tests); firings in flight keep their old instances.
    public func setBackends(_ list: [any DeliveryBackend]) async {
        machine.setBackends(Self.infos(list))
        await installBackends(list)
    }

    /// Starts `list` and shuts down the instances it replaces, but for the running instances
    /// `kept` names. The machine already knows them (a reload's batch told it, in its transaction).
    func installBackends(_ list: [any DeliveryBackend], keeping kept: Set<String> = []) async {
        let old = backends
        backends = [:]
        for b in list { backends[b.name] = b }
        fleetBackend = list.lazy.compactMap { b in b.fleetLink.map { (b.name, $0) } }.first
        let sink = self.sink ?? CenterSink(center: self)
        self.sink = sink
        for b in list where !kept.contains(b.name) {
            // A stop that came during an earlier backend's start: this one is not started, and
            // one whose start the stop overlapped (the stop may have shut it down first) is shut
            // down again once started.
            guard !backendsDown else { break }
            await b.start(events: sink)
            if backendsDown { await b.shutdown() }
        }
        for (name, b) in old {
            guard let now = backends[name] else { await b.shutdown(); continue }
            if kept.contains(name) { continue }
            // Replaced (not the same instance installed again) by one that cannot reach what it started.
            if b.shutsDownWhenReplaced, (now as AnyObject) !== (b as AnyObject) { await b.shutdown() }
        }
    }

    public var backendNames: [String] { machine.backendNames }

    /// Each configured backend's health, in config order (for `Status`).
    public func backendHealth() async -> [(name: String, health: BackendHealth)] {
        var out: [(name: String, health: BackendHealth)] = []
        for name in machine.backendNames {
            out.append((name, await backends[name]?.health() ?? .unavailable("not started")))
        }
        return out
    }
    public var defaultTargets: [String] { machine.defaultTargets }

    /// Waits on the wake-up timer and fires what is due, until the timer closes.
    public func run() async {
        guard let timer else { return }
        rearm()
        for await reason in timer.wakeups { await tick(reason) }
    }

    /// Stops the wake-up timer, so `run` returns; callable from any context.
    public nonisolated func stopTimer() { timer?.close() }

    /// How long shutdown waits for deliveries in flight by default, on the center's clock.
    public static let shutdownGrace = TimeSpan.seconds(2)

    /// Stops firing and refuses requests, waits up to `grace` on the center's clock for
    /// deliveries in flight (so a claimed firing is not cut off half-way), shuts the backends
    /// down, and closes the store once what is queued is committed.
    public func shutdown(grace: TimeSpan = TocsinCenter.shutdownGrace) async {
        timer?.close()
        started = false
        stopping = true
        // Before the state has loaded, calls wait for it, and `start` gives up once it sees the
        // stop: they are answered now, or they would wait for ever.
        if !loaded { abandonQueued() }
        // A batch already under way ends first, however long: its claims are made, so its
        // deliveries must reach backends that are still up (a commit failing on a closed store
        // would deliver them unrecorded, and the next start again), and a reload in it must have
        // installed its backends before they are shut down below. What it claimed ahead is
        // staged by then, and goes out with the rest claimed before.
        await drained()
        releaseStagedEarly()
        if inFlight > 0 {
            await waitForDeliveries(atMost: grace)
            if inFlight > 0 { logger.warning("shutting down with \(inFlight) deliveries still running") }
        }
        // Nothing is delivered from here on. Answers relayed meanwhile still change the state
        // (`submit(_:fromBackend:)`); their withdraws reach only backends still up.
        backendsDown = true
        // What a backend passed on before it shut down (an mqtt fleet message received just
        // before its thread was joined, a popup's answer) is applied before the store closes: the
        // backend has counted it as handled (the broker has its PUBACK, the redelivery is
        // ignored), so refusing it here would lose it. The fleet backend goes last, once what
        // the others relayed has reached it: a popup's Acknowledge in the stop's last moments
        // must still reach the other machines, through its durable outbox.
        let fleetName = fleetBackend?.name
        for name in machine.backendNames where name != fleetName { await shutDown(name) }
        await sink?.settled()
        if let fleetName {
            // What it is told meanwhile (an answer applied late, a fleet message) may queue more
            // for it: again until nothing is left, for at most another `grace`.
            let deadline = TimeLimit.adding(grace, to: clock.now()) ?? TimeLimit.latest
            repeat {
                await queuesSettled(for: fleetName, until: deadline)
                await sink?.settled()
            } while hasQueue(for: fleetName) && clock.now() < deadline
            await shutDown(fleetName)
            await sink?.settled()
        }
        for s in subscribers.values { s.continuation.finish() }
        subscribers = [:]
        // Confirmations queued until now are committed before the store goes; later ones are
        // left for the next start (`finishedDelivery`).
        closed = true
        await drained()
        await store.close()
    }

    private func shutDown(_ name: String) async {
        down.insert(name)
        await backends[name]?.shutdown()
    }

    /// Returns once no batch runs and none is queued (nothing drains before the state is loaded).
    private func drained() async {
        if loaded && (committing || !queued.isEmpty) {
            await withCheckedContinuation { settleWaiters.append($0) }
        }
    }

    // MARK: Events

    /// `firings`: false leaves out `fired` and `deliveryFailed`.
    public func events(firings: Bool = true) -> AsyncStream<CenterEvent> {
        // Unbounded: an event is never dropped. What one call can emit is bounded by the schedule
        // (`max_pending`) and by `cancelledSignalLimit`, and the subscribers are the daemon's own
        // forwarders, which drain the stream as soon as the batch that emitted it yields.
        let (stream, cont) = AsyncStream.makeStream(of: CenterEvent.self, bufferingPolicy: .unbounded)
        let id = nextSubscriber
        nextSubscriber += 1
        subscribers[id] = (cont, firings)
        cont.onTermination = { [weak self] _ in
            guard let self else { return }
            Task { await self.unsubscribe(id) }
        }
        return stream
    }

    private func unsubscribe(_ id: Int) { subscribers[id] = nil }

    /// Whether any subscriber takes `fired` events: the daemon's own do not, and a burst then
    /// builds none.
    var announcesFirings: Bool { subscribers.values.contains { $0.firings } }

    func emit(_ e: CenterEvent) {
        let isFiring: Bool
        switch e {
        case .fired, .deliveryFailed: isFiring = true
        default: isFiring = false
        }
        for s in subscribers.values where s.firings || !isFiring { s.continuation.yield(e) }
    }

    /// Fires everything due now. Called by the loop on each wake-up; tests call it after moving a
    /// virtual clock. Returns once the firings are claimed and handed to their backends.
    public func tick(_ reason: WakeReason = .due) async {
        // Nothing fires once the stop has begun: what falls due is left to the next start.
        if stopping { return }
        warnSlowHandOffs(now: clock.now())
        // Before the batch: a firing claimed ahead goes out at its instant, not after a commit
        // that happens to be running.
        releaseStaged(now: clock.now())
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            queued.append(.tick(reason, c))
            startDraining()
        }
    }

    func rearm() {
        let deadlines = [machine.nextClaim(lead: claimLead), quietNext, staged.first?.delivery.fired,
                         nextHandOffWarning].compactMap { $0 }
        timer?.arm(at: deadlines.min())
        armWake()
    }

    /// The wake alarm for the earliest wake notification; an unchanged instant costs no syscall.
    /// The wake alarm goes off `wakeMargin` before the firing: resuming takes seconds, and a
    /// firing handled more than `lateTolerance` after its instant takes the missed path. Once that
    /// early instant has passed (the machine is awake, or the alarm woke it), the alarm is armed
    /// for the firing itself, so a machine that sleeps again before then still wakes for it.
    func armWake() {
        guard let at = machine.nextWake()?.instant else {
            wakeAlarm?.arm(at: nil)
            return
        }
        let early = at - Self.wakeMargin
        wakeAlarm?.arm(at: early > clock.now() ? early : at)
    }

    static let wakeMargin = TimeSpan.seconds(30)

    /// How long after a backend event could not be saved it is tried again: doubling to a minute,
    /// about a quarter of an hour in all. A message from the fleet is taken off the broker before
    /// the center acts, and the broker does not send it again, so a full disk here would
    /// otherwise lose an acknowledgement for good, and the alarm rang on until `max_rings`.
    static let eventRetries: [TimeSpan] = [1, 2, 4, 8, 16, 32].map { TimeSpan.seconds($0) }
        + Array(repeating: TimeSpan.seconds(60), count: 14)

    /// What a retry must find unchanged to still apply: no later backend event for the key (the
    /// stamp pending for it), and the notification as it was (a client's snooze or cancel
    /// meanwhile). Otherwise the retry is older news: a retried acknowledge would undo a later
    /// snooze, a retried fleet schedule would bring back what a later cancel removed.
    struct RetryGuard: Equatable {
        var stamp: UInt64
        var shape: Shape?

        /// What a retry may not see changed: whether it exists, its state (a ring of the same
        /// alarm going on meanwhile is not a change, `rings` counts on, nor is ringing on to
        /// unanswered), and its last firing (a new occurrence is news an old answer must not
        /// silence).
        struct Shape: Equatable {
            var state: String
            var snoozedUntil: Instant?
            var lastFire: Instant?

            init(_ s: NotificationMachine.Summary) {
                switch s.state {
                case .idle: state = "idle"
                case .ringing, .unanswered: state = "ringing"
                case .snoozed(let until): state = "snoozed"; snoozedUntil = until
                }
                lastFire = s.lastFire
            }
        }
    }

    fileprivate func handle(_ event: BackendEvent) async {
        // A newer event for a key supersedes a retry still waiting for it, whatever becomes of it.
        if let key = event.key, pendingRetries[key] != nil { pendingRetries[key] = nextRetryStamp() }
        await apply(event, attempt: 0)
    }

    private func nextRetryStamp() -> UInt64 {
        retryStamp &+= 1
        return retryStamp
    }

    private func apply(_ event: BackendEvent, attempt: Int) async {
        do throws(CenterError) {
            switch event {
            case .acknowledge(let key): _ = try await submit(.acknowledge(key), fromBackend: true)
            case .snooze(let key, let d): _ = try await submit(.snooze(key, d ?? options.defaultSnooze), fromBackend: true)
            case .snoozeUntil(let key, let until): try await snoozeFromFleet(key, until: until)
            case .fleetSchedule(let spec): try await scheduleFromFleet(spec)
            case .fleetCancel(let key):
                // As `cancel` does for a client: the fleet link decides whether to pass it on
                // (the mqtt backend does not echo a cancel it received). One received as the fleet
                // backend shuts down is applied, and that backend is not called again (`fleet`).
                if try await submit(.cancel(key), fromBackend: true).bool, let fleet { await fleet.cancelled(key: key) }
            case .actionInvoked(let key, let action):
                let info = (try? await store.userInfo(key)) ?? nil
                emit(.actionInvoked(key: key, action: action, userInfo: info ?? [:]))
            }
            if attempt > 0 {
                logger.info("backend event applied after \(attempt + 1) tries", metadata: ["event": "\(event.summary)"])
            }
        } catch {
            // Only a failure to save is worth another try; anything else (an unknown key, a
            // notification no longer ringing) would be refused again.
            guard error.code == .storage, !stopping, let key = event.key else {
                logger.warning("backend event could not be applied: \(error.message)", metadata: ["event": "\(event.summary)"])
                return
            }
            guard attempt < Self.eventRetries.count else {
                logger.warning("backend event could not be saved in \(attempt + 1) tries, given up: \(error.message)",
                               metadata: ["event": "\(event.summary)"])
                return
            }
            let delay = Self.eventRetries[attempt]
            // Once per event, not per try: on a full disk the log may be on the same disk.
            if attempt == 0 {
                logger.warning("backend event could not be saved, trying again for up to a quarter of an hour: \(error.message)",
                               metadata: ["event": "\(event.summary)"])
            }
            let expected = RetryGuard(stamp: nextRetryStamp(), shape: machine.summary(key).map(RetryGuard.Shape.init))
            pendingRetries[key] = expected.stamp
            let clock = self.clock
            Task { [weak self] in
                try? await clock.sleep(until: clock.now() + delay)
                await self?.retry(event, key: key, attempt: attempt + 1, expected: expected)
            }
        }
    }

    private func retry(_ event: BackendEvent, key: String, attempt: Int, expected: RetryGuard) async {
        let current = pendingRetries[key]
        if current == expected.stamp { pendingRetries[key] = nil }
        guard !stopping else { return }
        guard RetryGuard(stamp: current ?? 0, shape: machine.summary(key).map(RetryGuard.Shape.init)) == expected else {
            logger.info("backend event not tried again: the notification changed since", metadata: ["event": "\(event.summary)"])
            return
        }
        // A failure again sets a new stamp for the next try.
        await apply(event, attempt: attempt)
    }
}

extension BackendEvent {
    /// The notification it is about.
    fileprivate var key: String? {
        switch self {
        case .acknowledge(let key), .snooze(let key, _), .actionInvoked(let key, _), .snoozeUntil(let key, _),
             .fleetCancel(let key): key
        case .fleetSchedule(let spec): spec.key
        }
    }

    /// Its kind and key, for the log (a fleet schedule carries a whole spec).
    fileprivate var summary: String {
        switch self {
        case .acknowledge(let key): "acknowledge \(key)"
        case .snooze(let key, _): "snooze \(key)"
        case .actionInvoked(let key, let action): "action \(action) of \(key)"
        case .snoozeUntil(let key, _): "fleet snooze \(key)"
        case .fleetSchedule(let spec): "fleet schedule \(spec.key ?? "")"
        case .fleetCancel(let key): "fleet cancel \(key)"
        }
    }
}

/// Hands backend events to the center without making backends depend on it, in the order they
/// were sent: a fleet notification scheduled and then cancelled on another machine (both
/// redelivered at once after a reconnect) must not be applied the other way round.
private final class CenterSink: BackendEventSink, Sendable {
    /// Weak: the center holds its sink, and a center dropped without a stop (a test's crash)
    /// must still go, with its store's thread.
    weak let center: TocsinCenter?
    private let last = Mutex<Task<Void, Never>?>(nil)
    init(center: TocsinCenter) { self.center = center }
    func send(_ event: BackendEvent) {
        last.withLock { previous in
            let before = previous
            previous = Task { [center] in
                await before?.value
                await center?.handle(event)
            }
        }
    }

    func stillShown(key: String) async -> Bool {
        guard let center else { return true }
        return await center.stillShown(key)
    }

    /// Returns once every event sent so far has been handled: each task awaits the one before
    /// it, so the last one's end is everyone's.
    func settled() async {
        while let task = last.withLock({ $0 }) {
            await task.value
            if last.withLock({ $0 == task }) { return }
        }
    }
}

/// A batch hand-off still inside the process: since when, and whether the log has named it.
struct HandOffWait {
    var since: Instant
    var count: Int
    var backend: String
    var warned = false
}
