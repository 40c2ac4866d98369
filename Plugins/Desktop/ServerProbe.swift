import CLibNotify
import DBus

/// The desktop backend's health before its first popup, without starting GLib.
///
/// `Status` asks every backend's health, and the first such question used to start the GLib loop
/// thread and a GDBus connection just to ask the bus one question: about 1.8 MB of GIO and GLib
/// pages and three threads, kept for the rest of the life of a daemon that may never show a popup
/// (docs/BENCHMARKS.md "Footprint"). Until a popup starts that link (`LibNotifyRuntime`), the same
/// two facts are read here instead: that libnotify loads (the one load `show` would do, so a
/// missing library keeps its reason), and who owns the server's name, asked over a libdbus
/// connection of the probe's own as `serverProblem` asks over a GLib one of its own. The answers
/// read as `serverProblem`'s.
enum ServerProbe {
    /// As long as `serverProblem` waits for the bus's answer.
    static let timeout = Duration.seconds(5)

    /// Why a popup could not be shown now, nil when one could.
    static func problem() async -> String? {
        guard tocsin_libnotify_load() != 0 else { return LibNotifyRuntime.unavailableReason }
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
