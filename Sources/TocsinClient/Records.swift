public import FoundationEssentials

/// A notification the daemon holds, as `pending()` lists it.
public struct PendingNotification: Sendable, Hashable {
    /// Where it stands: waiting for its trigger, ringing until acknowledged, or snoozed.
    public enum State: String, Sendable, Hashable {
        case scheduled, ringing, snoozed, unanswered
    }
    public var key: String
    public var title: String
    public var body: String
    /// When it fires next; nil while it rings or when nothing is left to fire.
    public var nextFire: Date?
    public var lastFire: Date?
    public var state: State
    /// The daemon's one-line description of the trigger (`every 15min, 6 times`).
    public var triggerDescription: String
    public var urgency: NotificationUrgency
    public var backends: [String]
    public var userInfo: [String: String]
    public var snoozedUntil: Date?

    public init(key: String, title: String, body: String = "", nextFire: Date?, lastFire: Date? = nil,
                state: State = .scheduled, triggerDescription: String = "", urgency: NotificationUrgency = .normal,
                backends: [String] = [], userInfo: [String: String] = [:], snoozedUntil: Date? = nil) {
        self.key = key
        self.title = title
        self.body = body
        self.nextFire = nextFire
        self.lastFire = lastFire
        self.state = state
        self.triggerDescription = triggerDescription
        self.urgency = urgency
        self.backends = backends
        self.userInfo = userInfo
        self.snoozedUntil = snoozedUntil
    }
}

/// One firing, as `NotificationEvent.fired` reports it.
public struct FiredNotification: Sendable, Hashable {
    public var key: String
    public var title: String
    public var body: String
    /// When the occurrence was due; `fired` is when it went out (later when `late`).
    public var due: Date
    public var fired: Date
    /// 1-based count of this firing within its trigger (for reminders, the offset's position).
    public var occurrence: Int
    /// It went out later than due (the machine slept, or a missed policy delivered it).
    public var late: Bool
    public var userInfo: [String: String]
    /// For reminders: how long before the event this firing is.
    public var before: Duration?

    public init(key: String, title: String, body: String = "", due: Date, fired: Date, occurrence: Int = 1,
                late: Bool = false, userInfo: [String: String] = [:], before: Duration? = nil) {
        self.key = key
        self.title = title
        self.body = body
        self.due = due
        self.fired = fired
        self.occurrence = occurrence
        self.late = late
        self.userInfo = userInfo
        self.before = before
    }
}

/// One recorded event, newest first in `history(...)`.
public struct HistoryEntry: Sendable, Hashable {
    public enum Kind: String, Sendable, Hashable {
        case fired, acknowledged, snoozed, cancelled, missed, unanswered
    }
    public var time: Date
    public var kind: Kind
    public var key: String
    public var title: String
    /// Fired: the occurrence's due time; missed: the first missed one.
    public var due: Date?
    /// Snoozed: until when.
    public var until: Date?
    public var occurrence: Int?

    public init(time: Date, kind: Kind, key: String, title: String, due: Date? = nil, until: Date? = nil, occurrence: Int? = nil) {
        self.time = time
        self.kind = kind
        self.key = key
        self.title = title
        self.due = due
        self.until = until
        self.occurrence = occurrence
    }
}

/// Which history to read: one key's, since an instant, at most `limit` entries (the daemon
/// caps it at 10000 and answers what fits one message).
public struct HistoryQuery: Sendable, Hashable {
    public var key: String?
    public var since: Date?
    public var limit: Int

    public init(key: String? = nil, since: Date? = nil, limit: Int = 100) {
        self.key = key
        self.since = since
        self.limit = limit
    }
}

/// The daemon at a glance: what `tocsin status` shows.
public struct DaemonStatus: Sendable, Hashable {
    public var version: String
    /// The daemon's process id, 0 when unknown (the double has none).
    public var pid: Int
    public var pending: Int
    /// Backend name → `ok`, or why deliveries to it fail now.
    public var backends: [String: String]
    public var nextKey: String?
    public var nextFire: Date?

    public init(version: String, pid: Int = 0, pending: Int, backends: [String: String] = [:], nextKey: String? = nil,
                nextFire: Date? = nil) {
        self.version = version
        self.pid = pid
        self.pending = pending
        self.backends = backends
        self.nextKey = nextKey
        self.nextFire = nextFire
    }
}

/// Quiet hours as they stand: while active, firings are held and delivered when they end.
public struct QuietState: Sendable, Hashable {
    /// Why quiet is on: switched `manual`ly, by the daemon's `schedule`, or `none`.
    public enum Source: String, Sendable, Hashable {
        case manual, schedule, none
    }
    public var active: Bool
    public var source: Source
    /// Firings held back, to be delivered when quiet ends.
    public var held: Int
    /// When the state changes by itself, if it will.
    public var until: Date?

    public init(active: Bool, source: Source, held: Int = 0, until: Date? = nil) {
        self.active = active
        self.source = source
        self.held = held
        self.until = until
    }
}

/// How long quiet hours last when switched on.
public enum QuietDuration: Sendable, Hashable {
    /// Until `quietOff()`.
    case indefinitely
    case duration(Duration)
    case until(Date)
}
