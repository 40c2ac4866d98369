import Logging
public import TocsinModel
public import TocsinTime
import TocsinSystem

/// Quiet hours in the center. Quiet hours are part of the notification machine
/// (`NotificationMachine.quiet`): a switch, a reload's `[quiet]`, a window beginning or ending
/// and a hold are inputs of the same batches as every other request (`CenterBatch.swift`),
/// their writes go in the same commits, and held and released firings go through `dispatch`
/// and `finishedDelivery` like any firing (`CenterDelivery.swift`, which also routes a firing
/// while quiet). What is left here is the API.
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
}
