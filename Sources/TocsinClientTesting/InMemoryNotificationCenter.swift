public import FoundationEssentials
public import TocsinClient
import TocsinTime

/// A notification center that lives in memory, on a clock the test moves: an app's tests run
/// without a bus or a daemon, and see every call the app made.
///
/// It follows the daemon's rules where an app could tell the difference (validation, the errors
/// and their fields, when things fire, which events come in which order), computing firings with
/// the daemon's own trigger code; the shared conformance suite holds both to that.
public actor InMemoryNotificationCenter: TocsinNotifying {
    /// One call the app made, with its arguments, in order.
    public enum Call: Sendable, Hashable {
        /// `add`, with the request as given.
        case add(NotificationRequest)
        /// `post`, with the key as given (nil when made up) and whether it replaces a pending one.
        case post(NotificationContent, key: String?, replacesExisting: Bool)
        /// `pending()`.
        case pending
        /// `remove(keys:)`.
        case remove(keys: [String])
        /// `removeAll()`.
        case removeAll
        /// `acknowledge(key:)`.
        case acknowledge(key: String)
        /// `snooze(key:for:)`.
        case snooze(key: String, duration: Duration?)
        /// `history(_:)`.
        case history(HistoryQuery)
        /// `status()`.
        case status
        /// `quietOn(_:)`.
        case quietOn(QuietDuration)
        /// `quietOff()`.
        case quietOff
        /// `quietState()`.
        case quietState
        /// `events(_:)`.
        case events(EventScope)
    }

    /// A backend's `type` in the daemon's config: what decides whether its deliveries are
    /// `fired` events (`dbusSignal` only) and whether it holds them in quiet hours (`libnotify`
    /// and `sound`; the others deliver). A `sound` backend makes a firing an alarm, which passes
    /// quiet hours; the double rings nothing.
    public enum BackendType: String, Sendable, Hashable, CaseIterable {
        /// The config's spelling.
        case dbusSignal = "dbus-signal", log, exec, libnotify, sound, dbusService = "dbus-service", mqtt

        var holdsDuringQuiet: Bool { self == .libnotify || self == .sound }
    }

    struct Entry {
        var request: NotificationRequest
        var trigger: Trigger
        var next: Occurrence?
        var last: Occurrence?
        var snoozedUntil: Instant?
    }

    /// The virtual now; moves only with `advance`.
    public internal(set) var now: Date
    /// Every call so far, oldest first.
    public internal(set) var calls: [Call] = []
    /// The backends a request may name; nil accepts any name, as a daemon configured with all.
    public let backends: Set<String>?
    /// Each configured backend's type; a name not listed (any name, when `backends` is nil) is
    /// a `dbus-signal` backend.
    public let backendTypes: [String: BackendType]
    /// The daemon's `[daemon] min_period`: a trigger that could fire twice within less is refused.
    public let minPeriod: Duration
    let zone: TimeZoneRules
    var entries: [String: Entry] = [:]
    var keysHere: Set<String> = []
    var log: [HistoryEntry] = []
    var streams: [Int: (EventScope, AsyncStream<NotificationEvent>.Continuation)] = [:]
    var nextStream = 0
    var quiet = QuietState(active: false, source: .none)
    /// The keys quiet hours hold a firing of, for some backend: a later firing of the same key
    /// replaces the one held.
    var heldKeys: Set<String> = []
    var failures: [TocsinClientError] = []

    /// `timeZone`: the zone calendar expressions without one run in (an IANA name; the daemon's
    /// `[daemon] timezone`).
    /// `backends`: names only, each a `dbus-signal` backend (every firing routed to one is a
    /// `fired` event, and none is held in quiet hours); nil accepts any name.
    public init(now: Date = Date(timeIntervalSince1970: 1_800_000_000), timeZone: String = "UTC", backends: Set<String>? = nil,
                minPeriod: Duration = .seconds(1)) {
        self.now = now
        self.backends = backends
        backendTypes = Dictionary(uniqueKeysWithValues: (backends ?? []).map { ($0, .dbusSignal) })
        self.minPeriod = minPeriod
        zone = (try? ZoneInfoDirectory().rules(named: timeZone)) ?? .utc
    }

    /// `backends`: the daemon's `[backend.NAME]` tables, name to type, so that `fired` events
    /// and quiet hours follow each backend as the daemon's do.
    public init(now: Date = Date(timeIntervalSince1970: 1_800_000_000), timeZone: String = "UTC", backends: [String: BackendType],
                minPeriod: Duration = .seconds(1)) {
        self.now = now
        self.backends = Set(backends.keys)
        backendTypes = backends
        self.minPeriod = minPeriod
        zone = (try? ZoneInfoDirectory().rules(named: timeZone)) ?? .utc
    }

    // MARK: Steering the test

    /// The next call throws `error` instead of doing anything (one per call, in order): how an
    /// app's error handling is tested.
    public func failNextCall(with error: TocsinClientError) { failures.append(error) }

    /// Moves the clock forward, firing everything that falls due on the way, in time order.
    public func advance(by duration: Duration) {
        advance(to: now.addingTimeInterval(Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18))
    }

    /// Moves the clock to `date` (never back), firing on the way. A firing already overdue goes
    /// out at the current time, late: `fired` times never run backwards.
    public func advance(to date: Date) {
        let target = Instant(microseconds: Self.us(date))
        while let (key, at) = nextDue(upTo: target) {
            let due = Date(timeIntervalSince1970: Double(at.microseconds) / 1e6)
            if due > now { now = due }
            fireDue(key)
        }
        if date > now { now = date }
        expireQuiet()
    }

    /// Makes `key`'s next firing (or the end of its snooze) happen now, as if it had fallen due:
    /// the app's reaction to a firing is tested without computing when it would be.
    public func fire(key: String) throws(TocsinClientError) {
        guard entries[key] != nil else { throw Self.notFound(key) }
        fireDue(key)
    }

    /// What a person clicking an action button does: the app's `actionInvoked` event, with the
    /// notification's user info. The key must be known (pending or delivered before).
    public func invokeAction(key: String, action: String) throws(TocsinClientError) {
        guard let content = entries[key]?.request.content ?? lastContent[key] else { throw Self.notFound(key) }
        emit(.actionInvoked(key: key, action: action, userInfo: content.userInfo))
    }

    /// The daemon leaving the bus and coming back: what an app's stream reports when it restarts.
    public func restartDaemon() {
        emit(.daemonVanished)
        emit(.daemonAppeared)
    }

    var lastContent: [String: NotificationContent] = [:]

    // MARK: TocsinNotifying

    /// Same checks and errors as the daemon; `after` counts from the virtual now.
    public func add(_ request: NotificationRequest) async throws(TocsinClientError) {
        try record(.add(request))
        try request.validate()
        try checkFloor(request.trigger)
        try checkBackends(request.content)
        if !request.replacesExisting, entries[request.key] != nil { return }
        let trigger = try resolve(request.trigger)
        guard let first = trigger.next(after: instant(now), previous: nil) else { throw neverFires(trigger) }
        keysHere.insert(request.key)
        dropHeld(request.key)
        entries[request.key] = Entry(request: request, trigger: trigger, next: first)
    }

    /// Delivers at once on the virtual clock; a pending notification with the key is replaced,
    /// without a `cancelled` event, as the daemon replaces it. With `replacesExisting` false a
    /// pending one is kept instead and nothing is delivered; the key is returned all the same,
    /// as the daemon answers it (after the same checks).
    public func post(_ content: NotificationContent, key: String?, replacesExisting: Bool) async throws(TocsinClientError) -> String {
        try record(.post(content, key: key, replacesExisting: replacesExisting))
        let key = key ?? "post-\(UInt64.random(in: 0...UInt64.max))"
        try NotificationRequest(key: key, content: content, trigger: .after(.seconds(1))).validate()
        try checkBackends(content)
        if !replacesExisting, entries[key] != nil { return key }
        keysHere.insert(key)
        entries[key] = nil
        dropHeld(key)
        deliver(key, content, due: instant(now), occurrence: Occurrence(instant: instant(now), number: 1))
        return key
    }

    /// In key order, as the daemon's pages are.
    public func pending() async throws(TocsinClientError) -> [PendingNotification] {
        try record(.pending)
        return entries.keys.sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }.map { key in
            let e = entries[key]!
            let next = e.snoozedUntil ?? e.next?.instant
            return PendingNotification(
                key: key, title: e.request.content.title, body: e.request.content.body, nextFire: next.map(date),
                lastFire: e.last.map { date($0.instant) }, state: e.snoozedUntil != nil ? .snoozed : .scheduled,
                triggerDescription: e.trigger.summary, urgency: e.request.content.urgency,
                backends: e.request.content.backends ?? backends.map { $0.sorted() } ?? [], userInfo: e.request.content.userInfo,
                snoozedUntil: e.snoozedUntil.map(date), wakesDevice: e.request.wakesDevice)
        }
    }

    /// Each removed key gets its `cancelled` event.
    public func remove(keys: [String]) async throws(TocsinClientError) -> [String] {
        try record(.remove(keys: keys))
        for key in keys { try NotificationRequest.validate(key: key) }
        var removed: [String] = []
        for key in keys where entries[key] != nil {
            cancel(key)
            removed.append(key)
        }
        return removed
    }

    /// Everything, as the daemon does it: a `cancelled` event for each of the first 1,000 keys,
    /// then `cancelledAll` with the count.
    public func removeAll() async throws(TocsinClientError) -> Int {
        try record(.removeAll)
        let keys = entries.keys.sorted()
        for (i, key) in keys.enumerated() { cancel(key, signalled: i < 1_000) }
        emit(.cancelledAll(count: keys.count))
        return keys.count
    }

    /// True only for a snoozed notification: the double has no alarm backend to ring.
    public func acknowledge(key: String) async throws(TocsinClientError) -> Bool {
        try record(.acknowledge(key: key))
        try NotificationRequest.validate(key: key)
        guard let e = entries[key] else {
            // As the daemon: a key its history knows (done, cancelled) has nothing to acknowledge.
            if log.contains(where: { $0.key == key }) { return false }
            throw Self.notFound(key)
        }
        guard e.snoozedUntil != nil else { return false }
        entries[key]?.snoozedUntil = nil
        emit(.acknowledged(key: key))
        append(.acknowledged, key)
        if e.next == nil { entries[key] = nil }
        return true
    }

    /// Only after a firing, as the daemon; the default is its 5 minutes.
    public func snooze(key: String, for duration: Duration?) async throws(TocsinClientError) -> Date {
        try record(.snooze(key: key, duration: duration))
        try NotificationRequest.validate(key: key, snoozeDuration: duration)
        if let duration {
            // As the daemon, before it looks the key up: a snooze delivers again when it ends, so
            // it may be no shorter than a trigger's period.
            let span = TimeSpan(microseconds: Self.us(duration)), floor = TimeSpan(microseconds: Self.us(minPeriod))
            if span < floor {
                throw Self.invalidArgs("duration", "argument 'duration': \(span) is below [daemon] min_period (\(floor)); a notification may fire at most once per min_period")
            }
        }
        guard let e = entries[key] else { throw gone(key) }
        guard e.last != nil else {
            throw TocsinClientError(.invalidRequest, "argument 'key': notification '\(key)' has not fired yet; there is nothing to snooze",
                                    field: "key", name: "org.freedesktop.DBus.Error.InvalidArgs")
        }
        let d = duration ?? .seconds(300)
        let until = instant(now) + TimeSpan(microseconds: Self.us(d))
        entries[key]?.snoozedUntil = until
        emit(.snoozed(key: key, until: date(until)))
        append(.snoozed, key, until: date(until))
        return date(until)
    }

    /// What happened in the double, newest first.
    public func history(_ query: HistoryQuery) async throws(TocsinClientError) -> [HistoryEntry] {
        try record(.history(query))
        try query.validate()
        let matching = log.reversed().filter { e in
            (query.key.map { $0 == e.key } ?? true) && (query.since.map { e.time >= $0 } ?? true)
        }
        return Array(matching.prefix(query.limit))
    }

    /// `version` is `in-memory`; each configured backend is `ok`. It has no wake-alarm timer:
    /// `wake` is `off (in-memory)`, and `wakeNext` is computed as the daemon does, never armed.
    public func status() async throws(TocsinClientError) -> DaemonStatus {
        try record(.status)
        let due = entries.compactMap { k, e in (e.snoozedUntil ?? e.next?.instant).map { (k, $0, e.request.wakesDevice) } }
        let next = due.min { $0.1 < $1.1 }
        let wake = due.filter(\.2).min { $0.1 < $1.1 }
        return DaemonStatus(version: "in-memory", pending: entries.count,
                            backends: Dictionary(uniqueKeysWithValues: (backends ?? []).map { ($0, "ok") }),
                            nextKey: next?.0, nextFire: next.map { date($0.1) },
                            wake: "off (in-memory)", wakeNextKey: wake?.0, wakeNext: wake.map { date($0.1) },
                            sleep: "off: in-memory")
    }

    /// Quiet until `quietOff`, or until the virtual clock reaches its end.
    public func quietOn(_ duration: QuietDuration) async throws(TocsinClientError) -> QuietState {
        try record(.quietOn(duration))
        try duration.validate()
        switch duration {
        case .indefinitely: quiet = QuietState(active: true, source: .manual, held: heldKeys.count)
        case .duration(let d):
            quiet = QuietState(active: true, source: .manual, held: heldKeys.count, until: date(instant(now) + TimeSpan(microseconds: Self.us(d))))
        case .until(let u):
            guard instant(u) > instant(now) else {
                throw Self.invalidArgs("until", "field 'until': \(Self.written(instant(u))) is not in the future")
            }
            quiet = QuietState(active: true, source: .manual, held: heldKeys.count, until: u)
        }
        return quiet
    }

    /// Delivers what was held.
    public func quietOff() async throws(TocsinClientError) -> QuietState {
        try record(.quietOff)
        endQuiet()
        return quiet
    }

    /// As last switched, or ended by the clock.
    public func quietState() async throws(TocsinClientError) -> QuietState {
        try record(.quietState)
        expireQuiet()
        return quiet
    }

    /// Streams live until the consumer stops; nothing is buffered from before.
    public func events(_ scope: EventScope) async throws(TocsinClientError) -> AsyncStream<NotificationEvent> {
        try record(.events(scope))
        let (stream, continuation) = AsyncStream.makeStream(of: NotificationEvent.self, bufferingPolicy: .unbounded)
        let id = nextStream
        nextStream += 1
        streams[id] = (scope, continuation)
        continuation.onTermination = { _ in Task { await self.dropStream(id) } }
        return stream
    }
}
