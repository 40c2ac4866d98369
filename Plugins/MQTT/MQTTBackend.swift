import FoundationEssentials
import Logging
import Synchronization
public import TocsinCore
public import TocsinTime

/// `type = "mqtt"`: publishes every firing, withdraw, acknowledge and snooze as a `FleetMessage`
/// on `<topic_prefix>/<kind>` (QoS 1, persistent session). When `[fleet]` names this backend it
/// also subscribes to the acknowledges and snoozes of the other machines and hands them to the
/// center as if a person had answered here, so one answer stops the alarm everywhere; and it
/// shares `fleet = true` notifications both ways (`MQTTBackend+Fleet.swift`).
///
/// Nothing local waits on the broker: a publish while it is down is queued by libmosquitto and
/// sent after the reconnect, and `deliver` returns at once.
public final class MQTTBackend: DeliveryBackend, Sendable {
    public let name: String
    let options: MQTTBackendFactory.Options
    let subscribes: Bool
    let stateDirectory: String?
    let logger: Logger
    let state = Mutex(State())

    struct State {
        var client: MosquittoClient?
        var sink: (any BackendEventSink)?
        var store: FleetStore?
        var connected = false
        var churn = ConnectionChurn()
        /// The latest occurrence delivered per key, so a withdraw names the occurrence it ends
        /// (also in the store, for after a restart).
        var delivered: [String: (occurrence: UInt64, due: Int64)] = [:]
        /// Messages awaiting their PUBACK, by message id, with the outbox id of an answer ("" for
        /// the others); and PUBACKs that came before `publish` returned their id (the network
        /// thread can be that quick).
        var awaiting: [Int32: String] = [:]
        var earlyAcks: Set<Int32> = []
        /// Snoozes received from the fleet and handed to the center, by key: the center's
        /// withdraw that follows is their echo and is not published again (`takeEcho`).
        var echoes: [String: Echo] = [:]
        /// `fleet = true` keys: shared now, and the latest change (see `MQTTBackend+Fleet.swift`).
        var fleet: [String: (shared: Bool, changed: Int64)] = [:]
        /// When `forgetOld` last ran, in microseconds since the epoch.
        var forgottenAt: Int64 = 0

        /// A received snooze: its number, the occurrence it answers (by due time, as
        /// `FleetMessage.concerns` matches) and when it came (microseconds since the epoch).
        struct Echo {
            var snooze: Int
            var due: Int64
            var at: Int64
        }

        /// The number of the received snooze a withdraw of `key`'s occurrence due at `due`
        /// echoes, consumed. A snooze the center refused (the key was acknowledged or cancelled
        /// meanwhile) is never echoed; its entry must not lend its number to a later snooze made
        /// here, which the fleet would then take for the one it already has and ignore.
        mutating func takeEcho(key: String, due: Int64) -> Int? {
            guard let echo = echoes.removeValue(forKey: key), echo.due == due else { return nil }
            return echo.snooze
        }

        /// Drops from `delivered` and `fleet` what the store forgets after
        /// `FleetStore.keepSeenSeconds`, and echoes that never came, at most once a day (`now`
        /// in microseconds). The maps are the file's copies in memory; without this a daemon
        /// running for months held an entry for every key it ever delivered or shared, long
        /// after its file had let go.
        mutating func forgetOld(now: Int64) {
            guard now - forgottenAt >= 86_400_000_000 else { return }
            forgottenAt = now
            let cutoff = now - FleetStore.keepSeenSeconds * 1_000_000
            delivered = delivered.filter { $0.value.due >= cutoff }
            fleet = fleet.filter { $0.value.shared || $0.value.changed >= cutoff }
            // An echo comes back within the center's next batch: one a day old never will.
            echoes = echoes.filter { now - $0.value.at < 86_400_000_000 }
        }
    }

    init(name: String, options: MQTTBackendFactory.Options, subscribes: Bool, stateDirectory: String?, logger: Logger) {
        self.name = name; self.options = options; self.subscribes = subscribes
        self.stateDirectory = stateDirectory; self.logger = logger
    }

    private var brokerAddress: String { "\(options.host):\(options.port)" }

