import DBus
import Glibc
import Synchronization
import TocsinSystem

/// Who a caller is for `[daemon] max_pending_per_client`: the process behind the connection.
///
/// A unique bus name lasts one connection, so a quota keyed by it is evaded by reconnecting (one
/// process with six successive connections filled a global limit of 20 at 5 each). The bus knows
/// the peer's uid and pid (`GetConnectionCredentials`); the pid with the process's start time
/// (from `/proc`, so a reused pid is a new client) names one process for its whole life,
/// whichever connections it opens. What this does not stop, and docs/CONFIG.md says so: a user who
/// starts new processes gets a new quota each time; `max_pending` bounds them all.
final class ClientIdentities: Sendable {
    /// Resolved unique names, for the connection they were resolved on. Unique names are never
    /// reused on one bus, but a bus that restarts hands out `:1.7` again: a new connection starts
    /// afresh. Cleared when full too, which keeps a long-lived daemon's memory flat.
    private struct Cache {
        var connection: ObjectIdentifier?
        var owners: [String: String] = [:]
        /// Senders with a call that asks the bus for their owner, or with calls queued behind it.
        var lanes: [String: Lane] = [:]
    }

    /// One sender's calls, from the one that asks the bus for its owner until the last call
    /// queued behind it has had its turn. Each call is let go by the one before it, once that
    /// one runs: releasing them all at the answer would put them behind calls of the same sender
    /// already dispatched to the loop, which would then pass them.
    private struct Lane {
        /// The asking call, until the answer comes.
        var asking: CheckedContinuation<String, Never>?
        /// The answer, once it came.
        var owner: String?
        /// Calls waiting their turn, in the order they came.
        var queue: [CheckedContinuation<String, Never>] = []
    }
    private let cache = Mutex(Cache())
    static let cacheLimit = 4096

    init() {}

    /// Returns once the calls `sender` made before this one have gone on: at once, unless one of
    /// them waits for the bus to say who the sender is. A client's calls take effect in the order
    /// it sent them; without this, a client's first `Schedule` (which waits for that answer) took
    /// effect after the `Cancel` sent right behind it, which found nothing, and the notification
    /// fired.
    func inTurn(_ sender: String) async {
        guard mustWait(sender) else { return }
        // The owner a queued call is let go with is for `owner(of:)` callers; this one needs only
        // its turn.
        var queued = false
        _ = await withCheckedContinuation { (c: CheckedContinuation<String, Never>) in
            queued = cache.withLock { s in
                guard s.lanes[sender] != nil else { return false }
                s.lanes[sender]!.queue.append(c)
                return true
            }
            if !queued { c.resume(returning: sender) }
        }
        if queued { handOver(sender) }
    }

    /// Whether a call of `sender` has to wait its turn (`inTurn`): checked without an `async`
    /// call on every call, since almost none has to.
    func mustWait(_ sender: String) -> Bool { cache.withLock { !$0.lanes.isEmpty && $0.lanes[sender] != nil } }

    /// The quota owner of `sender`: `uid=U pid=P start=T`, or the unique name itself when the bus
    /// will not say (a bus without credentials support, a peer that is already gone).
    func owner(of sender: String, on connection: DBusConnection?) async -> String {
        guard let connection else { return sender }
        return await owner(of: sender, scope: ObjectIdentifier(connection)) {
            guard let reply = try? await connection.call(
                destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
                member: "GetConnectionCredentials", arguments: [.string(sender)], timeout: .seconds(5)).first else { return sender }
            return Self.owner(credentials: reply) ?? sender
        }
    }

    /// `owner(of:on:)` with the bus's answer as `lookup`, which runs once per sender and scope
    /// however many calls arrive before it answers (a client's first burst, 64 calls in flight,
    /// asked the bus 64 times and read `/proc` 64 times).
    func owner(of sender: String, scope: ObjectIdentifier, lookup: @escaping @Sendable () async -> String) async -> String {
        if let known = cache.withLock({ s in s.connection == scope ? s.owners[sender] : nil }) { return known }
        enum Then { case known(String), ask, wait }
        var then = Then.ask
        let owner = await withCheckedContinuation { (c: CheckedContinuation<String, Never>) in
            then = cache.withLock { s in
                if s.connection != scope {
                    s.owners.removeAll(keepingCapacity: true)
                    s.connection = scope
                }
                if let known = s.owners[sender] { return .known(known) }
                if s.lanes[sender] != nil {
                    s.lanes[sender]!.queue.append(c)
                    return .wait
                }
                s.lanes[sender] = Lane(asking: c)
                return .ask
            }
            switch then {
            case .known(let owner): c.resume(returning: owner)
            case .wait: break
            case .ask: Task { self.answer(sender, scope: scope, owner: await lookup()) }
            }
        }
        // Asked or queued: this call's turn has come, and the next one's comes after it.
        if case .known = then {} else { handOver(sender) }
        return owner
    }

    /// Lets the asking call go on; it lets the next one go (`handOver`). An answer for a
    /// connection since replaced is not kept: a call of the same unique name on the new bus that
    /// queued meanwhile gets it (the old bus's lookup fails, and the unique name is the owner).
    private func answer(_ sender: String, scope: ObjectIdentifier, owner: String) {
        let asking: CheckedContinuation<String, Never>? = cache.withLock { s in
            if s.connection == scope {
                if s.owners.count >= Self.cacheLimit { s.owners.removeAll(keepingCapacity: true) }
                s.owners[sender] = owner
            }
            s.lanes[sender]?.owner = owner
            defer { s.lanes[sender]?.asking = nil }
            return s.lanes[sender]?.asking
        }
        asking?.resume(returning: owner)
    }

    /// A call whose turn came lets the next one of its sender go, which runs after it has gone
    /// on (the loop runs jobs in order); the last one closes the lane.
    private func handOver(_ sender: String) {
        let next: (CheckedContinuation<String, Never>, String)? = cache.withLock { s in
            guard var lane = s.lanes[sender], lane.asking == nil else { return nil }
            guard !lane.queue.isEmpty else {
                s.lanes[sender] = nil
                return nil
            }
            let next = lane.queue.removeFirst()
            s.lanes[sender] = lane
            return (next, lane.owner ?? sender)
        }
        if let (c, owner) = next { c.resume(returning: owner) }
    }

    /// Calls of `sender` queued behind the one asking for its owner; for tests.
    func waitingCount(_ sender: String) -> Int { cache.withLock { $0.lanes[sender]?.queue.count ?? 0 } }

    /// From the bus's `a{sv}` credentials; nil without a process id.
    static func owner(credentials: DBusValue) -> String? {
        guard case .dictionary(_, _, let entries) = credentials else { return nil }
        var uid: UInt32?, pid: UInt32?
        for e in entries {
            guard case .string(let name) = e.key, case .variant(let v) = e.value, case .uint32(let x) = v else { continue }
            if name == "UnixUserID" { uid = x }
            if name == "ProcessID" { pid = x }
        }
        guard let pid else { return nil }
        let start = ProcessStat.read(pid_t(bitPattern: pid)).map { " start=\($0.startTime)" } ?? ""
        return "uid=\(uid.map(String.init) ?? "?") pid=\(pid)\(start)"
    }
}
