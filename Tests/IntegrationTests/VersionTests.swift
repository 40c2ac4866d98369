import Testing
import TocsinGateway
import TocsinTesting

/// The release has one version, `Gateway.version`: what `tocsin --version` prints, what the D-Bus
/// `Version` property says, and what scripts/package.sh reads (with sed, from Version.swift) for the
/// Debian package. Each test fails if one of them stops following that constant.
@Suite("one version for the CLI, the D-Bus API and the Debian package")
struct VersionTests {
    @Test("tocsin --version prints Gateway.version")
    func cli() async throws {
        let out = try await TestProcess.run(Products.executable("tocsin"), ["--version"])
        #expect(out.status == .exited(0), "\(out.stderrText)")
        #expect(out.stdoutText == Gateway.version + "\n")
    }

    @Test("the D-Bus Version property is Gateway.version")
    func bus() async throws {
        try await withGateway { g in
            let version = try await g.busctl("get-property", GatewayFixture.dest, GatewayFixture.path, GatewayFixture.iface, "Version")
            #expect(version.stdoutText == "s \"\(Gateway.version)\"\n", "\(version.stderrText)")
        }
    }

    @Test("scripts/package.sh reads Gateway.version for the package")
    func package() async throws {
        let out = try await TestProcess.run("/bin/bash", [GatewayFixture.repositoryRoot + "/scripts/package.sh", "--print-version"])
        #expect(out.status == .exited(0), "\(out.stderrText)")
        #expect(out.stdoutText == Gateway.version + "\n")
    }
}
