import FoundationEssentials
import TocsinModel

/// One message on `<prefix>/<kind>`: what one machine of the fleet tells the others.
///
/// `id` is the idempotency id, `<kind>/<key>/<due>/<occurrence>` (due in unix microseconds, since
/// occurrence numbers start again at 1 when a key is scheduled anew), and for a snooze `/<n>`, its
/// number within the occurrence (one occurrence may be snoozed several times): MQTT QoS 1 is at-least-once, and a
/// broker restart or a reconnect redelivers, so receivers record ids (`SeenStore`) and act on
/// each at most once. The key travels in the payload, not the topic, since keys may hold `/`,
/// `+` and `#`, which MQTT topics give meaning to.
///
/// `scheduled` and `cancelled` share a `fleet = true` notification: their `due` is the instant the
/// origin scheduled or cancelled it (unix microseconds) and `occurrence` 0, so each change has
/// its own id and a replayed one is recognised.
public struct FleetMessage: Codable, Hashable, Sendable {
    public enum Kind: String, Codable, Hashable, Sendable, CaseIterable {
        case fired, withdrawn, acknowledged, snoozed, scheduled, cancelled
    }
    public var version: Int = 1
    public var id: String
    public var kind: Kind
    public var key: String
    public var occurrence: UInt64
    /// When the occurrence fell due, unix microseconds (0: the publisher never delivered it).
    public var due: Int64
    /// Which snooze of the occurrence this is (1, 2, ...); nil for the other kinds.
    public var snooze: Int?
    /// The publishing daemon's client id, so a daemon ignores its own messages.
    public var origin: String
    public var title: String?
    public var reason: String?
    /// A snooze's end, unix microseconds: every machine snoozes until the same instant, whatever
    /// its own default (absent from older senders: the receiver's default then).
    public var until: Int64?
    /// What a `scheduled` message schedules; only there.
    public var notification: FleetNotification?

    public init(kind: Kind, key: String, occurrence: UInt64, due: Int64, snooze: Int? = nil, origin: String,
                title: String? = nil, reason: String? = nil, until: Int64? = nil, notification: FleetNotification? = nil) {
        self.id = Self.id(kind: kind, key: key, due: due, occurrence: occurrence, snooze: snooze)
        self.kind = kind; self.key = key; self.occurrence = occurrence; self.due = due; self.snooze = snooze
        self.origin = origin; self.title = title; self.reason = reason; self.until = until; self.notification = notification
    }

    public static func id(kind: Kind, key: String, due: Int64, occurrence: UInt64, snooze: Int? = nil) -> String {
        "\(kind.rawValue)/\(key)/\(due)/\(occurrence)" + (snooze.map { "/\($0)" } ?? "")
    }

    public static let maxPayload = 64 * 1024

    /// Whether an answer from another machine concerns what rings here. A daily alarm answered
    /// yesterday on a machine that was offline since reaches us late, while today's occurrence
    /// rings: the due instants differ, and it must not stop today's. `localDue`: the due instant
    /// of the latest occurrence delivered here (nil: none, so nothing here can be stopped wrongly).
    public func concerns(localDue: Int64?) -> Bool {
        guard let localDue, due != 0 else { return true }
        return localDue == due
    }

    public func encoded() -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return Array((try? encoder.encode(self)) ?? Data())
    }

    /// Why a received payload was refused, for the log: a broker is shared, and anything on it
    /// may publish to our topics.
    public struct DecodeError: Error, Hashable, Sendable, CustomStringConvertible {
        public var description: String
    }

    public static func decode(_ payload: [UInt8]) -> Result<FleetMessage, DecodeError> {
        guard payload.count <= maxPayload else {
            return .failure(DecodeError(description: "message of \(payload.count) bytes; the limit is \(maxPayload)"))
        }
        let m: FleetMessage
        do { m = try JSONDecoder().decode(FleetMessage.self, from: Data(payload)) } catch {
            return .failure(DecodeError(description: "not a Tocsin fleet message: \(error)"))
        }
        guard m.version == 1 else { return .failure(DecodeError(description: "unknown message version \(m.version)")) }
        if let problem = NotificationFields.validateKey(m.key) { return .failure(DecodeError(description: problem)) }
        guard (m.kind == .snoozed) == (m.snooze != nil), (m.snooze ?? 1) >= 1 else {
            return .failure(DecodeError(description: "field 'snooze' must be a positive number in a snoozed message, and only there"))
        }
        guard (m.kind == .scheduled) == (m.notification != nil) else {
            return .failure(DecodeError(description: "field 'notification' must be in a scheduled message, and only there"))
        }
        guard m.until == nil || m.kind == .snoozed else {
            return .failure(DecodeError(description: "field 'until' only goes in a snoozed message"))
        }
        if let n = m.notification, case .failure(let e) = n.spec(key: m.key) { return .failure(e) }
        let expected = id(kind: m.kind, key: m.key, due: m.due, occurrence: m.occurrence, snooze: m.snooze)
        guard m.id == expected else {
            return .failure(DecodeError(description: "field 'id' is '\(m.id)', expected '\(expected)'"))
        }
        return .success(m)
    }
}
