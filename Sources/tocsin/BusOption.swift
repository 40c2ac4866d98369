import ArgumentParser
import DBus
import TocsinModel

/// `--bus session|system|ADDRESS`, shared by the daemon and every client command.
struct BusOptions: ParsableArguments {
    @Option(name: .customLong("bus"), help: "session (default), system, or a D-Bus address such as unix:path=/run/bus.")
    var bus: String = "session"

    /// A malformed address is a usage mistake (exit 64, like any value the CLI refuses itself);
    /// a well-formed one nobody answers at is a failure of the command (exit 1).
    func validate() throws {
        guard bus != "session" && bus != "system" else { return }
        do { try DBusAddress.checkSyntax(bus) } catch {
            throw ValidationError("invalid --bus '\(JSONText.visible(bus))': \(JSONText.visible(String(error.message.reversed().drop { $0.isWhitespace }.reversed()))); give session, system or a D-Bus address such as unix:path=/run/bus")
        }
    }

    var description: String {
        switch bus {
        case "session": return "the session bus"
        case "system": return "the system bus"
        default: return bus
        }
    }

    /// `timeout` bounds the handshake with the bus (see `DBusConnection.connect`); nil leaves
    /// libdbus's 25 s, which the daemon's reconnection retries after.
    func connect(host: (any DBusLoopHost)? = nil, timeout: Duration? = nil) async throws -> DBusConnection {
        switch bus {
        case "session": return try await DBusConnection.session(host: host, timeout: timeout)
        case "system": return try await DBusConnection.system(host: host, timeout: timeout)
        default: return try await DBusConnection.connect(address: bus, host: host, timeout: timeout)
        }
    }
}
