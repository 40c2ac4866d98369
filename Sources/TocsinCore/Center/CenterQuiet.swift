import Logging
public import TocsinConfig
public import TocsinTime

/// Quiet hours in the center. Quiet hours are part of the notification machine
/// (`NotificationMachine.quiet`): a switch, a reload's `[quiet]`, a window beginning or ending
/// and a hold are inputs of the same batches as every other request (`CenterBatch.swift`),
/// their writes go in the same commits, and held and released firings go through `dispatch`
/// and `finishedDelivery` like any firing (`CenterDelivery.swift`). What is left here is the
/// API and the routing of a firing while quiet.
extension TocsinCenter {
    /// Start-up: the `[quiet]` settings, before `start` (a reload changes them with the rest of
    /// the config: `reload(backends:specs:quiet:)`). A window whose zone is unknown is refused
    /// with its position in the section; nothing changes then.
    public func setQuiet(_ settings: QuietSettings) throws(CenterError) {
        guard !started else {
            throw CenterError(.invalidArguments, "quiet settings change with a reload once the center has started")
        }
        let rules = try resolver.quietRules(settings)
        var unused: [MachineAction] = []
        machine.setQuiet(rules, now: nil, into: &unused)
    }

    /// Whether it is quiet now, why, until when, and how much is held.
    public func quietStatus() -> QuietStatus { machine.quiet.status(at: clock.now()) }

    /// The firings held now, oldest first (for tests and `tocsin quiet --json`).
    public var heldFirings: [HeldFiring] { machine.quiet.held }

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
        if let until, until <= clock.now() {
            throw CenterError(.invalidArguments, "'until' is not in the future", field: "until")
        }
        return try await submit(.quietOn(until: until)).quiet
    }

    /// Switches quiet off now (for the rest of a scheduled window that covers now), releasing
    /// what was held. Durable before it returns.
    @discardableResult
    public func quietOff() async throws(CenterError) -> QuietStatus {
        try await submit(.quietOff).quiet
    }

    /// Start-up: the switch, the state and the held firings as stored. What time did meanwhile
    /// (quiet that ended while the daemon was down) is the first tick's evaluation.
    func restoreQuiet() async {
        do {
            let snap = try await store.loadQuiet()
            machine.restoreQuiet(snap)
            if !snap.held.isEmpty { logger.info("quiet hours: \(snap.held.count) held firing(s) restored") }
        } catch {
            logger.error("could not read the quiet-hours state: \(error.message)")
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
}
