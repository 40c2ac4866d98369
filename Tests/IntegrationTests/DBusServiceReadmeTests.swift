import Foundation
import Testing
import TocsinTesting

/// The `dbus-service` walk-through of docs/DBUS-API.md with the built `tocsin` binary (so the backend
/// type as the binary registers it), the document's own config and the example service, on a private bus.
@Suite("dbus-service walk-through in docs/DBUS-API.md")
struct DBusServiceReadmeTests {
    /// The first ```toml block after the section heading.
    static var readmeConfig: String {
        let readme = (try? String(contentsOfFile: GatewayFixture.repositoryRoot + "/docs/DBUS-API.md", encoding: .utf8)) ?? ""
        guard let section = readme.range(of: "## Out-of-process backends") else { return "" }
        let rest = readme[section.upperBound...]
        guard let open = rest.range(of: "```toml\n"), let close = rest[open.upperBound...].range(of: "```") else { return "" }
        return String(rest[open.upperBound..<close.lowerBound])
    }

    @Test("tocsin check accepts the documented config and names a bad bus_name at file:line:column; post reaches the example service, its action comes back, status says ok")
    func walkThrough() async throws {
        let config = Self.readmeConfig
        #expect(config.contains("type = \"dbus-service\""), "docs/DBUS-API.md's section has no dbus-service config")
        let dir = TemporaryDirectory(prefix: "tocsin-dbsvc-readme")
        let file = try dir.write("bridge.toml", config)
        let check = try await TestProcess.run(Products.executable("tocsin"), ["check", file])
        #expect(check.status == .exited(0), "\(check.stdoutText)\(check.stderrText)")
        let bad = try dir.write("bad.toml", "[backend.bridge]\ntype = \"dbus-service\"\nbus_name = \":1.5\"\n")
        let refused = try await TestProcess.run(Products.executable("tocsin"), ["check", bad])
        #expect(refused.status == .exited(1))
        #expect(refused.stderrText.contains("bad.toml:3:12: error: 'bus_name' in [backend.bridge] must be a well-known bus name"),
                "\(refused.stdoutText)\(refused.stderrText)")

        try await withGateway(config: config) { g in
            let service = try TestProcess("/usr/bin/python3", ["-u", GatewayFixture.repositoryRoot + "/contrib/backends/tocsin-backend-example.py",
                                                               "--address", g.bus.address, "--bus-name", "org.example.ChatBridge",
                                                               "--report", "action:join"])
            _ = try await service.waitForOutput(containing: "ready org.example.ChatBridge", timeout: .seconds(20))
            let monitor = try TestProcess("dbus-monitor", ["--address", g.bus.address,
                                                           "type='signal',interface='io.github.tocsin.Gateway1',member='ActionInvoked'"])
            _ = try await monitor.waitForOutput(containing: "NameAcquired", timeout: .seconds(20))

            let post = try await g.tocsin("post", "--key", "hello", "--title", "Build finished", "--backend", "bridge")
            #expect(post.status == .exited(0), "\(post.stderrText)")
            let delivered = try await service.waitForOutput(containing: "\"key\": \"hello\"", timeout: .seconds(20))
            #expect(delivered.contains("\"title\": \"Build finished\"") && delivered.contains("\"backend\": \"bridge\""), "\(delivered)")
            let action = try await monitor.waitForOutput(containing: "string \"join\"", timeout: .seconds(20))
            #expect(action.contains("string \"hello\""), "\(action)")

            let status = try await g.tocsin("status")
            #expect(status.stdoutText.contains("bridge: ok"), "\(status.stdoutText)\(status.stderrText)")
            let cancel = try await g.tocsin("cancel", "standup")
            #expect(cancel.status == .exited(0), "\(cancel.stderrText)")
            let withdrawn = try await service.waitForOutput(containing: "\"call\": \"Withdraw\"", timeout: .seconds(20))
            #expect(withdrawn.contains("\"key\": \"standup\", \"reason\": \"cancelled\""), "\(withdrawn)")
            _ = try? await monitor.kill()
            _ = try? await service.kill()
        }
    }
}
