public import TocsinTime

/// What the center tells its observers (the D-Bus service turns these into signals).
public enum CenterEvent: Hashable, Sendable {
    /// A firing was claimed and handed to its backends.
    case fired(Firing, backends: [String])
    case actionInvoked(key: String, action: String, userInfo: [String: String])
    case acknowledged(key: String)
    case snoozed(key: String, until: Instant)
    case cancelled(key: String)
    case missed(key: String, due: Instant, count: Int)
    case unanswered(key: String, rings: UInt32)
    /// A backend gave up on a firing after its retries.
    case deliveryFailed(key: String, backend: String, message: String)
    /// Quiet hours began or ended (by schedule, switch or expiry).
    case quietChanged(QuietStatus)
}

extension CenterEvent {
    /// The notification the event is about.
    public var key: String {
        switch self {
        case .fired(let f, _): return f.key
        case .actionInvoked(let k, _, _), .acknowledged(let k), .snoozed(let k, _), .cancelled(let k),
             .missed(let k, _, _), .unanswered(let k, _), .deliveryFailed(let k, _, _):
            return k
        case .quietChanged: return ""
        }
    }
}
