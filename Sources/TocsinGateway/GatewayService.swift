public import DBus
import Logging
import Glibc
import Synchronization
import TocsinConfig
public import TocsinCore
public import TocsinTime
public import TocsinModel
import TocsinSystem

/// The `io.github.tocsin.Gateway1` object: maps method calls onto the center and the center's
/// events onto signals. It outlives bus connections: after a reconnect the daemon attaches the
/// new connection and the same service goes on.
public final class GatewayService: Sendable {
    /// Reloads the config; returns nil on success, else why not: `invalidConfig` with the
    /// rendered diagnostics, or `stopping`.
    public typealias Reloader = @Sendable () async -> CenterError?

    private let center: TocsinCenter
    private let reloader: Reloader
    let link: BusLink
    private let perClientLimit: Int
    private let limits: SpecLimits
    /// `[daemon] max_message_size`: no reply is larger, and `ListPage` fills pages up to it.
    let maxMessageSize: Int
    private let info: DaemonInfo
    /// nil when the center was started before the gateway was made; else open once `startEnded`.
    private let startup: StartWait?
    private let identities = ClientIdentities()
    private let replies = ReplyGate()

    /// `maxPendingPerClient` is `[daemon] max_pending_per_client`; `limits` bound a request
    /// (`min_period` among them) as they bound the config file; `info` is what `Status` reports
    /// about the process. With `servedBeforeStart`, every call waits until `startEnded`: the daemon
    /// serves the API before the state is loaded and the config applied.
    public init(center: TocsinCenter, link: BusLink, maxPendingPerClient: Int = DaemonKeys.maxPendingPerClient.defaultValue,
                limits: SpecLimits = SpecLimits(), maxMessageSize: Int = DaemonSetup.unconfiguredBusLimit,
                info: DaemonInfo = DaemonInfo(), servedBeforeStart: Bool = false, reload: @escaping Reloader) {
        self.center = center
        self.reloader = reload
        self.link = link
        self.perClientLimit = max(1, maxPendingPerClient)
        self.limits = limits
        self.maxMessageSize = maxMessageSize
        self.info = info
        self.startup = servedBeforeStart ? StartWait(gate: StartGate(), logger: link.logger) : nil
    }

    /// Answers the calls that waited for start-up: served, or refused when start-up failed.
    public func startEnded(ok: Bool) { startup?.gate.end(ok) }

    // MARK: Interface

    public static let signals: [DBusSignalDeclaration] = [
        DBusSignalDeclaration("Fired", signature: "sa{sv}", argumentNames: ["key", "info"]),
        DBusSignalDeclaration("ActionInvoked", signature: "ssa{ss}", argumentNames: ["key", "action", "user_info"]),
        DBusSignalDeclaration("Acknowledged", signature: "s", argumentNames: ["key"]),
        DBusSignalDeclaration("Snoozed", signature: "sx", argumentNames: ["key", "until"]),
        DBusSignalDeclaration("Cancelled", signature: "s", argumentNames: ["key"]),
        DBusSignalDeclaration("Missed", signature: "sx", argumentNames: ["key", "due"]),
        DBusSignalDeclaration("Unanswered", signature: "su", argumentNames: ["key", "rings"]),
        DBusSignalDeclaration("CancelledAll", signature: "u", argumentNames: ["count"]),
        DBusSignalDeclaration("Interrupted", signature: "sxuas", argumentNames: ["key", "due", "occurrence", "backends"]),
        DBusSignalDeclaration("QuietChanged", signature: "ba{sv}", argumentNames: ["active", "quiet"]),
    ]

    public static let properties: [DBusPropertyDeclaration] = [
        DBusPropertyDeclaration("Version", type: .string),
        DBusPropertyDeclaration("Backends", type: .array(.string)),
        DBusPropertyDeclaration("Pending", type: .uint32),
        DBusPropertyDeclaration("Quiet", type: .dictionary(key: .string, value: .variant)),
    ]

