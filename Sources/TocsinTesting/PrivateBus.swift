import Glibc

/// A private `dbus-daemon` for one test or suite, started from the committed config
/// (`contrib/test/dbus-session.conf`: session type, EXTERNAL auth, allow-all policy, no
/// service directories, so nothing is ever auto-started) and reaped when stopped.
///
/// The daemon runs in the foreground (`--nofork`) as our child, so the test owns it: it can be
/// killed to simulate a bus crash, and `stop()` waits until it has really exited.
public final class PrivateBus: Sendable {
    /// The address clients use (`unix:path=...,guid=...`).
    public let address: String
    public let process: TestProcess

    /// The committed config, found relative to this source file (the package root is three
    /// levels up), so tests work from any checkout without configuration.
    public static let defaultConfigFile: String = {
        var parts = "\(#filePath)".split(separator: "/", omittingEmptySubsequences: false)
        parts.removeLast(3)
        return parts.joined(separator: "/") + "/contrib/test/dbus-session.conf"
    }()

    /// The committed system-bus config (`contrib/test/dbus-system.conf`), for a bus that plays
    /// the system bus (logind's, mocked by python3-dbusmock) beside the session one.
    public static let systemConfigFile: String = {
        var parts = "\(#filePath)".split(separator: "/", omittingEmptySubsequences: false)
        parts.removeLast(3)
        return parts.joined(separator: "/") + "/contrib/test/dbus-system.conf"
    }()

    private init(address: String, process: TestProcess) {
        self.address = address
        self.process = process
    }

    /// Starts a daemon and waits (bounded) until it prints its address, i.e. accepts clients.
    /// `listenAddress` overrides the config's `<listen>`, e.g. to restart a bus at the same path.
    public static func start(
        configFile: String = defaultConfigFile, listenAddress: String? = nil, timeout: Duration = .seconds(15)
    ) async throws -> PrivateBus {
        var arguments = ["--config-file=\(configFile)", "--nofork", "--print-address"]
        if let listenAddress { arguments.append("--address=\(listenAddress)") }
        Registry.sweep()
        let process = try TestProcess("dbus-daemon", arguments)
        Registry.record(daemon: process.pid)
        let printed: String
        do {
            printed = try await process.waitForOutput(containing: "\n", timeout: timeout)
        } catch {
            _ = try? await process.kill()
            throw TestProcessError("dbus-daemon did not start: \(error); stderr: \(process.stderr)")
        }
        let address = printed.split(separator: "\n").first.map(String.init) ?? ""
        return PrivateBus(address: address, process: process)
    }

    /// Runs `body` with a fresh bus and always stops the bus afterwards.
    public static func with<T: Sendable>(
        configFile: String = defaultConfigFile, _ body: (PrivateBus) async throws -> T
    ) async throws -> T {
        let bus = try await start(configFile: configFile)
        do {
            let result = try await body(bus)
            await bus.stop()
            return result
        } catch {
            await bus.stop()
            throw error
        }
    }

    /// Environment for child processes that should use this bus as their session bus.
    public var environment: [String: String] {
        ["DBUS_SESSION_BUS_ADDRESS": address, "DBUS_SYSTEM_BUS_ADDRESS": address]
    }

    /// The `unix:path=...` part of the address, without the guid (what `--address` accepts).
    public var socketAddress: String {
        address.split(separator: ",").first.map(String.init) ?? address
    }

    /// Asks the daemon to exit (SIGTERM, so it removes its socket) and reaps it; escalates to
    /// SIGKILL if it has not exited within `timeout`.
    public func stop(timeout: Duration = .seconds(10)) async {
        process.signal(SIGTERM)
        if (try? await process.waitForExit(timeout: timeout)) == nil {
            _ = try? await process.kill()
        }
        if process.status != nil {
            Registry.forget(daemon: process.pid)
            removeSocket(andDirectory: true)
        }
    }

    /// Kills the daemon abruptly (a bus crash, as clients see it) and reaps it.
    public func crash() async throws {
        try await process.kill()
        Registry.forget(daemon: process.pid)
        // A killed daemon leaves its socket behind; the directory stays for a restart.
        removeSocket(andDirectory: false)
    }

    /// The filesystem socket of a `unix:path=` address, if that is what the daemon listens on.
    public var socketPath: String? {
        guard address.hasPrefix("unix:"), let fields = address.split(separator: ":", maxSplits: 1).last else { return nil }
        for field in fields.split(separator: ",") where field.hasPrefix("path=") { return String(field.dropFirst(5)) }
        return nil
    }

    private func removeSocket(andDirectory: Bool) {
        guard let path = socketPath else { return }
        unlink(path)
        // Only directories made by `temporarySocketAddress()` are ours to remove.
        if andDirectory, let slash = path.lastIndex(of: "/") {
            let dir = String(path[..<slash])
            if dir.hasPrefix("/tmp/tocsin-bus-") { rmdir(dir) }
        }
    }

    /// Daemons outlive a test process that crashes (they are reparented, not killed). Each
    /// running daemon is recorded with its owner's pid; starting a bus first kills daemons
    /// whose owner is gone, so a crashed run does not leave buses behind for long.
    enum Registry {
        static let directory = "/tmp/tocsin-private-buses"

        static func record(daemon: pid_t) {
            mkdir(directory, 0o700)
            let path = "\(directory)/\(daemon)"
            guard let f = fopen(path, "w") else { return }
            fputs("\(getpid())\n", f)
            fclose(f)
        }

        static func forget(daemon: pid_t) {
            unlink("\(directory)/\(daemon)")
        }

        static func sweep() {
            guard let dir = opendir(directory) else { return }
            var stale: [pid_t] = []
            while let entry = readdir(dir) {
                let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                    String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
                }
                guard let daemon = pid_t(name) else { continue }
                guard let owner = readOwner("\(directory)/\(name)") else { continue }
                if Glibc.kill(owner, 0) == -1 && errno == ESRCH { stale.append(daemon) }
            }
            closedir(dir)
            for daemon in stale {
                if isDBusDaemon(daemon) { _ = Glibc.kill(daemon, SIGKILL) }
                forget(daemon: daemon)
            }
        }

        private static func readOwner(_ path: String) -> pid_t? {
            guard let f = fopen(path, "r") else { return nil }
            defer { fclose(f) }
            var buffer = [CChar](repeating: 0, count: 32)
            guard fgets(&buffer, 32, f) != nil else { return nil }
            let text = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            return pid_t(text.trimmingNewline())
        }

        private static func isDBusDaemon(_ pid: pid_t) -> Bool {
            guard let f = fopen("/proc/\(pid)/comm", "r") else { return false }
            defer { fclose(f) }
            var buffer = [CChar](repeating: 0, count: 64)
            guard fgets(&buffer, 64, f) != nil else { return false }
            return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
                .hasPrefix("dbus-daemon")
        }
    }

    /// A fresh socket path in a new private directory, for `start(listenAddress:)`.
    public static func temporarySocketAddress() throws -> String {
        var template = Array("/tmp/tocsin-bus-XXXXXX".utf8CString)
        guard let dir = mkdtemp(&template) else { throw TestProcessError("mkdtemp failed: errno \(errno)") }
        return "unix:path=" + String(cString: dir) + "/bus"
    }
}

extension String {
    fileprivate func trimmingNewline() -> String {
        var s = self
        while s.last == "\n" || s.last == "\r" || s.last == " " { s.removeLast() }
        return s
    }
}
