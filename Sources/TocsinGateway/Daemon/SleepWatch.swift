public import DBus
import Glibc
public import Logging
import Synchronization
public import TocsinCore
import TocsinTime
import TocsinSystem

/// What the daemon knows about logind: whether it watches sleep, and whether it holds its
/// inhibitor now (`Status`).
public enum SleepWatchState: Hashable, Sendable, CustomStringConvertible {
    /// Not started yet, or no way to reach the system bus was given.
    case off(String)
    /// Watching `PrepareForSleep`; `inhibited`: the delay inhibitor is held.
    case watching(inhibited: Bool)

    public var description: String {
        switch self {
        case .off(let why): return "off: \(why)"
        case .watching(let inhibited): return inhibited ? "watching logind (delay inhibitor held)" : "watching logind (sleeping or inhibitor released)"
        }
    }
}

/// logind's sleep announcements, on the system bus (`DBUS_SYSTEM_BUS_ADDRESS`, as libdbus reads it).
///
/// The daemon holds a `delay` sleep inhibitor. On `PrepareForSleep(true)` it commits what is
/// queued, arms the wake alarm for the schedule as it stands, pauses what backends play, and then
/// releases the inhibitor so the machine may sleep. On `PrepareForSleep(false)` it takes the
/// inhibitor again, lets backends go on, and runs the catch-up at once: the same tick a clock
/// jump causes (`WakeReason.clockChanged`), so missed firings follow their policy, `max_late`
/// and `Missed` exactly as after any other resume. Without a system bus or logind all of this is
/// off, said once in the log, and nothing else changes.
///
/// Checked `Sendable`: the inhibitor descriptor and the state sit in `Mutex`es.
public final class SleepWatch: Sendable {
    static let login1: BusName = "org.freedesktop.login1"
    static let path: ObjectPath = "/org/freedesktop/login1"
    static let manager: InterfaceName = "org.freedesktop.login1.Manager"
    /// `who` and `why` of the inhibitor, as `systemd-inhibit --list` shows them.
    public static let who = "Tocsin"
    public static let why = "save state and arm wake alarms"

    private let center: TocsinCenter
    private let logger: Logger
    private let inhibitor = Mutex<Int32>(-1)
    private let current = Mutex<SleepWatchState>(.off("not started"))
    /// The last announcement was `PrepareForSleep(true)`.
    private let asleep = Mutex(false)

    public init(center: TocsinCenter, logger: Logger) {
        self.center = center
        self.logger = logger
    }

    public var state: SleepWatchState { current.withLock { $0 } }

    /// Watches until the connection ends or the task is cancelled. `connect` reaches the system
    /// bus; nil: sleep is not watched.
    public func run(connect: (@Sendable () async throws -> DBusConnection)?) async {
        guard let connect else {
            off("no system bus connection configured")
            return
        }
        let bus: DBusConnection
        do { bus = try await connect() } catch {
            off("no system bus (\(Self.plain(error)))")
            return
        }
        defer { bus.close(); release() }
        let signals: DBusSignalSubscription
        do {
            signals = try await bus.subscribe(MatchRule(sender: Self.login1, interface: Self.manager,
                                                        member: "PrepareForSleep", path: Self.path))
            try await inhibit(bus)
        } catch {
            off("logind is not reachable on the system bus (\(Self.plain(error)))")
            return
        }
        logger.info("watching logind for sleep", metadata: ["inhibitor": "delay"])
        await withTaskCancellationHandler {
            for await signal in signals {
                guard let first = signal.arguments.first, case .boolean(let sleeping) = first else { continue }
                if sleeping { await beforeSleep() } else { await afterResume(bus) }
            }
        } onCancel: {
            signals.cancel()
        }
        // The system bus went away (it restarts only with the machine): sleep is no longer
        // followed, the inhibitor is gone with the connection, and firing goes on as without logind.
        // A player paused for a sleep whose end will never be announced goes on now.
        if asleep.withLock({ $0 }) {
            asleep.withLock { $0 = false }
            await center.systemSleep(false)
        }
        if !Task.isCancelled { off("the system bus connection ended") }
    }

    /// libdbus's text without the D-Bus error name: this is said on every machine without
    /// logind, and `org.freedesktop.DBus.Error.FileNotFound` reads as a fault to a user.
    static func plain(_ error: any Error) -> String {
        guard let e = error as? DBusError, !e.message.isEmpty else { return "\(error)" }
        return e.message
    }

    private func off(_ why: String) {
        current.withLock { $0 = .off(why) }
        logger.notice("sleep and resume are not watched: \(why); wake alarms and firing are unaffected")
    }

    private func beforeSleep() async {
        asleep.withLock { $0 = true }
        await center.settle()
        await center.systemSleep(true)
        let wake = await center.nextWake()
        release()
        logger.info("system going to sleep; state committed, inhibitor released",
                    metadata: ["wake": "\(wake.map { "\(Timestamp.rfc3339UTC($0.instant)) (\($0.key))" } ?? "none")"])
    }

    private func afterResume(_ bus: DBusConnection) async {
        do { try await inhibit(bus) } catch {
            logger.warning("could not take the sleep inhibitor again after resume: \(error)")
        }
        asleep.withLock { $0 = false }
        logger.info("system resumed; catching up on what fell due")
        await center.systemSleep(false)
        await center.tick(.clockChanged)
    }

    /// `Inhibit("sleep", who, why, "delay")`: logind waits (up to its `InhibitDelayMaxSec`) until
    /// the returned descriptor is closed.
    private func inhibit(_ bus: DBusConnection) async throws {
        let reply = try await bus.call(destination: Self.login1, path: Self.path, interface: Self.manager, member: "Inhibit",
                                       arguments: [.string("sleep"), .string(Self.who), .string(Self.why), .string("delay")],
                                       timeout: .seconds(5))
        guard let first = reply.first, case .unixFD(let fd) = first, fd >= 0 else {
            throw DBusError(.invalidArgs, "Inhibit returned no file descriptor")
        }
        let old = inhibitor.withLock { held in
            let o = held
            held = fd
            return o
        }
        if old >= 0 { close(old) }
        current.withLock { $0 = .watching(inhibited: true) }
    }

    private func release() {
        let fd = inhibitor.withLock { held in
            let o = held
            held = -1
            return o
        }
        if fd >= 0 { close(fd) }
        current.withLock { if case .watching = $0 { $0 = .watching(inhibited: false) } }
    }
}
