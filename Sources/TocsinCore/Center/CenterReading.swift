import Logging
public import TocsinTime
import TocsinSystem

/// Reading the schedule: the machine's summaries, with content read from the store.
extension TocsinCenter {
    /// Pending notifications, soonest first (ringing ones first of all).
    public func list() async -> [PendingNotification] {
        await caughtUp()
        let summaries = machine.activeSummaries()
        let rows: [String: Notification]
        do { rows = try await store.notifications(summaries.map(\.key)) } catch {
            logger.error("could not read notifications: \(error.message)")
            return []
        }
        return summaries.compactMap { s in
            rows[s.key].map { PendingNotification(notification: $0, nextFire: s.nextFire, state: s.state, lastFire: s.lastFire) }
        }
    }

    /// One page of pending notifications in key order (the UTF-8 bytes of the key): up to
    /// `limit` whose key sorts after `cursor` (empty: from the first), and whether more follow.
    /// Key order makes a walk stable while the schedule changes: a notification pending for the
    /// whole walk is listed exactly once, whatever fires or is added meanwhile. Each page costs
    /// an index range of the store, not a sort of everything pending.
    public func listPage(after cursor: String, limit: Int) async throws(CenterError) -> (items: [PendingNotification], more: Bool) {
        await caughtUp()
        if closed { throw CenterError(.stopping, "the daemon is stopping") }
        let limit = max(1, limit)
        var found: [NotificationMachine.Summary] = []
        var after = cursor
        var exhausted = false
        do {
            while found.count <= limit && !exhausted {
                let chunk = max(limit + 1 - found.count, 64)
                let keys = try await store.keys(after: after, limit: chunk)
                exhausted = keys.count < chunk
                for k in keys {
                    after = k
                    if let s = machine.summary(k) { found.append(s) }
                    if found.count > limit { break }
                }
            }
            let page = found.prefix(limit)
            let rows = try await store.notifications(page.map(\.key))
            let items = page.compactMap { s in rows[s.key].map { PendingNotification(notification: $0, nextFire: s.nextFire, state: s.state, lastFire: s.lastFire) } }
            return (items, found.count > limit)
        } catch {
            throw CenterError(.storage, "could not read notifications: \(error.message)")
        }
    }

    public func lookup(_ key: String) async -> PendingNotification? {
        await caughtUp()
        guard let s = machine.summary(key), let n = try? await store.notifications([key])[key] else { return nil }
        return PendingNotification(notification: n, nextFire: s.nextFire, state: s.state, lastFire: s.lastFire)
    }

    public var activeCount: Int { machine.activeCount }

    /// How many active notifications a client scheduled, and how many clients have any.
    public func pending(of client: String) -> Int { machine.pending(of: client) }
    public var clientCount: Int { machine.clientCount }

    /// Which of `keys` are no longer pending (fired and finished, cancelled, replaced by a
    /// config entry...): one actor hop for a whole batch, for the gateway's per-client quota.
    public func inactiveKeys(among keys: some Sequence<String>) -> Set<String> {
        var out = Set<String>()
        for k in keys where !machine.isActive(k) { out.insert(k) }
        return out
    }

    /// The instant of the next wake-up (for tests and `next`-style previews).
    public func nextDeadline() -> Instant? { machine.nextDeadline() }
    /// The soonest deadline and its key (`tocsin status`).
    public func nextDue() -> (key: String, instant: Instant)? { machine.nextDue() }
}
