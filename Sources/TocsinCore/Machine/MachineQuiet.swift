import TocsinModel
public import TocsinTime

/// Quiet hours as inputs of the notification machine. `quiet` (a `QuietMachine`) decides; these
/// inputs keep its pre-image while a batch is recorded, so a batch whose commit fails rolls quiet
/// hours back with everything else (`rollback`), and their `.persist` ops go in the batch's one
/// transaction.
extension NotificationMachine {
    /// Changes `quiet`, keeping its pre-image while recording.
    mutating func changeQuiet(_ body: (inout QuietMachine) -> Void) {
        undoLog?.append(.quiet(quiet))
        body(&quiet)
    }

    /// Start-up: the switch, the state and the held firings as stored.
    public mutating func restoreQuiet(_ s: QuietSnapshot) {
        changeQuiet { $0.restore(override: s.override, active: s.active, held: s.held) }
    }

    /// `[quiet]` (start-up, reload). With `now`, evaluated at once: a window added that covers
    /// now begins quiet, one removed releases what was held.
    public mutating func setQuiet(_ rules: QuietRules, now: Instant?, into out: inout [MachineAction]) {
        let list = backends
        changeQuiet { $0.configure(rules, backends: list) }
        if let now { evaluateQuiet(now: now, into: &out) }
    }

    /// `tocsin quiet on [--until T]`.
    public mutating func quietOn(until: Instant?, now: Instant, into out: inout [MachineAction]) {
        changeQuiet { $0.switchOn(until: until, now: now, into: &out) }
    }

    /// `tocsin quiet off`: off now and for the rest of a window that covers now; releases what was held.
    public mutating func quietOff(now: Instant, into out: inout [MachineAction]) {
        changeQuiet { $0.switchOff(now: now, into: &out) }
    }

    /// Time passed: expires a switch, notices a window begin or end (releasing what was held).
    public mutating func evaluateQuiet(now: Instant, into out: inout [MachineAction]) {
        // Most wake-ups change nothing: no pre-image is kept for those.
        var probe = quiet
        var actions: [MachineAction] = []
        probe.evaluate(now: now, into: &actions)
        guard !actions.isEmpty else { return }
        changeQuiet { $0 = probe }
        out += actions
    }

    /// A backend holds `firing` while quiet: the firing is kept (with its content) to go out when
    /// quiet ends, and the backend is done with the claim. Both are ops of one transaction, so a
    /// crash leaves either the claim open for that backend (reported as interrupted at the next
    /// start) or the firing held, never both or neither.
    public mutating func hold(_ firing: Firing, backend: String, into out: inout [MachineAction]) {
        changeQuiet { $0.hold(firing, backend: backend, into: &out) }
        deliveryFinished(key: firing.key, occurrence: firing.occurrence, backend: backend, into: &out)
    }

    /// A hold that could not be made durable (a full disk) is forgotten; the center delivers the
    /// firing instead. False when quiet hours no longer hold it (released in the same batch,
    /// which delivered it already). The failed commit also carried that backend's end of the
    /// claim, so the key's claim is written again, as memory has it, once the delivery is done
    /// (`deliveryFinished`): otherwise the next start would report a delivered firing as
    /// interrupted.
    public mutating func rescueHold(_ h: HeldFiring) -> Bool {
        guard quiet.held.contains(where: { $0.id == h.id }) else { return false }
        changeQuiet { $0.unhold(h.id) }
        staleClaims.insert(h.firing.key)
        return true
    }

    /// A notification cancelled or replaced takes the firings quiet hours hold for it along, as
    /// it takes its queued deliveries: a reminder cancelled in the evening must not pop up when
    /// quiet ends in the morning, nor a replaced one's old text. All of them with `key` nil
    /// (`CancelAll`).
    mutating func dropHeld(_ key: String?, into out: inout [MachineAction]) {
        guard quiet.held.contains(where: { key == nil || $0.firing.key == key }) else { return }
        changeQuiet { $0.drop(matching: { key == nil || $0 == key }, into: &out) }
    }

    /// Whether quiet hours hold this occurrence for `backend` (start-up's `closeInterrupted`).
    func heldForQuiet() -> Set<String> {
        Set(quiet.held.map { Self.heldKey($0.firing.key, $0.firing.occurrence.number, $0.backend) })
    }

    static func heldKey(_ key: String, _ number: UInt32, _ backend: String) -> String {
        "\(key)\u{0}\(number)\u{0}\(backend)"
    }
}