    /// The interface table: routing, signature checks and the introspection XML come from it.
    public var interface: DBusInterface {
        let center = self.center
        let reloader = self.reloader
        let limit = self.perClientLimit
        let limits = self.limits
        let maxMessageSize = self.maxMessageSize
        let info = self.info
        let identities = self.identities
        let replies = self.replies
        let link = self.link
        let methods: [DBusMethod] = [
            DBusMethod("Schedule", input: "a{sv}", output: "s", inputNames: ["spec"], outputNames: ["key"]) { call in
                let spec = try SpecDecoding.decode(call.arguments[0], requireTrigger: true, limits: limits)
                let client = await Self.client(call, limit: limit, identities: identities, link: link)
                return [.string(try await Self.run { () throws(CenterError) in try await center.schedule(spec, client: client) })]
            },
            DBusMethod("Cancel", input: "s", output: "b", inputNames: ["key"], outputNames: ["existed"]) { call in
                let key = try call.arguments[0].asString()
                return [.boolean(try await Self.run { () throws(CenterError) in try await center.cancel(key) })]
            },
            DBusMethod("CancelAll", output: "u", outputNames: ["count"]) { _ in
                let n = try await Self.run { () throws(CenterError) in try await center.cancelAll() }
                return [.uint32(UInt32(clamping: n))]
            },
            DBusMethod("List", output: "aa{sv}", outputNames: ["notifications"]) { call in
                try await replies.run("List") { () throws(DBusError) in try await Self.listAll(center, maxMessageSize: maxMessageSize, call: call) }
            },
            DBusMethod("ListPage", input: "su", output: "aa{sv}s", inputNames: ["after", "limit"],
                       outputNames: ["notifications", "next"]) { call in
                let after = try call.arguments[0].asString()
                let limit = try call.arguments[1].asUInt32()
                return try await replies.run("ListPage") { () throws(DBusError) in
                    try await Self.listPage(center, after: after, requested: limit, maxMessageSize: maxMessageSize, call: call)
                }
            },
            DBusMethod("PostNow", input: "a{sv}", output: "s", inputNames: ["spec"], outputNames: ["key"]) { call in
                let spec = try SpecDecoding.decodePost(call.arguments[0], limits: limits)
                let client = await Self.client(call, limit: limit, identities: identities, link: link)
                return [.string(try await Self.run { () throws(CenterError) in try await center.postNow(spec, client: client) })]
            },
            DBusMethod("Acknowledge", input: "s", output: "b", inputNames: ["key"], outputNames: ["was_alerting"]) { call in
                let key = try call.arguments[0].asString()
                return [.boolean(try await Self.run { () throws(CenterError) in try await center.acknowledge(key) })]
            },
            DBusMethod("Snooze", input: "ss", output: "x", inputNames: ["key", "duration"], outputNames: ["until"]) { call in
                let key = try call.arguments[0].asString()
                let text = try call.arguments[1].asString()
                var duration: TimeSpan?
                if !text.isEmpty {
                    do throws(TimeSyntaxError) { duration = try TimeSpan.parsePositive(text) } catch {
                        throw DBusError(.invalidArgs, "argument 'duration': \(error.message) (column \(error.column) of '\(Echo.capped(text))')")
                    }
                    if let d = duration, !TimeLimit.fits(d) {
                        throw DBusError(.invalidArgs, "argument \(TimeLimit.pastLatest(field: "duration", value: Echo.capped(text)))")
                    }
                }
                let until = try await Self.run { () throws(CenterError) in try await center.snooze(key, for: duration) }
                return [.int64(until.microseconds)]
            },
            DBusMethod("History", input: "a{sv}", output: "aa{sv}", inputNames: ["filter"], outputNames: ["events"]) { call in
                try await Self.history(center, filter: call.arguments[0], maxMessageSize: maxMessageSize)
            },
            DBusMethod("Status", output: "a{sv}", outputNames: ["status"]) { _ in
                [await Self.status(center: center, info: info)]
            },
            DBusMethod("Reload") { _ in
                if let refused = await reloader() { throw refused.dbusError }
                return []
            },
        ] + Self.quietMethodTable(center)
        return DBusInterface(Gateway.interface, methods: methods.map(inTurn), signals: Self.signals, properties: Self.properties)
    }

    /// Every call waits, in one wrapper (each is an async frame per call): for start-up to end,
    /// when the API is served before it; then behind the same sender's earlier calls that wait
    /// for its owner (`ClientIdentities.inTurn`), so that a client's calls take effect in the
    /// order it sent them.
    private func inTurn(_ m: DBusMethod) -> DBusMethod {
        let identities = self.identities
        let startup = self.startup
        return DBusMethod(m.name, input: m.input, output: m.output, inputNames: m.inputNames, outputNames: m.outputNames,
                          checksSignature: m.checksSignature) { call in
            if let startup, startup.gate.ended != true { guard await startup.started() else { throw StartWait.failed } }
            if let sender = call.sender, identities.mustWait(sender.rawValue) { await identities.inTurn(sender.rawValue) }
            return try await m.body(call)
        }
    }

    /// The XML served by `Introspect` for the gateway object, committed as
    /// `contrib/io.github.tocsin.Gateway1.xml`.
    public var exportedObject: DBusExportedObject {
        DBusExportedObject(interfaces: [interface], properties: Properties(center: center, startup: startup))
    }

    /// The caller, for the per-client quota, which the center counts: the process behind the
    /// connection (`ClientIdentities`). Peer-to-peer connections have no sender: there is only
    /// one client then, and no quota.
    private static func client(_ call: DBusMethodCall, limit: Int, identities: ClientIdentities, link: BusLink) async -> NotificationMachine.Client? {
        guard let sender = call.sender else { return nil }
        return NotificationMachine.Client(name: await identities.owner(of: sender.rawValue, on: link.current), limit: limit)
    }

