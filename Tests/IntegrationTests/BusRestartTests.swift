import Foundation
import Testing
import TocsinTesting

@Suite("Bus restarts")
struct BusRestartTests {
    @Test("the bus daemon dies and comes back: Tocsin reconnects, takes its name back and keeps its schedule")
    func reconnect() async throws {
        let listen = try PrivateBus.temporarySocketAddress()
        let bus = try await PrivateBus.start(listenAddress: listen)
        let daemon = try DaemonUnderTest(config: "[backend.log]\ntype = \"log\"\nformat = \"json\"\n", environment: bus.environment)
        let p = try daemon.start(["--bus", listen])
        defer { p.signal(SIGKILL) }
        try await p.waitForStderr(containing: "serving the D-Bus API", timeout: .seconds(30))
        let s = try await TestProcess.run("gdbus", ["call", "--address", bus.address, "-d", GatewayFixture.dest, "-o", GatewayFixture.path,
                                                    "-m", "\(GatewayFixture.iface).Schedule", "{'key': <'kept'>, 'title': <'Kept'>, 'after': <'3s'>}"])
        #expect(s.status == .exited(0), "\(s.stderrText)")

        try await bus.crash()
        try await p.waitForStderr(containing: "lost the bus connection; reconnecting", timeout: .seconds(20))
        // While the bus is away the schedule keeps firing.
        try await p.waitForOutput(containing: "\"key\":\"kept\"", timeout: .seconds(20))

        let again = try await PrivateBus.start(listenAddress: listen)
        defer { Task { await again.stop() } }
        let log = try await p.output.wait("second 'serving the D-Bus API'", timeout: .seconds(30)) {
            $0.stderrText.components(separatedBy: "serving the D-Bus API").count >= 3
        }
        #expect(log.status == nil)
        let ping = try await TestProcess.run("gdbus", ["call", "--address", again.address, "-d", GatewayFixture.dest, "-o", GatewayFixture.path,
                                                       "-m", "org.freedesktop.DBus.Peer.Ping"])
        #expect(ping.status == .exited(0), "\(ping.stderrText)")
        await again.stop()
    }
}
