public import TocsinModel
public import TocsinTime
import TocsinSystem

public enum NotificationSource: String, Hashable, Sendable {
    /// Defined in the config file: replaced as a whole on reload.
    case config
    /// Scheduled over D-Bus or the CLI: untouched by reloads.
    case runtime
}

/// A scheduled notification: the request with its trigger resolved against a clock and a zone.
public struct Notification: Hashable, Sendable {
    public var key: String
    public var title: String
    public var body: String
    public var trigger: Trigger
    /// nil: every configured backend.
    public var backends: [String]?
    public var urgency: Urgency
    public var icon: String?
    public var category: String?
    public var sound: String?
    public var actions: [NotificationAction]
    public var userInfo: [String: String]
    public var missed: MissedPolicy
    public var maxLate: TimeSpan?
    public var timezone: String
    public var source: NotificationSource
    /// Identifies the definition as written, so an unchanged config entry keeps its state across reloads.
    public var fingerprint: String
    /// Arm the wake-alarm timer for its firings (`wake = true`).
    public var wake = false

    public init(key: String, title: String, body: String = "", trigger: Trigger, backends: [String]? = nil,
                urgency: Urgency = .normal, icon: String? = nil, category: String? = nil, sound: String? = nil,
                actions: [NotificationAction] = [], userInfo: [String: String] = [:], missed: MissedPolicy = DaemonKeys.missed.defaultValue,
                maxLate: TimeSpan? = nil, timezone: String = "UTC", source: NotificationSource = .runtime,
                fingerprint: String = "") {
        self.key = key; self.title = title; self.body = body; self.trigger = trigger; self.backends = backends
        self.urgency = urgency; self.icon = icon; self.category = category; self.sound = sound
        self.actions = actions; self.userInfo = userInfo; self.missed = missed; self.maxLate = maxLate
        self.timezone = timezone; self.source = source; self.fingerprint = fingerprint
    }
}

/// Whether a person still has to react to a notification.
public enum AlertState: Hashable, Sendable {
    case idle
    /// Delivered to a backend that waits for acknowledgement (the alarm); `rings` counts the rings
    /// that played. Ring n+1 is due `every` × n after `since`: the first ring's instant, moved
    /// to a late ring's (after a suspend or downtime) so that the cadence goes on from there.
    case ringing(since: Instant, rings: UInt32)
    case snoozed(until: Instant)
    /// Rang `maxRings` times without a reaction; stays listed until acknowledged or fired again.
    case unanswered(rings: UInt32)

    public var name: String {
        switch self {
        case .idle: return "scheduled"
        case .ringing: return "ringing"
        case .snoozed: return "snoozed"
        case .unanswered: return "unanswered"
        }
    }
}

/// Why a firing is being delivered.
public enum FiringReason: String, Hashable, Sendable {
    case scheduled
    /// Delivered after its due time under the missed policy.
    case late
    case postNow = "post-now"
    case snoozeEnded = "snooze-ended"
    /// An alarm ringing again because nobody reacted yet.
    case ring
    /// Held by a backend during quiet hours and delivered when they ended.
    case quietEnded = "quiet-ended"
}

/// One delivery of a notification, as backends receive it.
public struct Firing: Hashable, Sendable {
    public var notification: Notification
    public var occurrence: Occurrence
    public var due: Instant
    public var fired: Instant
    public var reason: FiringReason
    /// The backend instances this firing goes to, as resolved by the center.
    public var backends: [String] = []
    /// True when one of them is an alarm: popups then offer Dismiss and Snooze.
    public var isAlarm = false
    /// For alarms: which ring this is (1 for the firing itself).
    public var ring: UInt32 = 1

    public var key: String { notification.key }
    public var late: Bool { reason == .late }
    public var lateness: TimeSpan { fired - due }

    public init(notification: Notification, occurrence: Occurrence, due: Instant, fired: Instant, reason: FiringReason) {
        self.notification = notification; self.occurrence = occurrence
        self.due = due; self.fired = fired; self.reason = reason
    }
}

/// One line of `List`.
public struct PendingNotification: Hashable, Sendable {
    public var notification: Notification
    public var nextFire: Instant?
    public var state: AlertState
    /// The latest occurrence that fell due; nil before the first.
    public var lastFire: Instant? = nil
    public var wake: Bool { notification.wake }
}
