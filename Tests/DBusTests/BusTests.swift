import Testing
import DBus
import TocsinTesting

@Suite("Against a private dbus-daemon")
struct BusTests {
    @Test func gdbusPing() async throws {
        try await TestService.with { svc in
            let out = try await svc.gdbus("org.freedesktop.DBus.Peer.Ping")
            #expect(out.status == .exited(0), "\(out.stderrText)")
        }
    }
}
