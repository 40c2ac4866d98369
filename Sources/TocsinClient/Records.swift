public import FoundationEssentials

/// A notification the daemon holds, as `pending()` lists it.
public struct PendingNotification: Sendable, Hashable {
    /// Where it stands: waiting for its trigger, ringing until acknowledged, or snoozed.
    public enum State: String, Sendable, Hashable {
        /// The daemon's state names (`tocsin list` shows the same).
        case scheduled, ringing, snoozed, unanswered
    }
    /// Its key.
    public var key: String
    /// Its title.
    public var title: String
    /// Its body.
    public var body: String
    /// When it fires next; nil while it rings or when nothing is left to fire.
    public var nextFire: Date?
    /// When the latest occurrence fell due; nil before the first.
    public var lastFire: Date?
    /// Scheduled, ringing, snoozed or unanswered.
    public var state: State
    /// The daemon's one-line description of the trigger (`every 15min, 6 times`).
    public var triggerDescription: String
    /// As requested.
    public var urgency: NotificationUrgency
    /// Where it goes: as requested, or every default backend.
    public var backends: [String]
    /// As requested.
    public var userInfo: [String: String]
    /// While snoozed: when it comes back.
    public var snoozedUntil: Date?
    /// As requested (`NotificationRequest.wakesDevice`).
    public var wakesDevice: Bool

    /// For the double and for apps' own fakes; the client decodes the daemon's list.
    public init(key: String, title: String, body: String = "", nextFire: Date?, lastFire: Date? = nil,
                state: State = .scheduled, triggerDescription: String = "", urgency: NotificationUrgency = .normal,
                backends: [String] = [], userInfo: [String: String] = [:], snoozedUntil: Date? = nil, wakesDevice: Bool = false) {
        self.wakesDevice = wakesDevice
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
    /// The notification's key.
    public var key: String
    /// Its title at the time it fired.
    public var title: String
    /// Its body at the time it fired.
    public var body: String
    /// When the occurrence was due; `fired` is when it went out (later when `late`).
    public var due: Date
    /// When it went out.
    public var fired: Date
    /// 1-based count of this firing within its trigger (for reminders, the offset's position).
    public var occurrence: Int
    /// It went out later than due (the machine slept, or a missed policy delivered it).
    public var late: Bool
    /// The request's user info, so the app finds its record.
    public var userInfo: [String: String]
    /// For reminders: how long before the event this firing is.
    public var before: Duration?

    /// For the double and for apps' own fakes.
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
    /// The recorded kinds, as the daemon's history names them.
    ///
    /// `other` keeps an entry of a kind this client does not know (a newer daemon's) instead of
    /// dropping it or failing the whole call: a "recent activity" view still lists it, under the
    /// daemon's word, and the other entries still arrive.
    public enum Kind: Sendable, Hashable, RawRepresentable {
        /// A firing was claimed for delivery.
        case fired
        /// Someone stopped it.
        case acknowledged
        /// Silenced until `until`.
        case snoozed
        /// Removed before its time.
        case cancelled
        /// Firings fell due while the daemon was not running (`count` of them, from `due`).
        case missed
        /// An alarm rang `count` times without an answer.
        case unanswered
        /// The daemon stopped while delivering a firing to `backends`: it may not have arrived.
        case interrupted
        /// A kind this client does not know, with the daemon's spelling.
        case other(String)

        static let known: [Kind] = [.fired, .acknowledged, .snoozed, .cancelled, .missed, .unanswered, .interrupted]

        /// Never nil: a word that names no known kind is `other(word)`, so the same word always
        /// makes the same value.
        public init?(rawValue: String) {
            self = Self.known.first { $0.rawValue == rawValue } ?? .other(rawValue)
        }

        /// The daemon's spelling.
        public var rawValue: String {
            switch self {
            case .fired: "fired"
            case .acknowledged: "acknowledged"
            case .snoozed: "snoozed"
            case .cancelled: "cancelled"
            case .missed: "missed"
            case .unanswered: "unanswered"
            case .interrupted: "interrupted"
            case .other(let word): word
            }
        }
    }
    /// When it was recorded.
    public var time: Date
    /// What happened.
    public var kind: Kind
    /// The notification's key.
    public var key: String
    /// Its title then.
    public var title: String
    /// Fired and interrupted: the occurrence's due time; missed: the first missed one.
    public var due: Date?
    /// Snoozed: until when.
    public var until: Date?
    /// Fired and interrupted: which occurrence.
    public var occurrence: Int?
    /// Missed: how many firings; unanswered: how many rings.
    public var count: Int?
    /// Fired: whether it went out later than due.
    public var late: Bool?
    /// Fired: the backends it went to; interrupted: those whose delivery was never confirmed.
    /// Empty for the kinds that concern no delivery.
    public var backends: [String]

    /// For the double and for apps' own fakes.
    public init(time: Date, kind: Kind, key: String, title: String, due: Date? = nil, until: Date? = nil, occurrence: Int? = nil,
                count: Int? = nil, late: Bool? = nil, backends: [String] = []) {
        self.time = time
        self.kind = kind
        self.key = key
        self.title = title
        self.due = due
        self.until = until
        self.occurrence = occurrence
        self.count = count
        self.late = late
        self.backends = backends
    }
}

/// Which history to read: one key's, since an instant, at most `limit` entries (at most 10000,
/// which the daemon refuses to exceed; it answers what fits one message).
public struct HistoryQuery: Sendable, Hashable {
    /// Only this key's events.
    public var key: String?
    /// Only events at or after this.
    public var since: Date?
    /// At most this many (1...10000).
    public var limit: Int

