import CDBus
import Dispatch
import Synchronization

/// A connection to a message bus (or a peer), with its own event-loop thread or hosted on a
/// loop the caller runs (`DBusLoopHost`).
///
/// All methods may be called from any thread or task. Closing (or dropping the last reference)
/// ends the loop thread; a lost bus surfaces as `Event.disconnected` on `events`.
public final class DBusConnection: Sendable {
    let core: ConnectionCore

    public enum Event: Sendable, Hashable {
        /// The bus made us primary owner of a well-known name.
        case nameAcquired(BusName)
        /// We lost a well-known name (released, or replaced by another owner): a service that
        /// relies on its name should react, e.g. by exiting or re-queueing.
        case nameLost(BusName)
        /// The connection is gone (bus died, peer closed, or `close()`); it will not come back.
        case disconnected
    }

    private init(core: ConnectionCore) { self.core = core }

    deinit { core.close() }

    // MARK: Opening

    /// `host`: run on that loop's thread instead of a thread of the connection's own (see
    /// `DBusLoopHost`); the same for every way of connecting below.
    ///
    /// `timeout`: how long the bus may take to authenticate this side and answer `Hello` (nil:
    /// libdbus's default, 25 s); past it the open throws `Timeout` naming the address. A socket
    /// that accepts connections and never answers is otherwise waited on forever.
    public static func session(host: (any DBusLoopHost)? = nil, timeout: Duration? = nil) async throws -> DBusConnection {
        try await open(.session, host: host, timeout: timeout)
    }

    public static func system(host: (any DBusLoopHost)? = nil, timeout: Duration? = nil) async throws -> DBusConnection {
        try await open(.system, host: host, timeout: timeout)
    }

    /// Connects to `address` (e.g. `unix:path=/run/...`); `registerWithBus` sends `Hello`,
    /// which a bus requires and a direct peer-to-peer connection must not do (without it,
    /// `timeout` has nothing to bound: each call's own timeout covers a silent peer).
    public static func connect(address: String, registerWithBus: Bool = true,
                               host: (any DBusLoopHost)? = nil, timeout: Duration? = nil) async throws -> DBusConnection {
        try await open(.address(address, register: registerWithBus), host: host, timeout: timeout)
    }

    /// Runs a connection a `DBusServer` accepted, on a thread of its own.
    static func adopt(accepted peer: RawHandle) async throws -> DBusConnection {
        try await open(.accepted(peer), host: nil, timeout: nil)
    }

    private static func open(_ target: ConnectTarget, host: (any DBusLoopHost)?, timeout: Duration?) async throws -> DBusConnection {
        let core = ConnectionCore(target: target, host: host, connectTimeoutMs: milliseconds(timeout))
        try await core.start()
        return DBusConnection(core: core)
    }

    /// The bus-assigned unique name (`:1.42`), nil for peer connections.
    public var uniqueName: BusName? { core.uniqueNameBox.withLock { $0 }.map { BusName(unchecked: $0) } }

    /// Whether the other end is a peer rather than a bus: then there are no names to take and
    /// no match rules to send (every signal the peer emits arrives).
    public var isPeerToPeer: Bool { core.target.isPeerToPeer }

    public var isConnected: Bool { core.connected.load(ordering: .acquiring) }

    /// Lifecycle events; each access gives an independent stream that ends after `.disconnected`.
    public var events: AsyncStream<Event> { core.makeEventStream() }

    /// Returns once the connection has ended (at once if it already has).
    public func waitUntilDisconnected() async {
        for await _ in core.makeEventStream() {}
    }

    /// Closes the connection; pending calls fail with `Disconnected`.
    public func close() { core.close() }

    /// Loop iterations so far. An idle connection does not iterate: tests use this to prove it.
    public var loopIterations: Int { core.loop.iterations.load(ordering: .relaxed) }

    // MARK: Calling