    public func start(events: any BackendEventSink) async {
        var store: FleetStore?
        if let dir = stateDirectory {
            do { store = try FleetStore(path: dir + "/mqtt-\(name).sqlite") } catch {
                logger.error("mqtt \(name): \(error); redelivered fleet messages may act twice")
            }
        }
        let settings = MosquittoClient.Settings(
            host: options.host, port: options.port, clientID: options.clientID, keepalive: options.keepaliveSeconds,
            username: options.username, password: options.password, caFile: options.caFile, certFile: options.certFile,
            keyFile: options.keyFile, reconnectDelay: 1, reconnectDelayMax: options.reconnectMaxSeconds)
        let client: MosquittoClient
        do { client = try MosquittoClient(settings, delegate: Delegate(backend: self)) } catch {
            logger.error("mqtt \(name): \(error); nothing is published")
            return
        }
        let fleetKeys = store?.fleetKeys() ?? [:]
        state.withLock { $0.client = client; $0.sink = events; $0.store = store; $0.fleet = fleetKeys }
        // What an earlier run owed (answers given while the broker was down): queued first, so
        // they go out on the first connection. Receivers drop any the broker already had.
        for owed in store?.outbox() ?? [] {
            sendAwaitingAck(id: owed.id, topic: owed.topic, payload: owed.payload, client: client, store: store)
        }
        do {
            if let first = try client.start(host: options.host, port: options.port, keepalive: options.keepaliveSeconds) {
                logger.warning("mqtt \(name): cannot reach the broker at \(brokerAddress) yet (\(first)); retrying with backoff")
            }
        } catch {
            logger.error("mqtt \(name): \(error); nothing is published")
        }
    }

    public func deliver(_ firing: Firing) async throws(DeliveryError) {
        let occurrence = UInt64(firing.occurrence.number), due = firing.due.microseconds
        // The occurrence is named by its own due instant: a ring and the end of a snooze repeat
        // it at other instants (a snooze ends at a different time on each machine), so they
        // leave the record alone and every machine names the occurrence alike.
        let names = firing.reason != .ring && firing.reason != .snoozeEnded
        let store = state.withLock { s in
            if names {
                s.forgetOld(now: Self.nowMicroseconds())
                s.delivered[firing.key] = (occurrence, due)
            }
            return s.store
        }
        if names { store?.recordDelivered(key: firing.key, occurrence: occurrence, due: due) }
        let m = FleetMessage(kind: .fired, key: firing.key, occurrence: occurrence, due: due, origin: options.clientID,
                             title: firing.notification.title, reason: firing.reason.rawValue)
        if case .failure(let e) = publish(m) { throw DeliveryError(.permanent, "\(e)") }
    }

    public func withdraw(key: String, reason: WithdrawReason) async {
        await withdraw(key: key, reason: reason, snoozedUntil: nil)
    }

    public func withdraw(key: String, reason: WithdrawReason, snoozedUntil: Instant?) async {
        let (known, store) = state.withLock { ($0.delivered[key], $0.store) }
        let last = known ?? store?.lastDelivered(key: key) ?? (0, 0)
        let kind: FleetMessage.Kind = switch reason {
        case .acknowledged: .acknowledged
        case .snoozed: .snoozed
        default: .withdrawn
        }
        var snooze: Int?
        if kind == .snoozed {
            // The n-th snooze of this occurrence, counted over what this machine sent and
            // received, so a later snooze is news to the fleet and not a redelivery.
            let echo = state.withLock { $0.takeEcho(key: key, due: last.due) }
            let prefix = FleetMessage.id(kind: .snoozed, key: key, due: last.due, occurrence: last.occurrence) + "/"
            snooze = echo ?? (store?.lastSnooze(prefix: prefix) ?? 0) + 1
        }
        let m = FleetMessage(kind: kind, key: key, occurrence: last.occurrence, due: last.due, snooze: snooze,
                             origin: options.clientID, reason: reason.rawValue,
                             until: kind == .snoozed ? snoozedUntil?.microseconds : nil)
        // An answer that came from the fleet is already known there: repeating it would only echo.
        if kind != .withdrawn, store?.contains(m.id) == true { return }
        if kind == .snoozed { _ = store?.insert(m.id, kind: kind.rawValue, at: Int64(Date().timeIntervalSince1970)) }
        if kind == .withdrawn {
            if case .failure(let e) = publish(m) { logger.warning("mqtt \(name): cannot publish \(kind.rawValue) of \(key): \(e)") }
            return
        }
        publishDurably(m)
    }

