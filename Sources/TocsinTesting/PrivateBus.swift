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
        let process = try TestProcess("dbus-daemon", arguments)
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
    }

    /// Kills the daemon abruptly (a bus crash, as clients see it) and reaps it.
    public func crash() async throws {
        try await process.kill()
    }

    /// A fresh socket path in a new private directory, for `start(listenAddress:)`.
    public static func temporarySocketAddress() throws -> String {
        var template = Array("/tmp/tocsin-bus-XXXXXX".utf8CString)
        guard let dir = mkdtemp(&template) else { throw TestProcessError("mkdtemp failed: errno \(errno)") }
        return "unix:path=" + String(cString: dir) + "/bus"
    }
}
