public import TocsinCore
public import TocsinTime
public import TocsinModel
import TocsinSystem

/// `type = "exec"`: runs a program for each firing.
///
/// The program is an argv list run without a shell, and notification text travels only in
/// `TOCSIN_*` environment variables, never in argv: a title such as `--delete-all` or `$(rm -rf ~)`
/// stays data. The environment is minimal (PATH, HOME, LANG) so secrets in the daemon's
/// environment do not leak to hooks.
public struct ExecBackend: DeliveryBackend {
    public let name: String
    public let command: [String]
    public let timeout: TimeSpan
    public let baseEnvironment: [String: String]

    public init(name: String, command: [String], timeout: TimeSpan = .seconds(30), baseEnvironment: [String: String] = [:]) {
        self.name = name
        self.command = command
        self.timeout = timeout
        self.baseEnvironment = baseEnvironment
    }

    /// The variables a hook receives.
    public static func environment(for f: Firing, base: [String: String]) -> [String: String] {
        var env = base
        let n = f.notification
        env["TOCSIN_KEY"] = n.key
        env["TOCSIN_TITLE"] = n.title
        env["TOCSIN_BODY"] = n.body
        env["TOCSIN_URGENCY"] = n.urgency.rawValue
        env["TOCSIN_DUE"] = Timestamp.rfc3339UTC(f.due)
        env["TOCSIN_DUE_USEC"] = String(f.due.microseconds)
        env["TOCSIN_FIRED"] = Timestamp.rfc3339UTC(f.fired)
        env["TOCSIN_OCCURRENCE"] = String(f.occurrence.number)
        env["TOCSIN_LATE"] = f.late ? "1" : "0"
        env["TOCSIN_REASON"] = f.reason.rawValue
        if let o = f.occurrence.offset { env["TOCSIN_BEFORE"] = o.description }
        if let c = n.category { env["TOCSIN_CATEGORY"] = c }
        if let s = n.sound { env["TOCSIN_SOUND"] = s }
        for (k, v) in n.userInfo {
            let ok = !k.isEmpty && k.unicodeScalars.allSatisfy { ($0 >= "a" && $0 <= "z") || ($0 >= "A" && $0 <= "Z") || ($0 >= "0" && $0 <= "9") || $0 == "_" }
            if ok { env["TOCSIN_INFO_" + k.uppercased()] = v }
        }
        return env
    }

    static let defaultPath = "/usr/local/bin:/usr/bin:/bin"

    /// Runs the hook as a `ChildProcess`, as alarms run their players: its own process group, so
    /// the timeout stops whatever it started too, and the deadline kept on the child's own thread.
    public func deliver(_ firing: Firing) async throws(DeliveryError) {
        guard let program = command.first, !program.isEmpty else { throw DeliveryError(.permanent, "empty command") }
        let environment = Self.environment(for: firing, base: baseEnvironment)
        var argv = command
        if !program.contains("/") {
            // Looked up at each firing: a hook installed after the daemon started is found.
            guard let path = Spawn.lookUp(program, path: environment["PATH"] ?? Self.defaultPath) else {
                throw DeliveryError(.permanent, "cannot run \(program): not found on PATH")
            }
            argv[0] = path
        }
        let child: ChildProcess
        do {
            child = try ChildProcess.spawn(argv, environment: environment, cap: .microseconds(timeout.microseconds), grace: .seconds(2))
        } catch {
            throw DeliveryError(error.isTransient ? .unavailable : .permanent, error.description)
        }
        guard let exit = await child.waitForExit() else {
            // The delivery was abandoned (shutdown): the hook goes with it.
            _ = await child.stop(.withdrawn(.shutdown))
            throw DeliveryError(.failed, "\(program) stopped: the delivery was cancelled")
        }
        if exit.stoppedBy == .capped { throw DeliveryError(.timedOut, "\(program) still running after \(timeout); stopped") }
        if exit.status.isSuccess { return }
        throw DeliveryError(.permanent, "\(program) ended with \(exit.status)")
    }
}

public struct ExecBackendFactory: BackendFactory {
    public init() {}
    public var typeName: String { "exec" }
    public var optionKeys: [String] { ["command", "timeout"] }
    public struct Options: Sendable, Equatable {
        /// argv; the program is looked up on the daemon's PATH.
        public var command: [String]
        public var timeout: TimeSpan
        public init(command: [String], timeout: TimeSpan = .seconds(30)) {
            self.command = command; self.timeout = timeout
        }
    }

    /// `timeout` is read whatever `command` holds: a key left unread is reported as unknown.
    public func options(from reader: inout some FieldReader, environment: BackendEnvironment) -> Options? {
        let before = reader.issues.count
        var command: [String]?
        if !reader.has("command") {
            reader.report(FieldIssue(field: "command", location: reader.tableLocation,
                                     message: "missing required key 'command' in \(reader.context) (an argv list, e.g. [\"notify-hook\", \"--quiet\"])"))
        } else if let argv = reader.stringArray("command") {
            if let first = argv.first, !first.isEmpty { command = argv } else {
                reader.report("command", "'command' must name a program as its first element")
            }
        }
        let timeout = reader.duration("timeout", positive: true)
        guard let command, reader.issues.count == before else { return nil }
        return Options(command: command, timeout: timeout ?? .seconds(30))
    }

    public func make(name: String, options: Options, environment: BackendEnvironment) -> any DeliveryBackend {
        let command = options.command, timeout = options.timeout
        var base: [String: String] = ["PATH": environment.environment["PATH"] ?? ExecBackend.defaultPath]
        for k in ["HOME", "LANG", "XDG_RUNTIME_DIR", "DBUS_SESSION_BUS_ADDRESS", "DISPLAY", "WAYLAND_DISPLAY"] {
            if let v = environment.environment[k] { base[k] = v }
        }
        return ExecBackend(name: name, command: command, timeout: timeout, baseEnvironment: base)
    }
}
