import DBus
import Glibc
import Synchronization

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
        /// Lookups under way. A client's first calls all arrive before the first answer (a
        /// burst of 64 in flight asked the bus 64 times for the same credentials, and read
        /// `/proc` 64 times): the later ones wait for the one already asked.
        var asking: [String: Task<String, Never>] = [:]
    }
    private let cache = Mutex(Cache())
    static let cacheLimit = 4096

    init() {}

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
    /// however many callers ask at once.
    func owner(of sender: String, scope: ObjectIdentifier, lookup: @escaping @Sendable () async -> String) async -> String {
        enum Known { case owner(String), asked(Task<String, Never>) }
        let known: Known = cache.withLock { c in
            if c.connection != scope {
                c.owners.removeAll(keepingCapacity: true)
                c.asking.removeAll()
                c.connection = scope
            }
            if let owner = c.owners[sender] { return .owner(owner) }
            if let asking = c.asking[sender] { return .asked(asking) }
            let asking = Task { await lookup() }
            c.asking[sender] = asking
            return .asked(asking)
        }
        let asked: Task<String, Never>
        switch known {
        case .owner(let owner): return owner
        case .asked(let task): asked = task
        }
        let owner = await asked.value
        cache.withLock { c in
            // A lookup for a connection since replaced answers its callers but is not kept.
            guard c.connection == scope, c.asking.removeValue(forKey: sender) != nil else { return }
            if c.owners.count >= Self.cacheLimit { c.owners.removeAll(keepingCapacity: true) }
            c.owners[sender] = owner
        }
        return owner
    }

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
        let start = processStartTime(pid).map { " start=\($0)" } ?? ""
        return "uid=\(uid.map(String.init) ?? "?") pid=\(pid)\(start)"
    }

    /// Field 22 of `/proc/PID/stat` (clock ticks after boot), read past the `comm` field, which
    /// may itself hold spaces and parentheses.
    static func processStartTime(_ pid: UInt32) -> String? {
        let fd = open("/proc/\(pid)/stat", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 1024)
        let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        guard n > 0 else { return nil }
        let text = buffer[..<n]
        guard let close = text.lastIndex(of: UInt8(ascii: ")")) else { return nil }
        // After ") " come fields 3, 4, ...: the start time is the 20th of them.
        let fields = text[(close + 1)...].split(separator: UInt8(ascii: " "))
        guard fields.count >= 20 else { return nil }
        return String(decoding: fields[19], as: UTF8.self)
    }
}
