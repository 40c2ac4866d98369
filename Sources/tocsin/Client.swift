import ArgumentParser
import DBus
import FoundationEssentials
import TocsinGateway
import TocsinConfig
import TocsinTime
import TocsinModel

/// The one way a command reports failure: thrown out of `run()`, printed on stderr by
/// `Tocsin.main` and turned into exit status 1. Commands never print an error and exit themselves,
/// so a script sees the same shape (`error: ...`, or compiler-style config diagnostics) and the
/// same status from every command, and nothing is printed twice.
struct CommandFailure: Error, CustomStringConvertible {
    /// Exactly what goes to stderr, without the final newline.
    let text: String

    /// `error: MESSAGE`, the shape of every failure but config diagnostics. The message often
    /// echoes client text (a key, the daemon's error about a title): its control characters are
    /// made visible here, once for every command, line breaks included, so that echoed text
    /// cannot forge an `error:` line of its own. A refused `Reload`'s diagnostics, one per line,
    /// come through `init(daemonDiagnostics:)`.
    init(_ message: String) {
        text = "error: " + JSONText.visible(message)
    }

    /// Config diagnostics, already `file:line:column: error: ...` per line.
    init(diagnostics: String) { text = diagnostics }

    /// The daemon's diagnostics of a refused `Reload`: they quote the file's lines, so their
    /// control characters are made visible, but they carry their own `error:`s.
    init(daemonDiagnostics: String) { text = Self.visible(daemonDiagnostics) }

    private static func visible(_ message: String) -> String {
        message.split(separator: "\n", omittingEmptySubsequences: false).map { JSONText.visible(String($0)) }.joined(separator: "\n")
    }

    /// The daemon's start-up failure: already logged at `critical`, which under systemd carries the
    /// journal priority that a plain stderr line would not, so nothing more is printed.
    static let loggedByDaemon = CommandFailure(diagnostics: "")

    var description: String { text }
}

/// The CLI side of the gateway API: connect, call, and turn D-Bus errors into sentences.
struct Client {
    let connection: DBusConnection
    let bus: ClientOptions
    /// How long a call waits for the daemon (`ClientOptions.replyTimeout`).
    let timeout: TimeSpan

    static func connect(_ bus: ClientOptions) async throws -> Client {
        let timeout = try bus.replyTimeout()
        do {
            return Client(connection: try await bus.connect(timeout: timeout), bus: bus, timeout: timeout)
        } catch let e as DBusError where e.code == .timeout {
            // Something listens there, so the hint for an address nobody answers at would mislead.
            throw CommandFailure(
                "\(e.message) (it is stopped, wedged, or not a D-Bus bus); "
                    + "wait longer with --timeout or $\(ClientOptions.environmentVariable)")
        } catch {
            throw CommandFailure("cannot connect to \(bus.description): \(Self.text(error))\(Self.connectHint(bus))")
        }
    }

    /// Why nothing answers where the CLI looked, and what to do: the address it used, that no bus
    /// listens there, and how to get one. A stale `DBUS_SESSION_BUS_ADDRESS` (left from a session
    /// that ended, or copied from another machine) is as common as an unset one.
    static func connectHint(_ bus: ClientOptions) -> String {
        let start = "run inside a desktop session or under dbus-run-session"
        switch bus.bus {
        case "system": return ""
        case "session":
            guard let address = ProcessInfo.processInfo.environment["DBUS_SESSION_BUS_ADDRESS"] else {
                return " (DBUS_SESSION_BUS_ADDRESS is not set: \(start))"
            }
            return " (DBUS_SESSION_BUS_ADDRESS is '\(address)', but no bus answers there: the session it belongs to has ended, or the address is wrong; \(start))"
        default:
            return " (no bus answers at '\(bus.bus)': check the address, or start a bus there with dbus-daemon --session --address=ADDRESS)"
        }
    }

