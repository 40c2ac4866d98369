import DBus
import Logging
import Testing
@testable import TocsinDBusServiceBackend
import TocsinConfig
import TocsinCore
import TocsinTime
import TocsinModel

/// The `dbus-service` backend's pure parts: its table, the `Deliver` payload, how call errors
/// are retried, and which service signals become center events. The bus side is tested in
/// IntegrationTests/DBusServiceBackendTests against the example service.
@Suite("dbus-service backend (pure)")
struct DBusServiceBackendUnitTests {
    func issues(_ toml: String) -> [String] {
        guard case .success(let t) = Result(catching: { try TOML.parse(toml, file: "c.toml") }) else { return ["parse"] }
        var r = TableReader(t, context: "[backend.bridge]")
        _ = DBusServiceBackendFactory(bus: .none).make(name: "bridge", reading: &r, environment: BackendEnvironment(logger: .init(label: "t")))
        r.finish(known: DBusServiceBackendFactory(bus: .none).optionKeys)
        return r.issues.map { "\($0.location.line):\($0.location.column): \($0.message)" }
    }

    @Test("config: bus_name is required and must be a well-known name other than the bus's or Tocsin's own")
    func options() {
        let rows: [(name: String, toml: String, expected: [String])] = [
            ("good", "bus_name = \"org.example.ChatBridge\"", []),
            ("hyphen allowed", "bus_name = \"org.example.chat-bridge\"", []),
            ("missing", "", ["1:1: missing required key 'bus_name' in [backend.bridge] (the service's well-known bus name, e.g. \"org.example.ChatBridge\")"]),
            ("not a string", "bus_name = 3", ["1:12: 'bus_name' in [backend.bridge] must be a string, found integer"]),
            ("unique name", "bus_name = \":1.42\"", ["1:12: 'bus_name' in [backend.bridge] must be a well-known bus name such as \"org.example.ChatBridge\" (dot-separated elements of letters, digits, '_' and '-', not starting with a digit), found \":1.42\""]),
            ("one element", "bus_name = \"bridge\"", ["1:12: 'bus_name' in [backend.bridge] must be a well-known bus name such as \"org.example.ChatBridge\" (dot-separated elements of letters, digits, '_' and '-', not starting with a digit), found \"bridge\""]),
            ("the bus itself", "bus_name = \"org.freedesktop.DBus\"", ["1:12: 'bus_name' in [backend.bridge] must name the backend service, not org.freedesktop.DBus"]),
            ("the gateway", "bus_name = \"io.github.tocsin.Gateway\"", ["1:12: 'bus_name' in [backend.bridge] must name the backend service, not io.github.tocsin.Gateway"]),
            ("typo", "bus_nme = \"a.b\"", ["1:1: missing required key 'bus_name' in [backend.bridge] (the service's well-known bus name, e.g. \"org.example.ChatBridge\")",
                                          "1:1: unknown key 'bus_nme' in [backend.bridge]; did you mean 'bus_name'?"]),
        ]
        for row in rows {
            #expect(issues(row.toml) == row.expected, "row '\(row.name)'")
        }
    }