    static func run<T: Sendable>(_ body: () async throws(CenterError) -> T) async throws(DBusError) -> T {
        do { return try await body() } catch { throw error.dbusError }
    }

    static func encode(_ p: PendingNotification, allBackends: [String]) -> DBusValue {
        let n = p.notification
        var fields: [(String, DBusValue)] = [
            ("key", .string(n.key)),
            ("title", .string(n.title)),
            ("body", .string(n.body)),
            ("trigger", .string(n.trigger.summary)),
            ("source", .string(n.source.rawValue)),
            ("backends", .array(.string, (n.backends ?? allBackends).map { .string($0) })),
            ("state", .string(p.state.name)),
            ("urgency", .string(n.urgency.rawValue)),
            ("user_info", .dictionary(key: .string, value: .string,
                                      n.userInfo.sorted { $0.key < $1.key }.map { .init(.string($0.key), .string($0.value)) })),
        ]
        if let next = p.nextFire { fields.append(("next_fire", .int64(next.microseconds))) }
        if let last = p.lastFire { fields.append(("last_fire", .int64(last.microseconds))) }
        if n.wake { fields.append(("wake", .boolean(true))) }
        if case .snoozed(let until) = p.state { fields.append(("snoozed_until", .int64(until.microseconds))) }
        if case .ringing(_, let rings) = p.state { fields.append(("rings", .uint32(rings))) }
        if case .unanswered(let rings) = p.state { fields.append(("rings", .uint32(rings))) }
        return .vardict(fields)
    }

    /// `Status`: one answer to "is it running, what does it hold, what happens next, which
    /// backends work". Backend health is `ok` or the reason deliveries fail now.
    static func status(center: TocsinCenter, info: DaemonInfo) async -> DBusValue {
        await center.caughtUp()
        var fields: [(String, DBusValue)] = [
            ("version", .string(Gateway.version)),
            ("pid", .uint32(info.pid)),
            ("started", .int64(info.started.microseconds)),
            ("config", .string(info.configFile)),
            ("state_directory", .string(info.stateDirectory)),
            ("pending", .uint32(UInt32(clamping: await center.activeCount))),
            ("backends", .dictionary(key: .string, value: .string,
                                     await center.backendHealth().map { .init(.string($0.name), .string($0.health.description)) })),
        ]
        if let next = await center.nextDue() {
            fields.append(("next_key", .string(next.key)))
            fields.append(("next_fire", .int64(next.instant.microseconds)))
        }
        fields += await sleepFields(center: center, info: info)
        return .vardict(fields)
    }

    /// Wake alarms and sleep: whether the machine can be woken (and why not), the next
    /// notification that asks to, the instant the kernel's alarm timer holds, and logind's state.
    static func sleepFields(center: TocsinCenter, info: DaemonInfo) async -> [(String, DBusValue)] {
        var fields: [(String, DBusValue)] = []
        let wake = await center.wakeStatus
        fields.append(("wake", .string(wake?.availability.description ?? "off (no wake-alarm timer)")))
        if let next = await center.nextWake() {
            fields.append(("wake_next_key", .string(next.key)))
            fields.append(("wake_next", .int64(next.instant.microseconds)))
        }
        if let armed = wake?.armed { fields.append(("wake_armed", .int64(armed.microseconds))) }
        fields.append(("sleep", .string(info.sleep?.state.description ?? "off: not watched")))
        return fields
    }

    // MARK: Connection and signals

    /// Serves the object on a connection without taking the well-known name (a peer-to-peer
    /// connection, as in the D-Bus benchmark); the daemon uses `serve(on:)`.
    public func attach(_ connection: DBusConnection) async throws {
        connection.maxMessageSize = maxMessageSize
        try await connection.export(exportedObject, at: Gateway.objectPath)
        link.set(connection)
    }

    /// Serves the object under the well-known name. The object is exported before the name is
    /// taken, so a client that sees the name appear finds the object there; signals go out on the
    /// connection only once the name is ours, so subscribers that match on the name miss none.
    public func serve(on connection: DBusConnection) async throws {
        connection.maxMessageSize = maxMessageSize
        try await connection.export(exportedObject, at: Gateway.objectPath)
        // A peer-to-peer connection has no bus to own a name on: the peer talks to us directly.
        if !connection.isPeerToPeer { try await connection.requestName(Gateway.busName) }
        link.set(connection)
    }

    private func emit(_ member: MemberName, _ arguments: [DBusValue]) { link.emitLogged(member, arguments) }