    /// An answer or a fleet change must reach the fleet even across a daemon restart while the
    /// broker is down: durable first, then published, then removed on the broker's PUBACK.
    func publishDurably(_ m: FleetMessage) {
        let (client, store) = state.withLock { ($0.client, $0.store) }
        let topic = options.topicPrefix + "/" + m.kind.rawValue, payload = m.encoded()
        store?.enqueue(id: m.id, topic: topic, payload: payload, at: Int64(Date().timeIntervalSince1970))
        // Shut down (a stop's last answer): the outbox keeps it for the next start.
        guard let client else { return }
        sendAwaitingAck(id: m.id, topic: topic, payload: payload, client: client, store: store)
    }

    private func sendAwaitingAck(id: String, topic: String, payload: [UInt8], client: MosquittoClient, store: FleetStore?) {
        if case .failure(let e) = send(topic: topic, payload: payload, outboxID: id, client: client) {
            logger.warning("mqtt \(name): cannot publish \(id) (kept for the next start): \(e)")
        }
    }

    /// A reload replaces this instance by a new one of the same name (and client id) without
    /// calling `shutdown`, so the client must stop when the instance goes. Stopped off the network
    /// thread: the last reference may drop there, and a thread cannot join itself.
    deinit {
        if let client = state.withLock({ $0.client }) {
            Task.detached { client.stop() }
        }
    }

    public func shutdown() async {
        let client = state.withLock { s in defer { s.client = nil } ; return s.client }
        client?.stop()
    }

    public func health() async -> BackendHealth {
        state.withLock { s in
            if s.client == nil { return .unavailable("mqtt client not started") }
            return s.connected ? .ok : .unavailable("not connected to the MQTT broker at \(brokerAddress); retrying with backoff, messages queued")
        }
    }

    /// A fired or withdrawn message: best effort, queued in the client while the broker is away.
    private func publish(_ m: FleetMessage) -> Result<Void, MosquittoError> {
        guard let client = state.withLock({ $0.client }) else {
            return .failure(MosquittoError(rc: 4, what: "mqtt client not started"))
        }
        return send(topic: options.topicPrefix + "/" + m.kind.rawValue, payload: m.encoded(), outboxID: nil, client: client)
    }

    /// Publishes at QoS 1 and tracks the message id until its PUBACK, which removes an answer
    /// (`outboxID`) from the durable outbox.
    private func send(topic: String, payload: [UInt8], outboxID: String?, client: MosquittoClient) -> Result<Void, MosquittoError> {
        switch client.publish(topic: topic, payload: payload, qos: 1) {
        case .success(let mid):
            let (acked, store) = state.withLock { s in
                if s.earlyAcks.remove(mid) != nil { return (true, s.store) }
                s.awaiting[mid] = outboxID ?? ""
                return (false, s.store)
            }
            if acked, let outboxID { store?.removeFromOutbox(id: outboxID) }
            return .success(())
        case .failure(let e):
            return .failure(e)
        }
    }

    // MARK: Network thread

    fileprivate func connected(_ rc: Int32) {
        guard rc == 0 else {
            logger.warning("mqtt \(name): broker at \(brokerAddress) refused the connection (code \(rc)); retrying")
            return
        }
        let client = state.withLock { s in
            s.connected = true
            s.churn.connected(at: .now)
            return s.client
        }
        logger.info("mqtt \(name): connected to \(brokerAddress)")
        // Subscribed on every connect: a broker that lost its state (restarted without
        // persistence) no longer knows our persistent session.
        guard subscribes, let client else { return }
        for kind in [FleetMessage.Kind.acknowledged, .snoozed, .scheduled, .cancelled] {
            if case .failure(let e) = client.subscribe(options.topicPrefix + "/" + kind.rawValue, qos: 1) {
                logger.warning("mqtt \(name): \(e)")
            }
        }
    }

    fileprivate func published(_ mid: Int32) {
        let (id, store) = state.withLock { s in
            let id = s.awaiting.removeValue(forKey: mid)
            // Unknown: its `publish` has not returned yet; `send` takes it from here.
            if id == nil { s.earlyAcks.insert(mid) }
            return (id, s.store)
        }
        if let id, !id.isEmpty { store?.removeFromOutbox(id: id) }
    }

