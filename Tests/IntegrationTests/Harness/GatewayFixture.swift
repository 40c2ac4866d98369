import Foundation
import TocsinTesting

/// A private bus, a daemon serving the gateway on it, and the command-line clients we did not
/// write (gdbus, busctl, dbus-send, python3-dbus) pointed at that bus. The built binary's
/// launcher: `DaemonHarness`'s binary mode, and the suites that drive the program with those
/// clients, start the daemon through it (`DaemonUnderTest` is the process it runs).
final class GatewayFixture: Sendable {
    let bus: PrivateBus
    let daemon: DaemonUnderTest
    let process: TestProcess

    static let dest = "io.github.tocsin.Gateway"
    static let path = "/io/github/tocsin/Gateway"
    static let iface = "io.github.tocsin.Gateway1"

    static let defaultConfig = """
        [backend.events]
        type = "dbus-signal"

        [backend.log]
        type = "log"
        format = "json"
        """

    private init(bus: PrivateBus, daemon: DaemonUnderTest, process: TestProcess) {
        self.bus = bus
        self.daemon = daemon
        self.process = process
    }

    /// `busConfig`: a bus config file instead of the committed default (`contrib/test/`).
    static func start(config: String = defaultConfig, arguments: [String] = [],
                      environment: [String: String] = [:], busConfig: String? = nil) async throws -> GatewayFixture {
        let bus = try await PrivateBus.start(configFile: busConfig ?? PrivateBus.defaultConfigFile)
        let daemon = try DaemonUnderTest(config: config, environment: bus.environment.merging(environment) { $1 })
        let p = try daemon.start(["--bus", bus.address] + arguments)
        do {
            try await p.waitForStderr(containing: "serving the D-Bus API", timeout: .seconds(30))
        } catch {
            await bus.stop()
            throw error
        }
        return GatewayFixture(bus: bus, daemon: daemon, process: p)
    }

    func stop() async {
        process.signal(SIGTERM)
        _ = try? await process.waitForExit(timeout: .seconds(10))
        await bus.stop()
    }

    /// `gdbus call` on the gateway; returns the output, or throws with gdbus's error text.
    func gdbus(_ method: String, _ args: String...) async throws -> TestProcess.Output {
        try await TestProcess.run("gdbus", ["call", "--address", bus.address, "-d", Self.dest, "-o", Self.path,
                                            "-m", "\(Self.iface).\(method)"] + args)
    }

    func busctl(_ args: String...) async throws -> TestProcess.Output {
        try await TestProcess.run("busctl", ["--address=\(bus.address)"] + args)
    }

    func tocsin(_ args: String...) async throws -> TestProcess.Output {
        try await TestProcess.run(Products.executable("tocsin"), args + ["--bus", bus.address])
    }

    /// The daemon still answers: Peer.Ping and List.
    func isHealthy() async throws -> Bool {
        let ping = try await TestProcess.run("dbus-send", ["--bus=\(bus.address)", "--print-reply", "--dest=\(Self.dest)",
                                                           Self.path, "org.freedesktop.DBus.Peer.Ping"])
        let list = try await gdbus("List")
        return ping.status == .exited(0) && list.status == .exited(0) && process.status == nil
    }

    /// Runs a Python snippet with dbus-python against the bus (`ADDRESS` is set in its globals).
    func python(_ code: String) async throws -> TestProcess.Output {
        try await TestProcess.run("/usr/bin/python3", ["-c", "ADDRESS = '\(bus.address)'\n" + code], timeout: .seconds(60))
    }

    /// This file is `Tests/IntegrationTests/Harness/GatewayFixture.swift`: the root is four levels up.
    static var repositoryRoot: String {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<4 { url = url.deletingLastPathComponent() }
        return url.path
    }
}

/// Runs `body` with a fresh gateway and always tears it down.
func withGateway<T: Sendable>(config: String = GatewayFixture.defaultConfig, arguments: [String] = [],
                              environment: [String: String] = [:], busConfig: String? = nil,
                              _ body: (GatewayFixture) async throws -> T) async throws -> T {
    let g = try await GatewayFixture.start(config: config, arguments: arguments, environment: environment, busConfig: busConfig)
    do {
        let r = try await body(g)
        await g.stop()
        return r
    } catch {
        await g.stop()
        throw error
    }
}
