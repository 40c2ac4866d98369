public import DBus
public import Logging
public import TocsinConfig
public import TocsinCore
import TocsinTime
import TocsinModel
public import TocsinSystem

/// What the daemon is given by whoever runs it: the `tocsin daemon` command, or a test that runs
/// the whole daemon in its own process on a private bus.
public struct DaemonSetup: Sendable {
    /// The config as loaded and validated at start.
    public var config: LoadedConfig
    /// Reads and validates the config again, for a reload (SIGHUP or D-Bus `Reload`).
    public var reloadConfig: @Sendable () -> Result<LoadedConfig, ConfigLoadError>
    /// The backend types the binary links, given the link the `dbus-signal` backend emits on.
    public var registry: @Sendable (BusLink) -> BackendRegistry
    /// nil: `[daemon] state_dir`, else `$XDG_STATE_HOME/tocsin`.
    public var stateDirectory: String?
    public var connect: @Sendable () async throws -> DBusConnection
    /// How the bus is named in log lines ("the session bus").
    public var busDescription: String
    public var clock: any TocsinClock
    public var makeTimer: @Sendable () throws -> any WakeupTimer
    public var logger: Logger
    public var environment: [String: String]
    /// The largest message the bus takes when `[daemon] max_message_size` does not say: the
    /// session bus's stock config allows more than the protocol's 128 MiB; a dbus-daemon whose
    /// config sets no limit (the system bus, a private test bus) takes 32 MiB.
    public var busMessageLimit = DaemonSetup.unconfiguredBusLimit
    public static let sessionBusLimit = DaemonKeys.sessionBusMessageLimit
    public static let unconfiguredBusLimit = DaemonKeys.unconfiguredBusMessageLimit
    /// Told when the daemon is ready, reloading or stopping (systemd's sd_notify).
    public var notify: @Sendable (DaemonState) -> Void = { _ in }
    /// Reaches the system bus, where logind announces sleep (`SleepWatch`); nil: sleep is not
    /// watched. `tocsin daemon` connects where `DBUS_SYSTEM_BUS_ADDRESS` says, as libdbus does.
    public var connectSystem: (@Sendable () async throws -> DBusConnection)?
    /// The wake-alarm timer, given `[daemon] wake_alarms`: a `CLOCK_REALTIME_ALARM` timerfd.
    public var makeWakeAlarm: @Sendable (_ allowed: Bool) -> (any WakeAlarm)? = { AlarmTimerFD(allowed: $0) }

    public init(config: LoadedConfig, reloadConfig: @escaping @Sendable () -> Result<LoadedConfig, ConfigLoadError>,
                registry: @escaping @Sendable (BusLink) -> BackendRegistry, stateDirectory: String?,
                connect: @escaping @Sendable () async throws -> DBusConnection, busDescription: String,
                clock: any TocsinClock, makeTimer: @escaping @Sendable () throws -> any WakeupTimer, logger: Logger,
                environment: [String: String]) {
        self.config = config; self.reloadConfig = reloadConfig; self.registry = registry
        self.stateDirectory = stateDirectory; self.connect = connect; self.busDescription = busDescription
        self.clock = clock; self.makeTimer = makeTimer; self.logger = logger; self.environment = environment
    }

    /// `$XDG_STATE_HOME/tocsin`, else `~/.local/state/tocsin`.
    public static func defaultStateDirectory(_ env: [String: String]) -> String {
        if let x = env["XDG_STATE_HOME"], x.hasPrefix("/") { return x + "/tocsin" }
        return (env["HOME"] ?? ".") + "/.local/state/tocsin"
    }
}

public enum DaemonState: Sendable, Hashable {
    case ready(status: String)
    case reloading
    case stopping
}

/// Why the daemon could not start.
public struct DaemonError: Error, Sendable, CustomStringConvertible {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Backing: String { case invalidConfig = "invalid-config", storage, nameTaken = "name-taken", setup }
        private let backing: Backing
        private init(_ b: Backing) { backing = b }
        /// The config (or a backend table in it) is invalid; `message` holds the rendered diagnostics.
        public static let invalidConfig = Code(.invalidConfig)
        /// The state database cannot be opened or written.
        public static let storage = Code(.storage)
        /// Another daemon owns the bus name.
        public static let nameTaken = Code(.nameTaken)
        /// The process could not set up a timer or thread.
        public static let setup = Code(.setup)
        public var description: String { backing.rawValue }
    }
    public var code: Code
    public var message: String
    public init(_ code: Code, _ message: String) { self.code = code; self.message = message }
    public var description: String { message }
}

/// Checks a loaded config beyond its syntax: every backend table builds with the linked backend
/// types, and every zone name exists. `tocsin check`, start-up and reload share it.
public enum ConfigValidation: Sendable {
    public static func validate(_ loaded: LoadedConfig, registry: BackendRegistry, environment: [String: String],
                                earlier: [Diagnostic] = []) -> Result<LoadedConfig, ConfigLoadError> {
        var diags = earlier
        let quiet = Logger(label: "tocsin.check") { _ in SwiftLogNoOpLogHandler() }
        if case .failure(let e) = registry.makeBackends(for: loaded.configuration, file: loaded.file,
                                                        environment: BackendEnvironment(logger: quiet, environment: environment)) {
            diags += e.diagnostics
        }
        let zones = ZoneCache()
        let daemon = loaded.configuration.daemon
        // The zone a notification or window runs in: its own, else [daemon]'s, else $TZ or the system's.
        func local(_ own: String?) -> TimeZoneRules {
            (own ?? daemon.timezone).flatMap { try? zones.rules($0) } ?? zones.directory.defaultZone(tz: environment["TZ"])
        }
        func known(_ name: String?, in place: String, at location: SourceLocation) -> Bool {
            guard let name else { return true }
            do { _ = try zones.zone(named: name, in: place) } catch {
                diags.append(Diagnostic(file: loaded.file, location: location, message: error.message))
                return false
            }
            return true
        }
        _ = known(daemon.timezone, in: "[daemon]", at: SourceLocation(line: 1, column: 1))
        for n in loaded.configuration.notifications {
            _ = known(n.timezone, in: "notification '\(n.key ?? "")'", at: n.location)
            if case .onCalendar(let c) = n.trigger {
                do { _ = try c.resolvingZone(local: local(n.timezone), rules: zones.rules) } catch {
                    diags.append(Diagnostic(file: loaded.file, location: n.triggerLocation,
                                            message: "\(error.message) in 'on_calendar'"))
                }
            }
        }
        for (i, w) in loaded.configuration.quiet.windows.enumerated() {
            guard known(w.timezone, in: "[[quiet.window]] #\(i + 1)", at: w.timezoneLocation) else { continue }
            do { _ = try w.onCalendar.resolvingZone(local: local(w.timezone), rules: zones.rules) } catch {
                diags.append(Diagnostic(file: loaded.file, location: w.calendarLocation,
                                        message: "\(error.message) in [[quiet.window]] #\(i + 1) 'on_calendar'"))
            }
        }
        if diags.isEmpty { return .success(loaded) }
        return .failure(ConfigLoadError(code: .invalid, file: loaded.file, diagnostics: diags.sorted { $0.location < $1.location },
                                        source: loaded.source))
    }
}
