import Logging
import TocsinTime
import TocsinSystem

/// Performing what a durable batch decided: the step between the commit (`CenterBatch.swift`)
/// and the backends (`CenterDelivery.swift`).
extension TocsinCenter {
    /// Performs `actions` in order: withdrawals, events, and the firings, which go to `dispatch`
    /// together (released held firings first: they are the oldest).
    func perform(_ actions: [MachineAction], contents: [String: Notification], claimedAt: Instant? = nil) {
        var firings: [Firing] = []
        var released: [Firing] = []
        var ahead: [Firing] = []
        var held: [(delivery: PlannedDelivery, notification: Notification)] = []
        // A `CancelAll` past the limit signals its first keys one by one and the rest in its
        // `cancelledAll`, which always closes it (`CenterEvent.cancelledSignalLimit`).
        let bulk = actions.contains { if case .emit(.cancelledAll(let n)) = $0 { return n > CenterEvent.cancelledSignalLimit }; return false }
        var cancelledSignals = 0
        let announce = announcesFirings
        for a in actions {
            switch a {
            case .persist, .unclaimed: continue
            case .deliver(let d):
                guard let n = contents[d.key] else {
                    // With no backend to wait for, a one-shot is forgotten in the commit that claims it.
                    if d.targets.isEmpty {
                        logger.notice("fired with no backend to deliver to", metadata: ["key": "\(d.key)", "due": "\(d.due)"])
                    } else {
                        logger.error("a claimed firing's notification could not be read; it is not delivered", metadata: ["key": "\(d.key)"])
                    }
                    continue
                }
                // A firing this batch claimed ahead (due after `claimedAt`) may have been withdrawn
                // by a request of the same batch, applied after the claim (a Cancel answered true).
                // When the commit outlasted the lead, it is due by now and would go out here. It
                // is held instead, as if still ahead: the request's own commit decides, dropping
                // it once durable (`pruneStaged`) or, when it fails and is rolled back, leaving the
                // claim standing, so it goes out late (`releaseStaged`).
                let withdrawn = claimedAt.map { d.fired > $0 } == true && machine.inDelivery[d.key]?.occurrence != d.occurrence
                if withdrawn || d.fired > clock.now() {
                    held.append((d, n))
                    if !withdrawn { ahead.append(firing(d, n)) }
                    continue
                }
                let f = firing(d, n)
                if announce { emit(.fired(f, backends: d.targets)) }
                firings.append(f)
            case .deliverHeld(let f):
                released.append(f)
            case .withdraw(let key, let names, let reason):
                // A snooze's end instant travels with its withdraw (the fleet shares it); the
                // machine emits it right after, in the same list.
                var until: Instant?
                if reason == .snoozed {
                    for case .emit(.snoozed(let k, let u)) in actions where k == key { until = u }
                }
                withdraw(key: key, from: names, reason: reason, snoozedUntil: until)
            case .emit(let event):
                if case .cancelled = event, bulk {
                    cancelledSignals += 1
                    if cancelledSignals > CenterEvent.cancelledSignalLimit { continue }
                }
                log(event)
                emit(event)
            }
        }
        stage(held)
        if !firings.isEmpty || !released.isEmpty { dispatch(firings, released: released) }
        if !ahead.isEmpty { prepare(ahead) }
    }

    private func log(_ event: CenterEvent) {
        switch event {
        case .missed(let key, let due, let count):
            logger.notice("missed firing(s) skipped", metadata: ["key": "\(key)", "due": "\(Timestamp.rfc3339UTC(due))", "count": "\(count)"])
        case .unanswered(let key, let rings):
            logger.warning("alarm unanswered", metadata: ["key": "\(key)", "rings": "\(rings)"])
        case .interrupted(let key, let due, _, let names):
            logger.warning("a firing claimed before the daemon stopped may not have been delivered; it is not repeated (deliveries are at most once)",
                           metadata: ["key": "\(key)", "due": "\(Timestamp.rfc3339UTC(due))", "backends": "\(names.joined(separator: ","))"])
        case .quietChanged(let status):
            logger.info(status.active ? "quiet hours began" : "quiet hours ended", metadata: ["source": "\(status.source)"])
        default: break
        }
    }

    func firing(_ d: PlannedDelivery, _ n: Notification) -> Firing {
        var f = Firing(notification: n, occurrence: d.occurrence, due: d.due, fired: d.fired, reason: d.reason)
        f.backends = d.targets
        f.isAlarm = d.isAlarm
        f.ring = d.ring
        return f
    }

    /// Holds whose commit failed (a full disk) are forgotten and their firings delivered now,
    /// through the usual queue, and confirmed as any delivery is (`rescueHold`).
    func rescueHolds(_ holds: [HeldFiring]) {
        for h in holds {
            guard machine.rescueHold(h) else { continue }
            logger.error("could not hold a firing for quiet hours; delivering it", metadata: ["key": "\(h.firing.key)", "backend": "\(h.backend)"])
            inFlight += 1
            if let backend = backends[h.backend] { enqueueDelivery(h.firing, to: backend) } else {
                finishedDelivery(h.firing, backend: h.backend, error: nil)
            }
        }
    }
}