    /// Turns the center's lifecycle events into signals until the center shuts down.
    /// `Fired` is not among them: it belongs to the `dbus-signal` backend, for the notifications routed to it.
    public func forwardEvents() async { await forward(await center.events(firings: false)) }

    /// Forwards a subscription taken earlier (the daemon subscribes before its first tick).
    public func forward(_ events: AsyncStream<CenterEvent>) async {
        for await event in events {
            switch event {
            case .fired, .deliveryFailed: continue
            case .actionInvoked(let key, let action, let info):
                emit("ActionInvoked", [.string(key), .string(action),
                                       .dictionary(key: .string, value: .string,
                                                   info.sorted { $0.key < $1.key }.map { .init(.string($0.key), .string($0.value)) })])
            case .acknowledged(let key): emit("Acknowledged", [.string(key)])
            case .snoozed(let key, let until): emit("Snoozed", [.string(key), .int64(until.microseconds)])
            case .cancelled(let key): emit("Cancelled", [.string(key)])
            case .missed(let key, let due, _): emit("Missed", [.string(key), .int64(due.microseconds)])
            case .unanswered(let key, let rings): emit("Unanswered", [.string(key), .uint32(rings)])
            case .cancelledAll(let count): emit("CancelledAll", [.uint32(UInt32(clamping: count))])
            case .interrupted(let key, let due, let occurrence, let backends):
                emit("Interrupted", [.string(key), .int64(due.microseconds), .uint32(occurrence), .array(.string, backends.map { .string($0) })])
            case .quietChanged(let status): emit("QuietChanged", Self.quietChangedArguments(status))
            }
        }
    }

    /// The `Fired` signal, the one place its shape is defined (docs/DBUS-API.md lists its fields):
    /// the key, then an `a{sv}` of the firing. Written straight into the message.
    public static func firedSignal(_ f: Firing, backends: [String]) throws(DBusError) -> DBusMessage {
        try DBusMessage.signal(path: Gateway.objectPath, interface: Gateway.interface, member: "Fired") { w in
            w.string(f.key)
            w.vardict { d in
                d.string("title", f.notification.title)
                d.string("body", f.notification.body)
                d.int64("due", f.due.microseconds)
                d.int64("fired", f.fired.microseconds)
                d.uint32("occurrence", f.occurrence.number)
                d.boolean("late", f.late)
                d.string("reason", f.reason.rawValue)
                d.string("urgency", f.notification.urgency.rawValue)
                d.stringPairs("user_info", f.notification.userInfo.sorted { $0.key < $1.key }.map { ($0.key, $0.value) })
                d.strings("backends", backends)
                if let o = f.occurrence.offset { d.int64("before", o.microseconds) }
            }
        }
    }
}

/// What `Status` says about the daemon process itself.
public struct DaemonInfo: Sendable {
    public var configFile: String
    public var stateDirectory: String
    public var started: Instant
    public var pid: UInt32
    /// logind's sleep announcements as the daemon follows them; nil: not watched.
    public var sleep: SleepWatch?

    /// `pid` nil: this process's.
    public init(configFile: String = "", stateDirectory: String = "", started: Instant = Instant(microseconds: 0),
                pid: UInt32? = nil) {
        self.configFile = configFile; self.stateDirectory = stateDirectory; self.started = started
        self.pid = pid ?? UInt32(clamping: getpid())
    }
}

private struct Properties: DBusPropertyProvider {
    let center: TocsinCenter
    let startup: StartWait?

    func get(interface: InterfaceName, name: String) async throws -> DBusValue {
        guard interface == Gateway.interface else { throw DBusError(.unknownInterface, "no interface \(interface)") }
        if let startup, await !startup.started() { throw StartWait.failed }
        switch name {
        case "Version": return .string(Gateway.version)
        case "Backends": return .array(.string, await center.backendNames.map { .string($0) })
        case "Pending": return .uint32(UInt32(clamping: await center.activeCount))
        case "Quiet": return GatewayService.encodeQuiet(await center.quietStatus())
        default: throw DBusError(.unknownProperty, "no property \(name) on \(interface)")
        }
    }

    func getAll(interface: InterfaceName) async throws -> [String: DBusValue] {
        var out: [String: DBusValue] = [:]
        for p in GatewayService.properties { out[p.name] = try await get(interface: interface, name: p.name) }
        return out
    }

    /// Every property is read-only; a name that is none of them is answered as `Get` answers it,
    /// so a client's typo is not reported as a permission.
    func set(interface: InterfaceName, name: String, value: DBusValue) async throws {
        guard interface == Gateway.interface else { throw DBusError(.unknownInterface, "no interface \(interface)") }
        guard GatewayService.properties.contains(where: { $0.name == name }) else {
            throw DBusError(.unknownProperty, "no property \(name) on \(interface)")
        }
        throw DBusError(.propertyReadOnly, "property \(name) is read-only")
    }
}