    static func milliseconds(_ d: Duration?) -> Int32 {
        guard let d else { return CDBUS_TIMEOUT_USE_DEFAULT }
        let (s, atto) = d.components
        if s < 0 { return 0 }
        let ms = s.multipliedReportingOverflow(by: 1000)
        if ms.overflow { return CDBUS_TIMEOUT_INFINITE - 1 }
        let total = ms.partialValue + atto / 1_000_000_000_000_000
        return Int32(clamping: min(total, Int64(CDBUS_TIMEOUT_INFINITE - 1)))
    }

    /// Sends `message` (a method call) and returns the reply body. A remote error throws that
    /// `DBusError`; no reply within `timeout` throws `NoReply`; task cancellation abandons it.
    public func send(call message: DBusMessage, timeout: Duration? = nil) async throws -> DBusMessage {
        struct CallState {
            var box: PendingReply?
            var cancelled = false
        }
        let holder = Mutex(CallState())
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (c: CheckedContinuation<DBusMessage, any Error>) in
                let box = PendingReply { c.resume(with: $0.mapError { $0 as any Error }) }
                let cancelled = holder.withLock { s in
                    s.box = box
                    return s.cancelled
                }
                if cancelled {
                    box.complete(.failure(DBusError(.cancelled, "call cancelled")))
                } else {
                    core.call(message, timeoutMs: Self.milliseconds(timeout), box: box)
                }
            }
        } onCancel: {
            let box = holder.withLock { s in
                s.cancelled = true
                return s.box
            }
            if let box { core.loop.enqueue { _ in box.cancel() } }
        }
    }

    /// Calls a method and returns the reply's arguments.
    public func call(
        destination: BusName?, path: ObjectPath, interface: InterfaceName?, member: MemberName,
        arguments: [DBusValue] = [], timeout: Duration? = nil
    ) async throws -> [DBusValue] {
        let message = try DBusMessage.methodCall(
            destination: destination, path: path, interface: interface, member: member, arguments: arguments)
        return try await send(call: message, timeout: timeout).arguments()
    }

    /// The blocking variant, for code that is not async. Must not be called from a method
    /// handler's loop thread (it would wait on itself); that case throws instead of hanging.
    public func callBlocking(
        destination: BusName?, path: ObjectPath, interface: InterfaceName?, member: MemberName,
        arguments: [DBusValue] = [], timeout: Duration? = nil
    ) throws -> [DBusValue] {
        if core.loop.isOnLoopThread {
            throw DBusError(.failed, "callBlocking on the D-Bus loop thread would deadlock")
        }
        let message = try DBusMessage.methodCall(
            destination: destination, path: path, interface: interface, member: member, arguments: arguments)
        let done = DispatchSemaphore(value: 0)
        let result = Mutex<Result<DBusMessage, DBusError>?>(nil)
        let box = PendingReply { r in
            result.withLock { $0 = r }
            done.signal()
        }
        core.call(message, timeoutMs: Self.milliseconds(timeout), box: box)
        done.wait()
        switch result.withLock({ $0 }) {
        case .success(let reply): return try reply.arguments()
        case .failure(let error): throw error
        case nil: throw DBusError(.failed, "no result")
        }
    }

    /// Sends a message without waiting (signals, or calls whose reply does not matter).
    public func send(_ message: DBusMessage) {
        core.send(message)
    }

    /// Sends messages in order in one pass of the loop thread: one wake-up and one write burst
    /// for a thousand signals, instead of a job each.
    public func send(_ messages: [DBusMessage]) {
        core.send(messages)
    }

    /// Sends messages as `send(_:)` does, and calls `departed` once every one of them has left
    /// this process: `written` true when they were written to the bus's socket, false when the
    /// connection was closed or lost first (libdbus then drops what it still queues), or when
    /// libdbus would not queue one. Until then a process killed loses what libdbus still queues,
    /// so a caller that records the messages as delivered does so only after this. `written` is
    /// judged when the last one leaves: a connection lost between the write and that judgement
    /// reports written messages as dropped, never the reverse. `departed` runs once, on the
    /// connection's loop thread (at once, once the connection has ended). Each message may be
    /// sent this way once, and the caller must not keep them: a reference held keeps one from
    /// departing.
    public func send(_ messages: [DBusMessage], departed: @escaping @Sendable (_ written: Bool) -> Void) {
        let tracker = DepartureTracker(count: messages.count + 1, loop: core.loop, departed: departed)
        for m in messages { m.track(tracker) }
        core.send(messages, refused: { tracker.messageRefused() })
        // The send's own share: an empty send departs at once, as judged on the loop.
        tracker.messageLeft()
    }

    // MARK: Signals

    /// The largest message this connection sends, in bytes (default: the protocol's 128 MiB).
    /// Set it to the bus's `max_message_size` when that is lower: a reply over it is answered
    /// with `LimitsExceeded` instead, a signal over it throws, an error text is cut to fit.
    public var maxMessageSize: Int {
        get { core.maxMessageSize.load(ordering: .relaxed) }
        set { core.maxMessageSize.store(min(max(newValue, 4096), DBusWireSize.messageMaximum), ordering: .relaxed) }
    }

    /// Emits a signal; arguments are validated first and invalid ones throw, as does a signal
    /// larger than `maxMessageSize`.
    public func emit(
        path: ObjectPath, interface: InterfaceName, member: MemberName, arguments: [DBusValue] = [],
        destination: BusName? = nil
    ) throws {
        if let problem = DBusWireSize.problem(arguments, limit: maxMessageSize) {
            throw DBusError(.limitsExceeded, "signal \(member) is too large to send: \(problem)")
        }
        core.send(try DBusMessage.signal(
            path: path, interface: interface, member: member, arguments: arguments, destination: destination))
    }

    /// Emits `org.freedesktop.DBus.Properties.PropertiesChanged`.
    public func emitPropertiesChanged(
        path: ObjectPath, interface: InterfaceName, changed: [String: DBusValue], invalidated: [String] = []
    ) throws {
        try emit(
            path: path, interface: .properties, member: "PropertiesChanged",
            arguments: [
                .string(interface.rawValue),
                .vardict(changed.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }),
                .array(.string, invalidated.map { .string($0) }),
            ])
    }

    /// Subscribes to signals matching `rule`. The local route is installed before `AddMatch`
    /// is sent, so once this returns no matching signal is missed.
    public func subscribe(_ rule: MatchRule) async throws -> DBusSignalSubscription {
        try rule.validate()
        let id = nextSubscriptionID.add(1, ordering: .relaxed).newValue
        let (stream, continuation) = AsyncStream<DBusSignal>.makeStream(bufferingPolicy: .unbounded)
        let installed: Bool = await withCheckedContinuation { c in
            core.onLoop { core, conn in
                guard conn != nil else {
                    continuation.finish()
                    c.resume(returning: false)
                    return
                }
                core.subscriptions[id] = Subscription(rule: rule, continuation: continuation)
                c.resume(returning: true)
            }
        }
        guard installed else { throw DBusError(.disconnected, "connection is closed") }
        let subscription = DBusSignalSubscription(stream: stream, id: id, rule: rule, connection: self)
        if isPeerToPeer { return subscription }
        do {
            _ = try await busCall("AddMatch", [.string(rule.description)])
        } catch {
            subscription.cancel()
            throw error
        }
        return subscription
    }

    func unsubscribe(id: UInt64, rule: MatchRule) {
        core.onLoop { core, conn in
            guard let sub = core.subscriptions.removeValue(forKey: id) else { return }
            sub.continuation.finish()
            guard let conn, !core.target.isPeerToPeer, let message = try? DBusMessage.methodCall(
                destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: .bus,
                member: "RemoveMatch", arguments: [.string(rule.description)]) else { return }
            dbus_message_set_no_reply(message.raw, 1)
            ConnectionCore.sendNow(conn, message)
        }
    }

    // MARK: Exporting

    /// Serves `object` at `path`, replacing what was there. Peer (Ping, GetMachineId) is
    /// answered by libdbus itself for every path; Introspectable and Properties come from here.
    public func export(_ object: DBusExportedObject, at path: ObjectPath) async throws {
        let ok: Bool = await withCheckedContinuation { c in
            core.onLoop { core, conn in
                if conn != nil { core.objects[path] = object }
                c.resume(returning: conn != nil)
            }
        }
        if !ok { throw DBusError(.disconnected, "connection is closed") }
    }

    public func unexport(_ path: ObjectPath) async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            core.onLoop { core, _ in
                core.objects[path] = nil
                c.resume()
            }
        }
    }

    // MARK: The bus driver

    func busCall(_ member: MemberName, _ arguments: [DBusValue]) async throws -> [DBusValue] {
        try await call(
            destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: .bus, member: member,
            arguments: arguments)
    }

    public struct NameFlags: OptionSet, Sendable {
        public let rawValue: UInt32
        public init(rawValue: UInt32) { self.rawValue = rawValue }
        public static let allowReplacement = NameFlags(rawValue: CDBUS_NAME_FLAG_ALLOW_REPLACEMENT)
        public static let replaceExisting = NameFlags(rawValue: CDBUS_NAME_FLAG_REPLACE_EXISTING)
        public static let doNotQueue = NameFlags(rawValue: CDBUS_NAME_FLAG_DO_NOT_QUEUE)
    }

    public enum NameRequestResult: Sendable, Hashable {
        case primaryOwner, alreadyOwner, inQueue
    }

    /// Requests a well-known name. If someone else owns it (and we did not queue), throws
    /// `NameTaken` naming the owner's unique name and, when the bus tells, its process id.
    @discardableResult
    public func requestName(_ name: BusName, flags: NameFlags = [.doNotQueue]) async throws -> NameRequestResult {
        let reply = try await busCall("RequestName", [.string(name.rawValue), .uint32(flags.rawValue)])
        let code = try reply.first.map { v throws(DBusError) in try v.asUInt32() } ?? 0
        switch code {
        case CDBUS_REQUEST_NAME_REPLY_PRIMARY_OWNER: return .primaryOwner
        case CDBUS_REQUEST_NAME_REPLY_ALREADY_OWNER: return .alreadyOwner
        case CDBUS_REQUEST_NAME_REPLY_IN_QUEUE: return .inQueue
        default:
            var who = "another connection"
            if let owner = try? await nameOwner(name) {
                who = owner.rawValue
                if let pid = try? await unixProcessID(of: owner) { who += " (pid \(pid))" }
            }
            throw DBusError(.nameTaken, "bus name \(name) is already owned by \(who)")
        }
    }

    public func releaseName(_ name: BusName) async throws {
        _ = try await busCall("ReleaseName", [.string(name.rawValue)])
    }

    /// The unique name owning `name`, or nil when nobody does.
    public func nameOwner(_ name: BusName) async throws -> BusName? {
        do {
            let reply = try await busCall("GetNameOwner", [.string(name.rawValue)])
            return try BusName(try (reply.first ?? .string("")).asString())
        } catch let e as DBusError where e.code == .nameHasNoOwner {
            return nil
        }
    }

    public func unixProcessID(of name: BusName) async throws -> UInt32 {
        let reply = try await busCall("GetConnectionUnixProcessID", [.string(name.rawValue)])
        return try (reply.first ?? .uint32(0)).asUInt32()
    }
}

let nextSubscriptionID = Atomic<UInt64>(0)

/// Signals matching one rule, in arrival order. Ends when cancelled or disconnected;
/// cancelling (or dropping the last iterator's stream) removes the bus match.
public final class DBusSignalSubscription: AsyncSequence, Sendable {
    public typealias Element = DBusSignal
    let stream: AsyncStream<DBusSignal>
    let id: UInt64
    public let rule: MatchRule
    private let connection: DBusConnection

    init(stream: AsyncStream<DBusSignal>, id: UInt64, rule: MatchRule, connection: DBusConnection) {
        self.stream = stream
        self.id = id
        self.rule = rule
        self.connection = connection
    }

    public func makeAsyncIterator() -> AsyncStream<DBusSignal>.Iterator { stream.makeAsyncIterator() }

    public func cancel() { connection.unsubscribe(id: id, rule: rule) }

    deinit { connection.unsubscribe(id: id, rule: rule) }
}