    fileprivate func disconnected(_ rc: Int32) {
        let churning = state.withLock { s in
            s.connected = false
            return rc != 0 && s.churn.lost(at: .now)
        }
        if rc != 0 { logger.warning("mqtt \(name): lost the broker at \(brokerAddress); reconnecting with backoff") }
        if churning {
            logger.warning("mqtt \(name): the broker has closed the connection within seconds of making it \(state.withLock { $0.churn.threshold }) times in a row; most likely another client uses the same client_id '\(options.clientID)' (the broker gives the session to the newest, and the two take it from each other): give each machine its own client_id")
        }
    }

    fileprivate func received(topic: String, payload: [UInt8]) {
        let m: FleetMessage
        switch FleetMessage.decode(payload) {
        case .success(let v): m = v
        case .failure(let e):
            logger.warning("mqtt \(name): ignored a message on \(topic): \(e)")
            return
        }
        guard m.origin != options.clientID, topic == options.topicPrefix + "/" + m.kind.rawValue else { return }
        if m.kind == .scheduled || m.kind == .cancelled { return receivedChange(m) }
        guard m.kind == .acknowledged || m.kind == .snoozed else { return }
        let (sink, store, known) = state.withLock { ($0.sink, $0.store, $0.delivered[m.key]) }
        let localDue = known?.due ?? store?.lastDelivered(key: m.key)?.due
        guard m.concerns(localDue: localDue) else {
            logger.info("mqtt \(name): ignored \(m.id) from \(m.origin): it answers another occurrence than the one delivered here")
            return
        }
        let now = Int64(Date().timeIntervalSince1970)
        guard store?.insert(m.id, kind: m.kind.rawValue, at: now) ?? true else {
            logger.info("mqtt \(name): ignored a redelivered \(m.id) from \(m.origin)")
            return
        }
        logger.info("mqtt \(name): \(m.id) from \(m.origin)")
        switch m.kind {
        case .acknowledged: sink?.send(.acknowledge(key: m.key))
        case .snoozed:
            state.withLock { $0.echoes[m.key] = m.snooze.map { State.Echo(snooze: $0, due: m.due, at: now * 1_000_000) } }
            if let until = m.until { sink?.send(.snoozeUntil(key: m.key, until: Instant(microseconds: until))) } else {
                sink?.send(.snooze(key: m.key, duration: nil))
            }
        case .fired, .withdrawn, .scheduled, .cancelled: break
        }
    }
}

/// Forwards the network thread's callbacks; weak, so the client's hold on its delegate does not
/// keep the backend alive.
private final class Delegate: MosquittoDelegate {
    weak let backend: MQTTBackend?
    init(backend: MQTTBackend) { self.backend = backend }
    func mosquittoConnected(_ rc: Int32) { backend?.connected(rc) }
    func mosquittoDisconnected(_ rc: Int32) { backend?.disconnected(rc) }
    func mosquittoMessage(topic: String, payload: [UInt8]) { backend?.received(topic: topic, payload: payload) }
    func mosquittoPublished(_ mid: Int32) { backend?.published(mid) }
}

/// Tells a broker that keeps dropping the connection right after it is made from ordinary
/// losses. Two clients with one client id take the session from each other that way, every few
/// seconds, each connect succeeding, so the backoff never grows and the log said only "lost the
/// broker" forever: after `threshold` such losses in a row it names the likely cause, once per run
/// of them.
struct ConnectionChurn: Sendable {
    /// A connection that lasted less than this, lost, counts as dropped right away.
    var brief: Duration = .seconds(10)
    var threshold = 3
    private var connectedAt: ContinuousClock.Instant?
    private var briefInARow = 0

    init(brief: Duration = .seconds(10), threshold: Int = 3) {
        self.brief = brief
        self.threshold = threshold
    }

    mutating func connected(at now: ContinuousClock.Instant) { connectedAt = now }

    /// Whether this loss is the one to explain.
    mutating func lost(at now: ContinuousClock.Instant) -> Bool {
        defer { connectedAt = nil }
        guard let since = connectedAt, now - since < brief else {
            if connectedAt != nil { briefInARow = 0 }
            return false
        }
        briefInARow += 1
        return briefInARow == threshold
    }
}
