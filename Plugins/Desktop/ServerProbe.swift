import CLibNotify
import DBus

/// The desktop backend's health before its first popup, without loading libnotify.
///
/// `Status` asks every backend's health, and status bars ask every second. Answering through
/// libnotify would start the GLib loop thread and a GDBus connection, and even loading the library
/// maps GLib, GIO, GObject and gdk-pixbuf (about 2.3 MB of the daemon's resident pages), all kept
/// for the rest of the life of a daemon that may never show a popup (docs/BENCHMARKS.md
/// "Footprint"). Until a popup loads it (`LibNotifyRuntime`), the probe asks who owns the server's
/// name over a libdbus connection of its own, as `serverProblem` asks over a GLib one, and the
/// answers read as `serverProblem`'s. A library that is missing is therefore reported from the
/// first popup that tried to load it on (that load's reason), not before.
enum ServerProbe {
    /// As long as `serverProblem` waits for the bus's answer.
    static let timeout = Duration.seconds(5)

    /// Why a popup could not be shown now, nil when one could.
    static func problem() async -> String? {
        // A load that failed keeps failing: its reason, not the bus's answer.
        if tocsin_libnotify_load_error() != nil { return LibNotifyRuntime.unavailableReason }
        let bus: DBusConnection
        do {
            bus = try await DBusConnection.session()
        } catch {
            return "no session bus (\(DBusError.from(error).message))"
        }
        defer { bus.close() }
        do {
            _ = try await bus.call(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                                   interface: .bus, member: "GetNameOwner",
                                   arguments: [.string(NotifyServerLink.serverName)], timeout: timeout)
            return nil
        } catch let e as DBusError where e.code == .nameHasNoOwner {
            return "no notification server"
        } catch {
            return "cannot ask the session bus for the notification server: \(DBusError.from(error).message)"
        }
    }
}
