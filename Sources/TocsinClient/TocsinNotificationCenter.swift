public import DBus
public import FoundationEssentials
import Synchronization

/// The daemon's notification center, as an app sees it: `UNUserNotificationCenter`'s shape over
/// the gateway's D-Bus API.
///
/// Named so that it does not clash with Foundation's `NotificationCenter`, which every app that
/// imports Foundation already has in scope. An actor: one connection and one set of keys per
/// center, used from any task. Method calls carry D-Bus's auto-start flag, so a daemon installed
/// with its activation file (`contrib/dbus/`) is started by the first call that needs it.
public actor TocsinNotificationCenter: TocsinNotifying {
    /// Which bus the daemon is on.
    public enum Bus: Sendable, Hashable {
        /// The user's session bus (where the daemon normally runs), or the system bus.
        case session, system
        /// A bus address (`unix:path=...`), for private buses and tests.
        case address(String)
    }

    /// The daemon's well-known name, for apps that watch it themselves.
    public static let busName: BusName = "io.github.tocsin.Gateway"
    /// The gateway object.
    public static let objectPath: ObjectPath = "/io/github/tocsin/Gateway"
    /// The gateway interface; its version is in the name.
    public static let interface: InterfaceName = "io.github.tocsin.Gateway1"

    /// Fixed per center: a center that moved buses would mix two daemons' keys.
    public nonisolated let bus: Bus
    /// Notifications asked for per `ListPage` call; the daemon answers at most 10000 and fewer
    /// when a page would not fit one message.
    public nonisolated let pageSize: Int
    /// How long a call waits for the daemon's answer (then `.daemonUnavailable`), and opening
    /// the connection for the bus's (then `.bus`, naming the address); nil: libdbus's 25 s. A bus
    /// socket that accepts the connection and never answers would otherwise hold the first call
    /// forever.
    public nonisolated let timeout: Duration?
    private var connection: DBusConnection?
    private var opening: Task<DBusConnection, any Error>?
    /// The keys this center added or posted, read by its event streams' filters.
    nonisolated let keys = KeyRegistry()

    /// Connects lazily, on the first call: creating a center never fails.
    public init(bus: Bus = .session, pageSize: Int = 10_000, timeout: Duration? = nil) {
        self.bus = bus
        self.pageSize = min(max(pageSize, 1), 10_000)
        self.timeout = timeout
    }

    // MARK: Scheduling

    /// Validates first, then `Schedule`; the key counts as this center's before the call.
    public func add(_ request: NotificationRequest) async throws(TocsinClientError) {
        try request.validate()
        // Known before the call: the daemon's first event for it may come before the reply.
        keys.insert(request.key)
        _ = try await call("Schedule", [Wire.spec(request)])
    }

    /// `PostNow`; a key is made up here when none is given, so its events are known to be this
    /// center's. `replacesExisting` false sends `replace: false`: the daemon keeps a pending
    /// notification with the key, posts nothing, and answers the key.
    @discardableResult
    public func post(_ content: NotificationContent, key: String?, replacesExisting: Bool) async throws(TocsinClientError) -> String {
        let key = key ?? madeUpKey()
        try RequestRules.key(key)
        try RequestRules.content(content)
        keys.insert(key)
        var spec = Wire.spec(content, key: key)
        if !replacesExisting { spec.append(("replace", .boolean(false))) }
        let reply = try await call("PostNow", [.vardict(spec)])
        return try Self.string(reply, or: key)
    }

    /// `ListPage` until the daemon says there is no more: a page per call, every notification once.
    public func pending() async throws(TocsinClientError) -> [PendingNotification] {
        var out: [PendingNotification] = []
        var cursor = ""
        repeat {
            let reply = try await call("ListPage", [.string(cursor), .uint32(UInt32(pageSize))])
            guard reply.count == 2, case .array(_, let items) = reply[0], case .string(let next) = reply[1] else {
                throw TocsinClientError(.unexpectedReply, "ListPage answered \(reply.map(\.type))")
            }
            out.reserveCapacity(out.count + items.count)
            for item in items { out.append(try Wire.pending(item)) }
            cursor = next
        } while !cursor.isEmpty
        return out
    }

    /// One `Cancel` per key, in order.
    @discardableResult
    public func remove(keys: [String]) async throws(TocsinClientError) -> [String] {
        for key in keys { try RequestRules.key(key) }
        var removed: [String] = []
        for key in keys {
            if try Self.bool(await call("Cancel", [.string(key)])) { removed.append(key) }
        }
        return removed
    }

    /// `CancelAll`: every client's notifications, not only this center's.
    @discardableResult
    public func removeAll() async throws(TocsinClientError) -> Int {
        let reply = try await call("CancelAll", [])
        guard case .uint32(let n)? = reply.first else { throw TocsinClientError(.unexpectedReply, "CancelAll answered \(reply.map(\.type))") }
        return Int(n)
    }

    // MARK: Answering

    /// `Acknowledge`.
    @discardableResult
    public func acknowledge(key: String) async throws(TocsinClientError) -> Bool {
        try RequestRules.key(key)
        return try Self.bool(await call("Acknowledge", [.string(key)]))
    }

    /// `Snooze`; nil uses the daemon's default.
    @discardableResult
    public func snooze(key: String, for duration: Duration?) async throws(TocsinClientError) -> Date {
        try NotificationRequest.validate(key: key, snoozeDuration: duration)
        let reply = try await call("Snooze", [.string(key), .string(duration?.systemdText ?? "")])
        guard case .int64(let us)? = reply.first else { throw TocsinClientError(.unexpectedReply, "Snooze answered \(reply.map(\.type))") }
        return Date(unixMicroseconds: us)
    }

    // MARK: Reading

    /// `History`; the daemon answers at most what fits one message.
    public func history(_ query: HistoryQuery) async throws(TocsinClientError) -> [HistoryEntry] {
        try query.validate()
        var filter: [(String, DBusValue)] = []
        if let key = query.key { filter.append(("key", .string(key))) }
        if let since = query.since { filter.append(("since", .int64(since.unixMicroseconds))) }
        filter.append(("limit", .uint32(UInt32(clamping: query.limit))))
        let reply = try await call("History", [.vardict(filter)])
        guard case .array(_, let items)? = reply.first else { throw TocsinClientError(.unexpectedReply, "History answered \(reply.map(\.type))") }
        var out: [HistoryEntry] = []
        for item in items { out.append(try Wire.history(item)) }
        return out
    }

    /// `Status`.
    public func status() async throws(TocsinClientError) -> DaemonStatus {
        try Wire.status(try Self.first(await call("Status", []), "Status"))
    }

    // MARK: Quiet hours

    /// `QuietOn`; answers once the state is durable.
    public func quietOn(_ duration: QuietDuration) async throws(TocsinClientError) -> QuietState {
        try duration.validate()
        let args: (String, String)
        switch duration {
        case .indefinitely: args = ("", "")
        case .duration(let d): args = (d.systemdText, "")
        case .until(let date): args = ("", Wire.instant(date))
        }
        return try Wire.quiet(try Self.first(await call("QuietOn", [.string(args.0), .string(args.1)]), "QuietOn"))
    }

    /// `QuietOff`: what was held is delivered.
    public func quietOff() async throws(TocsinClientError) -> QuietState {
        try Wire.quiet(try Self.first(await call("QuietOff", []), "QuietOff"))
    }

    /// `QuietStatus`.
    public func quietState() async throws(TocsinClientError) -> QuietState {
        try Wire.quiet(try Self.first(await call("QuietStatus", []), "QuietStatus"))
    }

    // MARK: Events

    /// A new subscription per stream; see `EventPump` for how it outlives restarts.
    public func events(_ scope: EventScope) async throws(TocsinClientError) -> AsyncStream<NotificationEvent> {
        let pump = EventPump(filter: EventFilter(scope: scope, keys: keys)) { () throws(TocsinClientError) in
            try await self.connection()
        }
        return try await pump.start()
    }

    // MARK: The connection

    /// The open connection, or a new one when there is none or the bus dropped the last. Calls
    /// that arrive while it is being opened wait for the same one (the actor is reentrant at
    /// every `await`): one client, one unique name, one quota at the daemon.
    func connection() async throws(TocsinClientError) -> DBusConnection {
        if let connection, connection.isConnected { return connection }
        let opening: Task<DBusConnection, any Error>
        if let current = self.opening {
            opening = current
        } else {
            let (bus, timeout) = (self.bus, self.timeout)
            opening = Task {
                switch bus {
                case .session: try await DBusConnection.session(timeout: timeout)
                case .system: try await DBusConnection.system(timeout: timeout)
                case .address(let a): try await DBusConnection.connect(address: a, timeout: timeout)
                }
            }
            self.opening = opening
        }
        do {
            let c = try await opening.value
            if self.opening == opening { self.opening = nil }
            connection = c
            return c
        } catch {
            if self.opening == opening { self.opening = nil }
            if Task.isCancelled { throw TocsinClientError(.cancelled, "cancelled while connecting to the bus") }
            throw TocsinClientError(.bus, "cannot connect to the bus: \(error)")
        }
    }

    private func call(_ member: MemberName, _ arguments: [DBusValue]) async throws(TocsinClientError) -> [DBusValue] {
        let c = try await connection()
        do {
            return try await c.call(destination: Self.busName, path: Self.objectPath, interface: Self.interface,
                                    member: member, arguments: arguments, timeout: timeout)
        } catch let e as DBusError {
            throw TocsinClientError.fromDaemon(name: e.name, message: e.message)
        } catch {
            if error is CancellationError || Task.isCancelled { throw TocsinClientError(.cancelled, "\(member): cancelled") }
            throw TocsinClientError(.bus, "\(member): \(error)")
        }
    }

    private static func bool(_ reply: [DBusValue]) throws(TocsinClientError) -> Bool {
        guard case .boolean(let b)? = reply.first else { throw TocsinClientError(.unexpectedReply, "expected a boolean, got \(reply.map(\.type))") }
        return b
    }

    private static func string(_ reply: [DBusValue], or fallback: String) throws(TocsinClientError) -> String {
        guard case .string(let s)? = reply.first else { throw TocsinClientError(.unexpectedReply, "expected a string, got \(reply.map(\.type))") }
        return s.isEmpty ? fallback : s
    }

    private static func first(_ reply: [DBusValue], _ member: String) throws(TocsinClientError) -> DBusValue {
        guard let v = reply.first else { throw TocsinClientError(.unexpectedReply, "\(member) answered nothing") }
        return v
    }
}

/// Keys a center scheduled, shared with its event streams' filters (which run off the actor).
final class KeyRegistry: Sendable {
    private let keys = Mutex<Set<String>>([])
    func insert(_ key: String) { _ = keys.withLock { $0.insert(key) } }
    func contains(_ key: String) -> Bool { keys.withLock { $0.contains(key) } }
}

/// Decides which events a stream passes.
struct EventFilter: Sendable {
    let scope: EventScope
    let keys: KeyRegistry

    func passes(_ event: NotificationEvent) -> Bool {
        guard let key = event.key else { return true }
        switch scope {
        case .all: return true
        case .mine: return keys.contains(key)
        case .keys(let set): return set.contains(key)
        }
    }
}