    @Test("Deliver carries the firing as a{sv}: text, times in microseconds, actions and user_info as a{ss}, before only for remind_before")
    func payload() throws {
        let due = Instant(seconds: 1_800_000_000)
        let n = Notification(key: "k", title: "T", body: "B", trigger: .at(due), urgency: .critical, category: "im",
                             actions: [NotificationAction(id: "join", label: "Join")], userInfo: ["room": "4"])
        var f = Firing(notification: n, occurrence: Occurrence(instant: due, number: 2, offset: .seconds(60)), due: due,
                       fired: due + .seconds(3), reason: .late)
        f.isAlarm = true
        let args = Backend1.deliverArguments(f, instance: "bridge")
        #expect(args.count == 1)
        guard case .dictionary(_, _, let entries)? = args.first else { Issue.record("not a dictionary: \(args)"); return }
        var fields: [String: DBusValue] = [:]
        for e in entries { if case .string(let k) = e.key, case .variant(let v) = e.value { fields[k] = v } }
        let expected: [(String, DBusValue)] = [
            ("backend", .string("bridge")), ("key", .string("k")), ("title", .string("T")), ("body", .string("B")),
            ("urgency", .string("critical")), ("due", .int64(due.microseconds)), ("fired", .int64(due.microseconds + 3_000_000)),
            ("occurrence", .uint32(2)), ("late", .boolean(true)), ("reason", .string("late")), ("alarm", .boolean(true)),
            ("ring", .uint32(1)), ("category", .string("im")), ("before", .int64(60_000_000)),
            ("actions", .dictionary(key: .string, value: .string, [.init(.string("join"), .string("Join"))])),
            ("user_info", .dictionary(key: .string, value: .string, [.init(.string("room"), .string("4"))])),
        ]
        for (name, value) in expected { #expect(fields[name] == value, "field '\(name)'") }
        #expect(fields["icon"] == nil && fields["sound"] == nil, "absent optional fields are left out")
    }

    @Test("a failed Deliver is retried unless retrying cannot help")
    func errorMapping() {
        let rows: [(name: String, error: DBusError, code: DeliveryError.Code)] = [
            ("no owner", DBusError(.serviceUnknown, "x"), .unavailable),
            ("name has no owner", DBusError(.nameHasNoOwner, "x"), .unavailable),
            ("our bus is gone", DBusError(.disconnected, "x"), .unavailable),
            ("crashed mid-call", DBusError(.noReply, "Message recipient disconnected"), .timedOut),
            ("hung", DBusError(.timeout, "x"), .timedOut),
            ("not the interface", DBusError(.unknownMethod, "x"), .permanent),
            ("no such object", DBusError(.unknownObject, "x"), .permanent),
            ("refused arguments", DBusError(.invalidArgs, "x"), .permanent),
            ("the service's own permanent", DBusError(name: Backend1.permanentError, message: "no title"), .permanent),
            ("anything else", DBusError(name: "org.example.Error.Busy", message: "later"), .failed),
        ]
        for row in rows {
            #expect(Backend1.deliveryError(row.error, service: "org.example.B").code == row.code, "row '\(row.name)'")
        }
    }

    @Test("service signals: ActionInvoked(ss) and Acknowledge(s) become events; any other shape is refused with why")
    func signals() {
        let long = String(repeating: "k", count: 256)
        let rows: [(name: String, member: MemberName, args: [DBusValue], expected: Result<BackendEvent, ServiceSignalError>)] = [
            ("action", "ActionInvoked", [.string("k"), .string("join")], .success(.actionInvoked(key: "k", action: "join"))),
            ("acknowledge", "Acknowledge", [.string("k")], .success(.acknowledge(key: "k"))),
            ("action without action", "ActionInvoked", [.string("k")], .failure(ServiceSignalError(.malformed, "ActionInvoked must carry (s key, s action)"))),
            ("action of the wrong type", "ActionInvoked", [.string("k"), .uint32(1)], .failure(ServiceSignalError(.malformed, "ActionInvoked must carry (s key, s action)"))),
            ("empty action", "ActionInvoked", [.string("k"), .string("")], .failure(ServiceSignalError(.malformed, "ActionInvoked: the action must be 1 to 4096 bytes"))),
            ("acknowledge with extra", "Acknowledge", [.string("k"), .string("x")], .failure(ServiceSignalError(.malformed, "Acknowledge must carry (s key)"))),
            ("empty key", "Acknowledge", [.string("")], .failure(ServiceSignalError(.malformed, "the key must be 1 to 255 bytes"))),
            ("key too long", "Acknowledge", [.string(long)], .failure(ServiceSignalError(.malformed, "the key must be 1 to 255 bytes"))),
            ("unknown signal", "Snoozed", [.string("k")], .failure(ServiceSignalError(.unknownSignal, "Snoozed is not a signal of io.github.tocsin.Backend1"))),
        ]
        for row in rows {
            #expect(ServiceSignal.event(member: row.member, arguments: row.args) == row.expected, "row '\(row.name)'")
        }
    }
}
