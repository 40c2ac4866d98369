public import FoundationEssentials

/// The operations an app uses, behind one protocol so its code can take either the real
/// `TocsinNotificationCenter` or the in-memory double from `TocsinClientTesting`.
public protocol TocsinNotifying: Sendable {
    /// Schedules `request`, replacing a pending one with the same key unless it says not to.
    func add(_ request: NotificationRequest) async throws(TocsinClientError)
    /// Delivers `content` now; returns the key (the one given, or one made up). With
    /// `replacesExisting` false, a pending (or ringing) notification with the key is kept and
    /// nothing is posted; the key is returned all the same, as `add` keeps one.
    func post(_ content: NotificationContent, key: String?, replacesExisting: Bool) async throws(TocsinClientError) -> String
    /// Everything pending, in key order; paged under the hood, so no schedule is too large.
    func pending() async throws(TocsinClientError) -> [PendingNotification]
    /// Cancels these keys; returns the ones that were pending.
    func remove(keys: [String]) async throws(TocsinClientError) -> [String]
    /// Cancels everything pending (every client's); returns how many.
    func removeAll() async throws(TocsinClientError) -> Int
    /// Stops a ringing or snoozed notification; false when it was neither.
    func acknowledge(key: String) async throws(TocsinClientError) -> Bool
    /// Silences it and delivers it again after `duration` (nil: the daemon's 5 min); returns when.
    func snooze(key: String, for duration: Duration?) async throws(TocsinClientError) -> Date
    func history(_ query: HistoryQuery) async throws(TocsinClientError) -> [HistoryEntry]
    func status() async throws(TocsinClientError) -> DaemonStatus
    func quietOn(_ duration: QuietDuration) async throws(TocsinClientError) -> QuietState
    func quietOff() async throws(TocsinClientError) -> QuietState
    func quietState() async throws(TocsinClientError) -> QuietState
    /// Events from now on. Once this returns the stream is listening, so whatever the app does
    /// next is seen; it ends only when the consumer stops iterating.
    func events(_ scope: EventScope) async throws(TocsinClientError) -> AsyncStream<NotificationEvent>
}

extension TocsinNotifying {
    /// Delivers `content` now under `key` (nil: one made up), replacing a pending notification
    /// with that key.
    @discardableResult
    public func post(_ content: NotificationContent, key: String?) async throws(TocsinClientError) -> String {
        try await post(content, key: key, replacesExisting: true)
    }

    /// Delivers `content` now under a key made up for it.
    @discardableResult
    public func post(_ content: NotificationContent) async throws(TocsinClientError) -> String {
        try await post(content, key: nil, replacesExisting: true)
    }

    /// Snoozes for the daemon's default (5 min).
    @discardableResult
    public func snooze(key: String) async throws(TocsinClientError) -> Date {
        try await snooze(key: key, for: nil)
    }

    /// The latest 100 events, newest first: what a "recent activity" view wants.
    public func history() async throws(TocsinClientError) -> [HistoryEntry] { try await history(HistoryQuery()) }

    /// Events of the notifications this center scheduled.
    public func events() async throws(TocsinClientError) -> AsyncStream<NotificationEvent> { try await events(.mine) }

    /// Cancels one key; true when it was pending.
    @discardableResult
    public func remove(key: String) async throws(TocsinClientError) -> Bool { try await !remove(keys: [key]).isEmpty }
}

/// A key for `post` when the app gives none: made here, not by the daemon, so the center knows
/// it before the firing's events can arrive.
func madeUpKey() -> String {
    var g = SystemRandomNumberGenerator()
    let hex = (0..<4).map { _ in String(g.next() as UInt32, radix: 16) }.joined()
    return "post-" + hex
}
