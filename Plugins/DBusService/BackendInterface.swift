public import DBus
public import TocsinCore
import TocsinTime
import TocsinModel

/// The `io.github.tocsin.Backend1` interface a `dbus-service` backend talks to
/// (`contrib/io.github.tocsin.Backend1.xml`): what Tocsin calls and what it listens for, in one
/// place, so the XML, docs/DBUS-API.md and the code have a single Swift counterpart.
public enum Backend1: Sendable {
    public static let interface: InterfaceName = "io.github.tocsin.Backend1"
    public static let objectPath: ObjectPath = "/io/github/tocsin/Backend"
    public static let deliver: MemberName = "Deliver"
    public static let withdraw: MemberName = "Withdraw"
    /// Signals a service emits: `ActionInvoked(s key, s action)`, `Acknowledge(s key)`.
    public static let actionInvoked: MemberName = "ActionInvoked"
    public static let acknowledge: MemberName = "Acknowledge"
    /// The one error name a service answers with when retrying cannot help (refused content).
    /// Any other error is retried with the center's backoff.
    public static let permanentError = "io.github.tocsin.Backend1.Error.Permanent"

    /// `Deliver`'s one argument. A service sees the same facts `Fired` carries, plus what a
    /// stateful backend needs to render and act (actions, alarm, the instance name it serves).
    public static func deliverArguments(_ f: Firing, instance: String) -> [DBusValue] {
        let n = f.notification
        var fields: [(String, DBusValue)] = [
            ("backend", .string(instance)),
            ("key", .string(f.key)),
            ("title", .string(n.title)),
            ("body", .string(n.body)),
            ("urgency", .string(n.urgency.rawValue)),
            ("due", .int64(f.due.microseconds)),
            ("fired", .int64(f.fired.microseconds)),
            ("occurrence", .uint32(f.occurrence.number)),
            ("late", .boolean(f.late)),
            ("reason", .string(f.reason.rawValue)),
            ("alarm", .boolean(f.isAlarm)),
            ("ring", .uint32(f.ring)),
            ("actions", pairs(n.actions.map { ($0.id, $0.label) })),
            ("user_info", pairs(n.userInfo.sorted { $0.key < $1.key }.map { ($0.key, $0.value) })),
        ]
        if let c = n.category { fields.append(("category", .string(c))) }
        if let i = n.icon { fields.append(("icon", .string(i))) }
        if let s = n.sound { fields.append(("sound", .string(s))) }
        if let o = f.occurrence.offset { fields.append(("before", .int64(o.microseconds))) }
        return [.vardict(fields)]
    }

    private static func pairs(_ list: [(String, String)]) -> DBusValue {
        .dictionary(key: .string, value: .string, list.map { .init(.string($0.0), .string($0.1)) })
    }

    /// How a failed `Deliver` call is retried: an absent service may come back (`unavailable`),
    /// a hung one is a timeout, a service that does not implement the interface or refuses the
    /// content (`Backend1.Error.Permanent`) will not change its mind.
    public static func deliveryError(_ e: DBusError, service: BusName) -> DeliveryError {
        switch e.code {
        case .serviceUnknown?, .nameHasNoOwner?:
            return DeliveryError(.unavailable, "\(service) is not on the bus")
        case .disconnected?:
            return DeliveryError(.unavailable, "not connected to the bus")
        case .noReply?, .timeout?, .timedOut?:
            return DeliveryError(.timedOut, "\(service) did not answer Deliver: \(e.message)")
        case .unknownMethod?, .unknownObject?, .unknownInterface?:
            return DeliveryError(.permanent, "\(service) does not implement \(interface) at \(objectPath): \(e.message)")
        case .invalidArgs?:
            return DeliveryError(.permanent, "\(service) refused the notification: \(e.message)")
        default:
            if e.name == permanentError { return DeliveryError(.permanent, "\(service) refused the notification: \(e.message)") }
            return DeliveryError(.failed, "\(service) answered Deliver with \(e.description)")
        }
    }
}