    /// Defaults: every key, all time, 100 entries.
    public init(key: String? = nil, since: Date? = nil, limit: Int = 100) {
        self.key = key
        self.since = since
        self.limit = limit
    }
}

/// The daemon at a glance: what `tocsin status` shows.
public struct DaemonStatus: Sendable, Hashable {
    /// The daemon's version, for bug reports.
    public var version: String
    /// The daemon's process id, 0 when unknown (the double has none).
    public var pid: Int
    /// Notifications pending, of every client.
    public var pending: Int
    /// Backend name → `ok`, or why deliveries to it fail now.
    public var backends: [String: String]
    /// The one that fires next, if any.
    public var nextKey: String?
    /// When that is.
    public var nextFire: Date?
    /// Whether the daemon can wake the machine: `available`, `off (...)` or `unavailable: ` and why
    /// (e.g. no `CAP_WAKE_ALARM`); empty from a daemon that does not say.
    public var wake: String
    /// The earliest firing that asks to wake the machine (`wakesDevice`), and when.
    public var wakeNextKey: String?
    public var wakeNext: Date?
    /// The instant the daemon's wake-alarm timer holds, as the kernel reads it back; nil when not armed.
    public var wakeArmed: Date?
    /// Whether the daemon follows logind's sleep announcements, or why not.
    public var sleep: String

    /// For the double and for apps' own fakes.
    public init(version: String, pid: Int = 0, pending: Int, backends: [String: String] = [:], nextKey: String? = nil,
                nextFire: Date? = nil, wake: String = "", wakeNextKey: String? = nil, wakeNext: Date? = nil,
                wakeArmed: Date? = nil, sleep: String = "") {
        self.wake = wake
        self.wakeNextKey = wakeNextKey
        self.wakeNext = wakeNext
        self.wakeArmed = wakeArmed
        self.sleep = sleep
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
        /// The daemon's spelling.
        case manual, schedule, none
    }
    /// Whether deliveries are held now.
    public var active: Bool
    /// Who switched it.
    public var source: Source
    /// Firings held back, to be delivered when quiet ends.
    public var held: Int
    /// When the state changes by itself, if it will.
    public var until: Date?

    /// For the double and for apps' own fakes.
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
    /// For this long from now.
    case duration(Duration)
    /// Until this instant.
    case until(Date)
}
