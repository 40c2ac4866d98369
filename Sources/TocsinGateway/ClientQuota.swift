import Synchronization

/// Per-client accounting of the notifications each D-Bus client created, so one client that
/// schedules without end hits its own limit long before the daemon-wide `max_pending`, and the
/// other clients keep working.
///
/// A client is its unique bus name (`:1.42`): the bus guarantees it, a client cannot forge it,
/// and it is never reused while the bus runs. Tracked in memory only: after a daemon restart
/// every client starts from zero, which is fine for a guard against runaway clients.
///
/// The set of a client's keys is a superset of what is still pending: keys that fired, were
/// cancelled or were replaced are only dropped when the client is at its limit (`prune`) or
/// when the table has grown (`needsSweep`), so the hot path costs one lock and one set insert.
public final class ClientQuota: Sendable {
    public let limit: Int

    private struct Client {
        var keys: Set<String> = []
        /// Calls admitted but not yet answered by the center: counted, so concurrent calls of
        /// one client cannot all pass the check at once.
        var inFlight = 0
        /// Key count after the last prune: the next one comes when it has doubled, so a client
        /// that schedules many short-lived notifications keeps a set proportional to what it has
        /// pending, not to everything it ever scheduled.
        var prunedAt = 0
        var used: Int { keys.count + inFlight }
    }

    private struct State {
        var clients: [String: Client] = [:]
        /// Client count after the last sweep; the next sweep comes when it has doubled.
        var sweptAt = 0
    }

    private let state = Mutex(State())

    public init(limit: Int) { self.limit = max(1, limit) }

    /// Takes a slot for a call of `client`; false when the client is at its limit.
    func reserve(_ client: String) -> Bool {
        state.withLock { s in
            var c = s.clients[client] ?? Client()
            guard c.used < limit else { return false }
            c.inFlight += 1
            s.clients[client] = c
            return true
        }
    }

    /// The call succeeded and created (or kept) `key`.
    func commit(_ client: String, key: String) {
        state.withLock { s in
            s.clients[client, default: Client()].inFlight -= 1
            s.clients[client, default: Client()].keys.insert(key)
        }
    }

    /// The call failed: its slot is free again.
    func release(_ client: String) {
        state.withLock { s in
            guard var c = s.clients[client] else { return }
            c.inFlight -= 1
            if c.used == 0 { s.clients[client] = nil } else { s.clients[client] = c }
        }
    }

    /// The client created `key` (it may have finished since).
    func owns(_ client: String, key: String) -> Bool {
        state.withLock { $0.clients[client]?.keys.contains(key) ?? false }
    }

    func keys(of client: String) -> [String] {
        state.withLock { Array($0.clients[client]?.keys ?? []) }
    }

    /// True when the client's set has doubled since it was last pruned.
    func needsPrune(_ client: String) -> Bool {
        state.withLock { s in
            guard let c = s.clients[client] else { return false }
            return c.keys.count > 2 * c.prunedAt + 64
        }
    }

    /// Forgets keys found no longer pending. Subtracting (rather than keeping a snapshot of the
    /// active ones) never forgets a key committed while the center was being asked.
    func forget(_ client: String, inactive: Set<String>) {
        state.withLock { s in
            guard var c = s.clients[client] else { return }
            c.keys.subtract(inactive)
            c.prunedAt = c.keys.count
            if c.used == 0 { s.clients[client] = nil } else { s.clients[client] = c }
        }
    }

    /// True when the table has doubled since the last sweep: clients that went away (every
    /// `gdbus call` is a new client) would otherwise stay in it for ever.
    func needsSweep() -> Bool {
        state.withLock { $0.clients.count > 2 * $0.sweptAt + 64 }
    }

    func allKeys() -> Set<String> {
        state.withLock { s in s.clients.values.reduce(into: Set<String>()) { $0.formUnion($1.keys) } }
    }

    /// Forgets `inactive` keys everywhere, and every client left with nothing.
    func sweep(inactive: Set<String>) {
        state.withLock { s in
            for (name, var c) in s.clients {
                c.keys.subtract(inactive)
                s.clients[name] = c.used == 0 ? nil : c
            }
            s.sweptAt = s.clients.count
        }
    }

    /// How many clients are tracked (for tests).
    public var clientCount: Int { state.withLock { $0.clients.count } }
}