    func call(_ member: MemberName, _ arguments: [DBusValue] = []) async throws -> [DBusValue] {
        guard let reply = try await call(member, arguments, unknownMethodIsNil: false) else { return [] }
        return reply
    }

    /// As `call`, but nil when the daemon has no such method (one older than the method).
    func callIfKnown(_ member: MemberName, _ arguments: [DBusValue] = []) async throws -> [DBusValue]? {
        try await call(member, arguments, unknownMethodIsNil: true)
    }

    private func call(_ member: MemberName, _ arguments: [DBusValue], unknownMethodIsNil: Bool) async throws -> [DBusValue]? {
        do {
            return try await connection.call(destination: Gateway.busName, path: Gateway.objectPath,
                                             interface: Gateway.interface, member: member, arguments: arguments,
                                             timeout: .microseconds(timeout.microseconds))
        } catch let e as DBusError where e.code == .serviceUnknown || e.code == .nameHasNoOwner {
            throw CommandFailure("the Tocsin daemon is not running on \(bus.description); start it with 'tocsin daemon' or 'systemctl --user start tocsin'")
        } catch let e as DBusError where e.code == .noReply {
            // The call sits in the daemon's queue: a stopped daemon applies it when it resumes.
            throw CommandFailure(
                "the Tocsin daemon on \(bus.description) did not answer within \(timeout) (it is stopped, or too busy); "
                    + "the request may still be applied when it answers: check with 'tocsin list' before retrying, "
                    + "and with --key a retry is safe: it replaces the first request rather than adding a second "
                    + "(wait longer with --timeout or $\(ClientOptions.environmentVariable))")
        } catch let e as DBusError where unknownMethodIsNil && e.code == .unknownMethod {
            return nil
        } catch let e as DBusError where e.name == Gateway.ErrorName.invalidConfig && e.message.contains(": error: ") {
            // `file:line:column: error: ...` already: a second `error:` in front would only stutter.
            throw CommandFailure(daemonDiagnostics: e.message)
        } catch {
            throw CommandFailure(Self.text(error))
        }
    }

    static func text(_ error: any Error) -> String {
        if let e = error as? DBusError { return e.message.isEmpty ? e.name : e.message }
        return "\(error)"
    }
}

/// Local rendering of instants for people (see `TimeDisplay`), relative to when it is printed.
enum Show {
    static func time(_ usec: Int64) -> String { TimeDisplay().moment(Instant(microseconds: usec)) }
}

extension DBusValue {
    /// Entries of an `a{sv}` (variants unwrapped), for printing.
    var vardictEntries: [(String, DBusValue)] {
        guard case .dictionary(_, _, let entries) = self else { return [] }
        return entries.compactMap { e in
            guard case .string(let k) = e.key else { return nil }
            return (k, e.value.unwrappedVariant)
        }
    }

    /// A JSON rendering for `--json` output.
    var json: String {
        switch self {
        case .string(let s): return jsonQuote(s)
        case .objectPath(let p): return jsonQuote(p.rawValue)
        case .boolean(let b): return b ? "true" : "false"
        case .byte(let x): return "\(x)"
        case .int16(let x): return "\(x)"
        case .uint16(let x): return "\(x)"
        case .int32(let x): return "\(x)"
        case .uint32(let x): return "\(x)"
        case .int64(let x): return "\(x)"
        case .uint64(let x): return "\(x)"
        case .double(let d): return d.isFinite ? "\(d)" : "null"
        case .variant(let v): return v.json
        case .array(_, let items): return "[" + items.map(\.json).joined(separator: ",") + "]"
        case .structure(let items): return "[" + items.map(\.json).joined(separator: ",") + "]"
        case .dictionary(_, _, let entries):
            return "{" + entries.map { e -> String in
                let k: String
                if case .string(let s) = e.key { k = s } else { k = e.key.json }
                return jsonQuote(k) + ":" + e.value.json
            }.joined(separator: ",") + "}"
        default: return "null"
        }
    }
}

func jsonQuote(_ s: String) -> String { JSONText.quote(s) }
