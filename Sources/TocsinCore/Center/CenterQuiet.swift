import Logging
public import TocsinModel
public import TocsinTime
import TocsinSystem

/// Quiet hours in the center: the shell around `QuietMachine`. The machine decides which
/// backends hold, drop or deliver a firing and what happens when quiet changes; this file makes
/// those decisions durable (in order, on the store thread) before it acts on them.
extension TocsinCenter {
    /// Applies `[quiet]` (start-up and reload). A window whose zone is unknown is refused with
    /// its position in the section; nothing changes then.
    public func setQuiet(_ settings: QuietSettings) throws(CenterError) {
        let zones = resolver.zones
        var windows: [QuietWindow] = []
        for (i, w) in settings.windows.enumerated() {
            var local = options.defaultZone
            if let name = w.timezone {
                do { local = try zones.zone(named: name, in: "[[quiet.window]] #\(i + 1)") } catch {
                    throw CenterError(.invalidConfig, error.message, field: "timezone")
                }
            }
            do {
                let r = try w.onCalendar.resolvingZone(local: local, rules: zones.rules)
                windows.append(QuietWindow(spec: r.spec, zone: r.zone, duration: w.duration))
            } catch {
                throw CenterError(.invalidConfig, "\(error.message) in [[quiet.window]] #\(i + 1)", field: "on_calendar")
            }
        }
        quietSettings = settings
        quiet.windows = windows
        quiet.criticalPasses = settings.criticalPasses
        quiet.alarmsPass = settings.alarmsPass
        refreshQuietModes()
        if started { evaluateQuiet() }
    }

    /// Each backend's mode: the config's word, else the backend's own default.
    func refreshQuietModes() {
        var modes: [String: QuietMode] = [:]
        for (name, b) in backends { modes[name] = quietSettings.backends[name] ?? b.quietMode }
        quiet.modes = modes
    }

    /// Whether it is quiet now, why, until when, and how much is held.
    public func quietStatus() -> QuietStatus { quiet.status(at: clock.now()) }

    /// The firings held now, oldest first (for tests and `tocsin quiet --json`).
    public var heldFirings: [HeldFiring] { quiet.held }

    /// `quiet on` as the CLI and D-Bus give it: `forText` a duration, `untilText` a time (see
    /// `QuietRequest`), both empty for "until switched off".
    @discardableResult
    public func quietOn(for forText: String, until untilText: String) async throws(CenterError) -> QuietStatus {
        let until = try QuietRequest.until(for: forText, until: untilText, now: clock.now(), zone: options.defaultZone,
                                             zones: resolver.zones)
        return try await quietOn(until: until)
    }

    /// Switches quiet on now, until `until` (nil: until switched off). Durable before it returns.
    @discardableResult
    public func quietOn(until: Instant?) async throws(CenterError) -> QuietStatus {
        let now = clock.now()
        if let until, until <= now {
            throw CenterError(.invalidArguments, "'until' is not in the future", field: "until")
        }
        var actions: [QuietAction] = []
        let before = quiet
        quiet.switchOn(until: until, now: now, into: &actions)
        try await commitSwitch(actions, before: before)
        return quiet.status(at: now)
    }

    /// Switches quiet off now (for the rest of a scheduled window that covers now), releasing
    /// what was held. Durable before it returns.
    @discardableResult
    public func quietOff() async throws(CenterError) -> QuietStatus {
        let now = clock.now()
        var actions: [QuietAction] = []
        let before = quiet
        quiet.switchOff(now: now, into: &actions)
        try await commitSwitch(actions, before: before)
        return quiet.status(at: now)
    }

    private func commitSwitch(_ actions: [QuietAction], before: QuietMachine) async throws(CenterError) {
        if let error = await quietCommit(Self.storeOps(actions)) {
            quiet = before
            throw CenterError(.storage, "the change could not be saved, nothing was changed: \(error.message)")
        }
        performQuiet(actions)
    }

    /// Start-up: the switch, the state and the held firings as stored; then what time did meanwhile
    /// (quiet that ended while the daemon was down releases its firings now).
    func restoreQuiet() async {
        do {
            let snap = try await store.loadQuiet()
            quiet.restore(override: snap.override, active: snap.active, held: snap.held)
            if !snap.held.isEmpty { logger.info("quiet hours: \(snap.held.count) held firing(s) restored") }
        } catch {
            logger.error("could not read the quiet-hours state: \(error.message)")
        }
        evaluateQuiet()
    }

