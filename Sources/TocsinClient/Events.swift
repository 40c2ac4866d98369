public import FoundationEssentials

/// What happened to a notification, as the daemon announces it on the bus; the cases are the
/// gateway's signals, decoded.
public enum NotificationEvent: Sendable, Hashable {
    /// It fell due and went out (only for notifications routed to a `dbus-signal` backend).
    case fired(FiredNotification)
    /// A person chose an action on a popup; `userInfo` is the notification's.
    case actionInvoked(key: String, action: String, userInfo: [String: String])
    /// Someone stopped it (`acknowledge`, a popup's Dismiss, `tocsin ack`).
    case acknowledged(key: String)
    /// Silenced until `until`, when it is delivered again.
    case snoozed(key: String, until: Date)
    /// Firings fell due while the daemon was not running; `due` is the first of them.
    case missed(key: String, due: Date)
    /// An alarm rang its last ring without being acknowledged.
    case unanswered(key: String, rings: Int)
    /// Removed before its time, by any client.
    case cancelled(key: String)
    /// `removeAll` (by any client) cancelled `count` notifications. The daemon names at most the
    /// first 1,000 keys in `cancelled` events; this one always follows and speaks for every key,
    /// so an app that tracks its keys forgets them all here. Never filtered.
    case cancelledAll(count: Int)
    /// The daemon stopped (a crash) while delivering this firing to `backends`: it may or may not
    /// have reached them, and it is not delivered again (deliveries are at most once).
    case interrupted(key: String, due: Date, occurrence: Int, backends: [String])
    /// The daemon took its bus name (started, restarted, or activated). Events it emitted while
    /// it was away are lost; an app that cares re-reads `pending()` here. Never filtered.
    case daemonAppeared
    /// The daemon left the bus. The stream goes on and resumes when it comes back.
    case daemonVanished

    /// The notification the event is about; nil for the daemon's own comings and goings.
    public var key: String? {
        switch self {
        case .fired(let f): f.key
        case .actionInvoked(let key, _, _), .acknowledged(let key), .snoozed(let key, _), .missed(let key, _),
             .unanswered(let key, _), .cancelled(let key), .interrupted(let key, _, _, _): key
        case .daemonAppeared, .daemonVanished, .cancelledAll: nil
        }
    }
}

/// Whose events a stream carries.
public enum EventScope: Sendable, Hashable {
    /// Only notifications this center added or posted: other apps' alarms stay theirs.
    case mine
    /// Every notification the daemon holds.
    case all
    /// These keys, whoever scheduled them (an app restarted and knows its keys).
    case keys(Set<String>)
}
