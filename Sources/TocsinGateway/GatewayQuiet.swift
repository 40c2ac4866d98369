import DBus
import TocsinConfig
import TocsinCore
import TocsinTime

/// Quiet hours on the bus: `QuietOn(s for, s until)`, `QuietOff()`, `QuietStatus()` (each
/// answering the state as `a{sv}`), the `Quiet` property and the `QuietChanged` signal.
extension GatewayService {
    static let quietMethods: [String] = ["QuietOn", "QuietOff", "QuietStatus"]

    static func quietMethodTable(_ center: TocsinCenter) -> [DBusMethod] {
        [
            DBusMethod("QuietOn", input: "ss", output: "a{sv}", inputNames: ["for", "until"], outputNames: ["quiet"]) { call in
                let forText = try call.arguments[0].asString()
                let untilText = try call.arguments[1].asString()
                let status = try await Self.run { () throws(CenterError) in
                    try await center.quietOn(for: forText, until: untilText)
                }
                return [encodeQuiet(status)]
            },
            DBusMethod("QuietOff", output: "a{sv}", outputNames: ["quiet"]) { _ in
                [encodeQuiet(try await Self.run { () throws(CenterError) in try await center.quietOff() })]
            },
            DBusMethod("QuietStatus", output: "a{sv}", outputNames: ["quiet"]) { _ in
                await center.caughtUp()
                return [encodeQuiet(await center.quietStatus())]
            },
        ]
    }

    /// `active` b, `source` s (`manual`, `schedule`, `none`), `held` u, and `until` x (unix µs)
    /// when the state will change by itself.
    static func encodeQuiet(_ s: QuietStatus) -> DBusValue {
        var fields: [(String, DBusValue)] = [
            ("active", .boolean(s.active)),
            ("source", .string(s.source)),
            ("held", .uint32(UInt32(clamping: s.held))),
        ]
        if let u = s.until { fields.append(("until", .int64(u.microseconds))) }
        return .vardict(fields)
    }

    /// `QuietChanged(b active, a{sv} quiet)`.
    static func quietChangedArguments(_ s: QuietStatus) -> [DBusValue] { [.boolean(s.active), encodeQuiet(s)] }
}
