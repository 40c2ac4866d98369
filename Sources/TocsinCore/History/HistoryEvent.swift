public import TocsinModel
public import TocsinTime
import TocsinSystem

/// One entry of the history: something that happened to a notification, as `tocsin history` and
/// the D-Bus `History` method show it.
public struct HistoryEvent: Hashable, Sendable {
    /// Stored by name (`fired`, ...), so reordering the cases never changes what a row means.
    public enum Kind: String, Hashable, Sendable, CaseIterable {
        case fired, acknowledged, snoozed, cancelled, missed, unanswered
        /// A firing claimed before the daemon stopped and never confirmed delivered: not repeated.
        case interrupted
    }

    public var kind: Kind
    /// When it happened (for `fired`, when the firing was handed to its backends).
    public var time: Instant
    public var key: String
    /// The notification's title when it happened. Left empty by the center: the machine keeps no
    /// content, so the store copies it from the notification's row in the same transaction.
    public var title: String = ""
    /// The backends it concerned; nil when the center does not know them, and the store then
    /// takes the notification's own list (empty when it goes to the default set).
    public var backends: [String]?
    /// `fired`, `interrupted`: the due time of the occurrence; `missed`: the first missed due time.
    public var due: Instant?
    /// `snoozed`: when it rings again.
    public var until: Instant?
    /// `fired`, `interrupted`: which occurrence (1-based).
    public var occurrence: UInt32?
    /// `fired`: delivered late (after downtime, under the missed policy).
    public var late: Bool?
    /// `missed`: how many occurrences were skipped; `unanswered`: how many rings went unanswered.
    public var count: UInt32?

    public init(kind: Kind, time: Instant, key: String, title: String = "", backends: [String]? = nil,
                due: Instant? = nil, until: Instant? = nil, occurrence: UInt32? = nil, late: Bool? = nil, count: UInt32? = nil) {
        self.kind = kind; self.time = time; self.key = key; self.title = title; self.backends = backends
        self.due = due; self.until = until; self.occurrence = occurrence; self.late = late; self.count = count
    }
}

/// Which entries to return, newest first.
public struct HistoryQuery: Hashable, Sendable {
    /// Only this notification's entries.
    public var key: String?
    /// Only entries at or after this instant.
    public var since: Instant?
    public var limit: Int
    /// `limit` when a caller gives none (0), and the most one query returns.
    public static let defaultLimit = 100
    public static let maxLimit = 10_000

    public init(key: String? = nil, since: Instant? = nil, limit: Int = HistoryQuery.defaultLimit) {
        self.key = key; self.since = since; self.limit = limit
    }
}

/// How much history is kept (`[daemon] history_max_entries`, `history_max_age`).
public struct HistoryRetention: Hashable, Sendable {
    /// The newest this many entries are kept; 0 records nothing.
    public var maxEntries: Int
    /// Entries older than this are removed.
    public var maxAge: TimeSpan
    public init(maxEntries: Int = DaemonKeys.historyMaxEntries.defaultValue, maxAge: TimeSpan = DaemonKeys.historyMaxAge.defaultValue) {
        self.maxEntries = maxEntries; self.maxAge = maxAge
    }
}
