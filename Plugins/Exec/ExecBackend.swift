import Subprocess
public import TocsinConfig
public import TocsinCore
public import TocsinTime
#if canImport(SystemPackage)
import SystemPackage
#endif

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

    public func deliver(_ firing: Firing) async throws(DeliveryError) {
        guard let program = command.first else { throw DeliveryError(.permanent, "empty command") }
        var env: [Environment.Key: String] = [:]
        for (k, v) in Self.environment(for: firing, base: baseEnvironment) { env[Environment.Key(stringLiteral: k)] = v }
        var platform = PlatformOptions()
        platform.teardownSequence = [.gracefulShutDown(allowedDurationToNextStep: .seconds(2))]
        let executable: Executable = program.contains("/") ? .path(FilePath(program)) : .name(program)
        let timeout = self.timeout
        let args = Array(command.dropFirst())
        let environment = env
        let platformOptions = platform
        let outcome: Result<TerminationStatus, DeliveryError> = await withTaskGroup(of: Result<TerminationStatus, DeliveryError>?.self) { group in
            group.addTask {
                do {
                    let r = try await Subprocess.run(executable, arguments: Arguments(args), environment: .custom(environment),
                                                     platformOptions: platformOptions, input: .none, output: .discarded, error: .discarded)
                    return .success(r.terminationStatus)
                } catch {
                    return .failure(DeliveryError(.permanent, "cannot run \(program): \(error)"))
                }
            }
            group.addTask {
                try? await Task.sleep(for: .microseconds(timeout.microseconds))
                return Task.isCancelled ? nil : .failure(DeliveryError(.timedOut, "\(program) still running after \(timeout); stopped"))
            }
            var first: Result<TerminationStatus, DeliveryError>?
            for await r in group {
                if let r { first = r; group.cancelAll(); break }
            }
            return first ?? .failure(DeliveryError(.failed, "cancelled"))
        }
        switch outcome {
        case .failure(let e): throw e
        case .success(let status):
            if case .exited(0) = status { return }
            throw DeliveryError(.permanent, "\(program) ended with \(status)")
        }
    }
}

public struct ExecBackendFactory: BackendFactory {
    public init() {}
    public var typeName: String { "exec" }
    public var optionKeys: [String] { ["command", "timeout"] }
    public struct Options: Sendable {
        /// argv; the program is looked up on the daemon's PATH.
        public var command: [String]
        public var timeout: TimeSpan
        public init(command: [String], timeout: TimeSpan = .seconds(30)) {
            self.command = command; self.timeout = timeout
        }
    }

    public func options(from reader: inout some FieldReader, environment: BackendEnvironment) -> Options? {
        guard reader.has("command") else {
            reader.report(FieldIssue(field: "command", location: reader.tableLocation,
                                     message: "missing required key 'command' in \(reader.context) (an argv list, e.g. [\"notify-hook\", \"--quiet\"])"))
            return nil
        }
        guard let command = reader.stringArray("command") else { return nil }
        guard let first = command.first, !first.isEmpty else {
            reader.report("command", "'command' must name a program as its first element")
            return nil
        }
        return Options(command: command, timeout: reader.duration("timeout", positive: true) ?? .seconds(30))
    }

    public func make(name: String, options: Options, environment: BackendEnvironment) -> any DeliveryBackend {
        let command = options.command, timeout = options.timeout
        var base: [String: String] = ["PATH": environment.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"]
        for k in ["HOME", "LANG", "XDG_RUNTIME_DIR", "DBUS_SESSION_BUS_ADDRESS", "DISPLAY", "WAYLAND_DISPLAY"] {
            if let v = environment.environment[k] { base[k] = v }
        }
        return ExecBackend(name: name, command: command, timeout: timeout, baseEnvironment: base)
    }
}
