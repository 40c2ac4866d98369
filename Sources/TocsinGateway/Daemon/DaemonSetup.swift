public import DBus
public import Logging
import TocsinConfig
public import TocsinCore
import TocsinTime
import TocsinModel
public import TocsinSystem

/// What the daemon is given by whoever runs it: the `tocsin daemon` command, or a test that runs
/// the whole daemon in its own process on a private bus.
public struct DaemonSetup: Sendable, CustomStringConvertible {
    /// Where the config is read, at start and again at each reload (SIGHUP or D-Bus `Reload`):
    /// the daemon runs the whole `ConfigPlan` itself and needs only this and `registry`.
    public var source: ConfigSource
    /// The config as the command already read and checked it from `source`: it needed the log
    /// level, and a bad config's diagnostics on the terminal, before there was a daemon. Its
    /// backends are built by the daemon's registry. nil: the daemon reads `source` at start.
    public var config: ValidatedConfig?
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

    public init(source: ConfigSource, config: ValidatedConfig? = nil,
                registry: @escaping @Sendable (BusLink) -> BackendRegistry, stateDirectory: String?,
                connect: @escaping @Sendable () async throws -> DBusConnection, busDescription: String,
                clock: any TocsinClock, makeTimer: @escaping @Sendable () throws -> any WakeupTimer, logger: Logger,
                environment: [String: String]) {
        self.source = source; self.config = config; self.registry = registry
        self.stateDirectory = stateDirectory; self.connect = connect; self.busDescription = busDescription
        self.clock = clock; self.makeTimer = makeTimer; self.logger = logger; self.environment = environment
    }

    /// Whatever prints a setup (a log line, a service's default description) must not print
    /// `environment`: it holds whatever secrets the daemon was started with.
    public var description: String {
        "DaemonSetup(config: \(config?.loaded.file ?? "read at start"), state: \(stateDirectory ?? "default"), bus: \(busDescription))"
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
