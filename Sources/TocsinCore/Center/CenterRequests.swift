public import TocsinModel
public import TocsinTime
import TocsinSystem

/// The requests a client makes of the center: each is resolved here (`SpecResolver`), then
/// submitted to the next batch (`CenterBatch.swift`) and answered once durable.
extension TocsinCenter {
    /// Adds a notification, or replaces the one with the same key (unless `spec.replace` is false,
    /// which keeps the existing one and returns its key).
    @discardableResult
    /// `client` (a D-Bus unique name and its `max_pending_per_client`) is counted against its quota.
    public func schedule(_ spec: NotificationSpec, client: NotificationMachine.Client? = nil) async throws(CenterError) -> String {
        try await schedule(spec, client: client, share: true)
    }

    /// Delivers now, without a trigger; the key is tracked so the alarm can be acknowledged.
    @discardableResult
    public func postNow(_ spec: NotificationSpec, client: NotificationMachine.Client? = nil) async throws(CenterError) -> String {
        if spec.fleet {
            throw CenterError(.invalidArguments, "'fleet' goes with Schedule (a trigger every machine can agree on), not PostNow", field: "fleet")
        }
        let now = clock.now()
        var s = spec
        s.trigger = .at(.instant(now))
        var n = try resolver.resolve(s, source: .runtime, now: now, backendNames: machine.backendNames)
        n.trigger = .at(now)
        return try await submit(.post(n, replace: spec.replace, client: client)).key
    }

    /// Cancels one notification. A config-defined one stays cancelled across reloads and restarts
    /// for as long as its definition in the file is unchanged; editing it there brings it back.
    @discardableResult
    public func cancel(_ key: String) async throws(CenterError) -> Bool {
        let done = try await submit(.cancel(key)).bool
        if done, let fleet { await fleet.cancelled(key: key) }
        return done
    }

    /// Cancels every pending notification; returns how many.
    @discardableResult
    public func cancelAll() async throws(CenterError) -> Int {
        try await submit(.cancelAll).count
    }

    /// Stops a ringing or snoozed notification. False when there was nothing to acknowledge,
    /// also for a one-shot that is done: the engine forgets it, but the history knows it, and a
    /// second acknowledge (a popup's Dismiss racing `tocsin ack`) is not a mistake to report.
    /// A key the history does not know either stays `notFound` (a typo).
    @discardableResult
    public func acknowledge(_ key: String) async throws(CenterError) -> Bool {
        do throws(CenterError) {
            return try await submit(.acknowledge(key)).bool
        } catch {
            guard error.code == .notFound, (try? await history(HistoryQuery(key: key, limit: 1)).first) != nil else { throw error }
            return false
        }
    }

    /// Silences a notification now and delivers its last firing again after `duration`.
    @discardableResult
    public func snooze(_ key: String, for duration: TimeSpan?) async throws(CenterError) -> Instant {
        // A snooze delivers again when it ends: below the floor, snoozing again and again would
        // fire one notification faster than any trigger may.
        if let duration, duration < options.limits.minPeriod {
            throw CenterError(.invalidArguments, "\(duration) is below [daemon] min_period (\(options.limits.minPeriod)); a notification may fire at most once per min_period", argument: "duration")
        }
        do throws(CenterError) {
            return try await submit(.snooze(key, duration ?? options.defaultSnooze)).instant
        } catch {
            guard error.code == .notFound else { throw error }
            throw await gone(key, error)
        }
    }

    /// The engine forgets a one-shot once it is done, so "no notification with key" met the
    /// person snoozing the reminder that had just popped up. The history still knows it: say it
    /// fired and is done, and what to do instead.
    private func gone(_ key: String, _ error: CenterError) async -> CenterError {
        guard let last = try? await history(HistoryQuery(key: key, limit: 1)).first else { return error }
        let shown = "'\(Echo.capped(key))'"
        let when = Timestamp.rfc3339(last.time, in: options.defaultZone)
        let what = switch last.kind {
        case .cancelled: "was cancelled at \(when)"
        case .acknowledged: "was acknowledged at \(when) and is done"
        case .unanswered: "rang unanswered until \(when) and is done"
        case .missed: "was missed at \(when) (the daemon was not running) and is done"
        case .fired, .interrupted, .snoozed: "fired at \(when) and is done"
        }
        return CenterError(.notFound, "notification \(shown) \(what): only a pending or ringing one can be snoozed; to be reminded again, schedule it again", field: "key")
    }

    /// Replaces every config-defined notification in one transaction (cancel-before-schedule).
    /// Nothing changes when any entry is invalid or the transaction cannot be committed.
    @discardableResult
    public func applyConfig(_ specs: [NotificationSpec]) async throws(CenterError) -> ReloadReport {
        let list = try resolveConfig(specs, backendNames: machine.backendNames)
        return try await submit(.config(list, backends: nil, kept: [], quiet: nil)).report
    }

    /// A config reload: the new backends, notifications and `[quiet]` settings together, in one
    /// transaction. The notifications are checked against the new backends and everything is
    /// made durable first, so a reload that fails (an invalid entry or window, a full disk)
    /// leaves the running backends, schedule and quiet hours exactly as they were. `keeping`
    /// names the instances of `list` that are the running ones (their table unchanged): they
    /// go on as they are, neither started again nor shut down.
    @discardableResult
    public func reload(backends list: [any DeliveryBackend], keeping kept: Set<String> = [], specs: [NotificationSpec],
                       quiet: QuietSettings) async throws(CenterError) -> ReloadReport {
        let resolved = try resolveConfig(specs, backendNames: list.map(\.name))
        let rules = try resolver.quietRules(quiet)
        return try await submit(.config(resolved, backends: list, kept: kept, quiet: rules)).report
    }

    private func resolveConfig(_ specs: [NotificationSpec], backendNames: [String]) throws(CenterError) -> [(notification: Notification, fingerprint: String)] {
        let now = clock.now()
        var out: [(notification: Notification, fingerprint: String)] = []
        out.reserveCapacity(specs.count)
        for spec in specs {
            let n = try resolver.resolve(spec, source: .config, now: now, backendNames: backendNames)
            out.append((n, n.fingerprint))
        }
        return out
    }

}
