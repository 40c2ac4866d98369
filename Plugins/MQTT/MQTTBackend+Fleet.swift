import FoundationEssentials
import Logging
import Synchronization
public import TocsinCore
import TocsinTime
import TocsinModel

/// `fleet = true`: the `[fleet]` backend shares run-time notifications with the other machines
/// (a `scheduled` message with the resolved notification, a `cancelled` one), and schedules or
/// cancels here what they share. Each change is named by its key and the instant it was made at
/// its origin: the id makes a redelivered or replayed message act once, and the instant makes a
/// change older than the one in force here (a late message) act not at all, so a replayed
/// `scheduled` never brings back a notification cancelled after it.
extension MQTTBackend: FleetLink {
    public var fleetLink: (any FleetLink)? { subscribes ? self : nil }

    public func scheduled(_ n: TocsinCore.Notification, fleet: Bool) async {
        let now = Self.nowMicroseconds()
        let (wasShared, store) = state.withLock { s in
            s.forgetOld(now: now)
            let was = s.fleet[n.key]?.shared ?? false
            if fleet || was { s.fleet[n.key] = (fleet, now) }
            return (was, s.store)
        }
        guard fleet || wasShared else { return }
        store?.recordFleet(key: n.key, shared: fleet, changed: now)
        guard fleet else { return }
        let m = FleetMessage(kind: .scheduled, key: n.key, occurrence: 0, due: now, origin: options.clientID,
                             title: n.title, notification: FleetNotification(n))
        logger.info("mqtt \(name): sharing \(n.key) with the fleet")
        publishDurably(m)
    }

    public func cancelled(key: String) async {
        let now = Self.nowMicroseconds()
        let (shared, store) = state.withLock { s in
            guard s.fleet[key]?.shared == true else { return (false, s.store) }
            s.fleet[key] = (false, now)
            return (true, s.store)
        }
        guard shared else { return }
        store?.recordFleet(key: key, shared: false, changed: now)
        publishDurably(FleetMessage(kind: .cancelled, key: key, occurrence: 0, due: now, origin: options.clientID))
    }

    /// A `scheduled` or `cancelled` message from another machine (already decoded and checked).
    func receivedChange(_ m: FleetMessage) {
        let (sink, store, latest) = state.withLock { ($0.sink, $0.store, $0.fleet[m.key]?.changed) }
        if let latest, m.due < latest {
            logger.info("mqtt \(name): ignored \(m.id) from \(m.origin): a later change of \(m.key) is in force here")
            return
        }
        guard store?.insert(m.id, kind: m.kind.rawValue, at: Int64(Date().timeIntervalSince1970)) ?? true else {
            logger.info("mqtt \(name): ignored a redelivered \(m.id) from \(m.origin)")
            return
        }
        let spec: NotificationSpecResult
        if m.kind == .scheduled {
            guard let n = m.notification, case .success(let s) = n.spec(key: m.key) else { return }
            spec = .schedule(s)
        } else {
            spec = .cancel
        }
        // Recorded before the center acts: its cancel then finds the key no longer shared, and
        // does not send it back.
        state.withLock { s in
            s.forgetOld(now: Self.nowMicroseconds())
            s.fleet[m.key] = (m.kind == .scheduled, m.due)
        }
        store?.recordFleet(key: m.key, shared: m.kind == .scheduled, changed: m.due)
        logger.info("mqtt \(name): \(m.id) from \(m.origin)")
        switch spec {
        case .schedule(let s): sink?.send(.fleetSchedule(s))
        case .cancel: sink?.send(.fleetCancel(key: m.key))
        }
    }

    private enum NotificationSpecResult { case schedule(NotificationSpec), cancel }

    static func nowMicroseconds() -> Int64 { Int64((Date().timeIntervalSince1970 * 1_000_000).rounded()) }
}
