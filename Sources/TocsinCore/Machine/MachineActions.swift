public import TocsinModel
public import TocsinTime
import TocsinSystem

/// What the center must do after an input, in order. The machine decides; the center performs.
public enum MachineAction: Hashable, Sendable {
    /// Part of the batch that must be durable before anything below is performed or replied.
    case persist(StoreOp)
    /// Hand a claimed firing to its backends (the center reads its content from the store).
    case deliver(PlannedDelivery)
    /// Hand a firing quiet hours held to its one backend (`backends`), now that quiet ended. Its
    /// content travels with it: the notification may have changed or gone since. Its claim was
    /// closed when it was held, so it goes out once, in the order the machine gives.
    case deliverHeld(Firing)
    case withdraw(key: String, backends: [String], reason: WithdrawReason)
    /// A firing claimed ahead of its instant (`claimAhead`) whose claim a request dropped before
    /// that instant (cancel, replace, reload): it never goes out, though its claim's transaction
    /// recorded it as fired. The history takes that entry back (`HistoryLog`); nothing else acts.
    case unclaimed(key: String, occurrence: Occurrence, due: Instant)
    /// A lifecycle event for subscribers (cancelled, acknowledged, snoozed, missed, unanswered).
    case emit(CenterEvent)
}

extension MachineAction {
    /// The notification the action is about.
    var key: String {
        switch self {
        case .persist(let op):
            switch op {
            case .upsert(let row): return row.notification.key
            case .delete(let k, _), .progress(let k, _, _, _), .alert(let k, _), .pending(let k, _), .markCancelled(let k): return k
            case .record(let e): return e.key
            case .unrecordFired(let k, _, _): return k
            case .hold(let h): return h.firing.key
            case .pruneHistory, .quietSwitch, .quietActive, .unhold: return ""
            }
        case .deliver(let d): return d.key
        case .deliverHeld(let f): return f.key
        case .withdraw(let k, _, _): return k
        case .unclaimed(let k, _, _): return k
        case .emit(let e): return e.key
        }
    }
}

/// A firing the machine has claimed, without its content.
public struct PlannedDelivery: Hashable, Sendable {
    public var key: String
    public var occurrence: Occurrence
    public var due: Instant
    public var fired: Instant
    public var reason: FiringReason
    public var targets: [String]
    public var isAlarm: Bool
    public var ring: UInt32 = 1
    /// Already in the history: a claim made ahead and held again at start-up (`closeInterrupted`).
    public var recorded = false
}

/// A configured backend as the machine sees it: its name, how it rings if it is an alarm, and
/// what it does while quiet unless `[quiet] backends` says otherwise.
public struct BackendInfo: Hashable, Sendable {
    public var name: String
    public var ringPolicy: RingPolicy?
    public var quietMode: QuietMode
    /// Gets an alarm's rings too (`DeliveryBackend.followsRings`).
    public var followsRings: Bool
    public init(name: String, ringPolicy: RingPolicy? = nil, quietMode: QuietMode = .deliver, followsRings: Bool = false) {
        self.name = name; self.ringPolicy = ringPolicy; self.quietMode = quietMode; self.followsRings = followsRings
    }
}
