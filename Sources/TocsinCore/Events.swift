public import TocsinTime
import TocsinSystem

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
    /// A firing claimed before the daemon stopped (a crash, `kill -9`) whose delivery to
    /// `backends` was never confirmed: it may or may not have reached them, and is not repeated.
    case interrupted(key: String, due: Instant, occurrence: UInt32, backends: [String])
    /// `CancelAll` cancelled `count` notifications; the last event of that call. `Cancelled`
    /// names each key only up to `CenterEvent.cancelledSignalLimit`.
    case cancelledAll(count: Int)
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
             .missed(let k, _, _), .unanswered(let k, _), .deliveryFailed(let k, _, _), .interrupted(let k, _, _, _):
            return k
        case .quietChanged, .cancelledAll: return ""
        }
    }
}

extension CenterEvent {
    /// How many `Cancelled` signals one `CancelAll` sends, one per key, before `CancelledAll` alone
    /// speaks for the rest: a million signals at once would sit in the daemon's and the bus's
    /// queues for seconds and overflow slow subscribers, so past this a client that tracks keys
    /// treats `CancelledAll` as "every key is gone". `CancelledAll(count)` always ends the call.
    public static let cancelledSignalLimit = 1_000
}
