import Foundation
import Testing
import TocsinTesting
#if canImport(Glibc)
import Glibc
#endif

@Suite("systemd and D-Bus activation files")
struct SystemdTests {
    static let root = GatewayFixture.repositoryRoot

    @Test("systemd-analyze verify accepts the unit (with ExecStart pointing at the built binary)")
    func verifyUnit() async throws {
        let unit = try String(contentsOfFile: Self.root + "/contrib/systemd/tocsin.service", encoding: .utf8)
        #expect(unit.contains("ExecStart=/usr/local/bin/tocsin daemon\n"))
        #expect(unit.contains("Type=notify\n"))
        #expect(unit.contains("BusName=io.github.tocsin.Gateway\n"))
        let dir = TemporaryDirectory()
        let path = try dir.write("tocsin.service",
                                 unit.replacingOccurrences(of: "/usr/local/bin/tocsin", with: Products.executable("tocsin")))
        let out = try await TestProcess.run("systemd-analyze", ["verify", path])
        #expect(out.status == .exited(0), "\(out.stderrText)")
        #expect(out.stderrText.isEmpty, "\(out.stderrText)")
    }

    @Test("the activation file names the bus name and the unit")
    func activationFile() throws {
        let text = try String(contentsOfFile: Self.root + "/contrib/dbus/io.github.tocsin.Gateway.service", encoding: .utf8)
        let lines = Set(text.split(separator: "\n").map(String.init))
        #expect(lines.contains("[D-BUS Service]"))
        #expect(lines.contains("Name=io.github.tocsin.Gateway"))
        #expect(lines.contains("SystemdService=tocsin.service"))
        #expect(lines.contains("Exec=/usr/local/bin/tocsin daemon"))
    }

    @Test("READY=1 once the bus name is owned, STOPPING=1 on SIGTERM")
    func sdNotify() async throws {
        let dir = TemporaryDirectory()
        let socketPath = dir.path + "/notify.sock"
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        #expect(fd >= 0)
        defer { close(fd) }
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &addr.sun_path) { raw in
            for (i, b) in socketPath.utf8.enumerated() { raw[i] = b }
        }
        let bound = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        #expect(bound == 0)
        // Datagrams are read by a thread blocked in recv: no polling.
        let messages = WaitableState<[String]>([])
        let reader = Thread {
            var buf = [UInt8](repeating: 0, count: 4096)
            while true {
                let n = recv(fd, &buf, buf.count, 0)
                if n <= 0 { return }
                let text = String(decoding: buf[0..<n], as: UTF8.self)
                messages.update { $0.append(text) }
                if text.contains("STOPPING=1") { return }
            }
        }
        reader.start()

        let bus = try await PrivateBus.start()
        let daemon = try DaemonUnderTest(config: "[backend.log]\ntype = \"log\"\n",
                                         environment: bus.environment.merging(["NOTIFY_SOCKET": socketPath]) { $1 })
        var env = daemon.environment
        env["NOTIFY_SOCKET"] = socketPath
        let p = try TestProcess(Products.executable("tocsin"),
                                ["daemon", "--config", daemon.configPath, "--state-dir", daemon.stateDirectory, "--bus", bus.address],
                                environment: env)
        let ready = try await messages.wait("READY=1", timeout: .seconds(30)) { $0.contains { $0.hasPrefix("READY=1") } }
        // The status is written after RequestName succeeded, so it proves the order.
        #expect(ready.first?.contains("STATUS=serving io.github.tocsin.Gateway") == true, "\(ready)")
        try await p.waitForStderr(containing: "serving the D-Bus API", timeout: .seconds(10))
        p.signal(SIGTERM)
        _ = try await messages.wait("STOPPING=1", timeout: .seconds(10)) { $0.contains("STOPPING=1") }
        #expect(try await p.waitForExit(timeout: .seconds(10)) == .exited(0))
        await bus.stop()
    }
}