    /// Time passed: lets the machine expire a switch or notice a window begin or end.
    func evaluateQuiet() {
        let now = clock.now()
        var actions: [QuietAction] = []
        quiet.evaluate(now: now, into: &actions)
        quietNext = quiet.nextChange(after: now)
        guard !actions.isEmpty else { rearm(); return }
        let ops = Self.storeOps(actions)
        let decided = actions
        quietCommitThen(ops) { center, error in
            if let error {
                // Delivered anyway: a restart may deliver a released firing again, never lose it.
                center.logger.error("could not save the quiet-hours change; acting on it anyway: \(error.message)")
            }
            center.performQuiet(decided)
        }
    }

    static func storeOps(_ actions: [QuietAction]) -> [QuietStoreOp] {
        actions.compactMap { a in
            switch a {
            case .persistOverride(let o): return .override(o)
            case .persistActive(let b): return .active(b)
            case .persistHold(let h): return .hold(h)
            case .persistRelease(let ids): return .release(ids)
            case .deliver, .changed: return nil
            }
        }
    }

    /// Delivers released firings (each in its key's queue, without the machine: their
    /// occurrences were recorded when they were held) and emits the change.
    func performQuiet(_ actions: [QuietAction]) {
        quietNext = quiet.nextChange(after: clock.now())
        rearm()
        // Each key has its own delivery queue, and queues run in parallel; the released firings
        // of one backend are chained on top of that, so they arrive oldest first as promised.
        var previousRelease: [String: AsyncStream<Void>] = [:]
        for a in actions {
            switch a {
            case .deliver(let f, let name):
                guard let backend = backends[name] else {
                    logger.warning("quiet hours ended; a held firing's backend is no longer configured", metadata: ["key": "\(f.key)", "backend": "\(name)"])
                    continue
                }
                let policy = options.delivery
                let clock = self.clock
                let logger = self.logger
                let before = previousRelease[name]
                let (done, finish) = AsyncStream<Void>.makeStream()
                previousRelease[name] = done
                enqueue(key: f.key, backend: name, cancelPrevious: false) {
                    if let before { for await _ in before {} }
                    _ = await Deliverer.deliver(f, to: backend, policy: policy, clock: clock, logger: logger)
                    finish.finish()
                }
            case .changed(let status):
                logger.info(status.active ? "quiet hours began" : "quiet hours ended", metadata: ["source": "\(status.source)"])
                emit(.quietChanged(status))
            default: continue
            }
        }
    }

    /// Routes a claimed batch through quiet hours: backends that hold get the firing stored and
    /// marked done only once it is durable (a crash before that leaves the claim open, and the
    /// next start closes it: reported as interrupted unless the hold was durable, in which case
    /// the held firing is still delivered when quiet ends); backends that drop are marked done
    /// at once. What is left goes out as usual.
    func routeQuiet(_ firings: [Firing]) -> [Firing] {
        let now = clock.now()
        guard quiet.isQuiet(at: now) else { return firings }
        var out: [Firing] = []
        out.reserveCapacity(firings.count)
        for var f in firings {
            let r = quiet.route(f, quiet: true)
            for name in r.drop {
                inFlight += 1
                logger.info("quiet hours: firing dropped", metadata: ["key": "\(f.key)", "backend": "\(name)"])
                finishedDelivery(f, backend: name, error: nil)
            }
            for name in r.hold {
                inFlight += 1
                var actions: [QuietAction] = []
                quiet.hold(f, backend: name, into: &actions)
                let held = f
                let id = quiet.held.last?.id ?? 0
                quietCommitThen(Self.storeOps(actions)) { center, error in
                    if let error {
                        center.logger.error("could not hold a firing for quiet hours; delivering it: \(error.message)",
                                            metadata: ["key": "\(held.key)", "backend": "\(name)"])
                        center.quiet.unhold(id)
                        if let backend = center.backends[name] { center.enqueueDelivery(held, to: backend) } else {
                            center.finishedDelivery(held, backend: name, error: nil)
                        }
                        return
                    }
                    center.logger.info("quiet hours: firing held", metadata: ["key": "\(held.key)", "backend": "\(name)"])
                    center.finishedDelivery(held, backend: name, error: nil)
                }
            }
            f.backends = r.deliver
            if !f.backends.isEmpty { out.append(f) }
        }
        return out
    }

    /// Commits quiet ops after every earlier quiet write; nil when durable.
    func quietCommit(_ ops: [QuietStoreOp]) async -> StoreError? {
        await withCheckedContinuation { (c: CheckedContinuation<StoreError?, Never>) in
            quietCommitThen(ops) { _, error in c.resume(returning: error) }
        }
    }

    func quietCommitThen(_ ops: [QuietStoreOp], _ then: @escaping @Sendable (isolated TocsinCenter, StoreError?) -> Void) {
        let previous = quietWrites
        let store = self.store
        quietWrites = Task {
            await previous?.value
            var failure: StoreError?
            do throws(StoreError) { try await store.commitQuiet(ops) } catch { failure = error }
            // The task inherits the actor: this runs on it.
            then(self, failure)
        }
    }
}
