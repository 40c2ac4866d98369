import Foundation
import Testing
import TocsinTesting

/// `dst_gap`/`dst_fold` through the real daemon: D-Bus `Schedule` from gdbus and `tocsin schedule`.
@Suite("DST policy over D-Bus")
struct DSTPolicyGatewayTests {
    /// 02:30 on 2027-03-28 does not exist in Europe/Berlin: systemd's rule never fires it, `shift`
    /// fires it at 03:00 CEST (1806195600).
    static let spec = "'title': <'Gap'>, 'on_calendar': <'2027-03-28 02:30'>, 'timezone': <'Europe/Berlin'>"

    @Test("Schedule with dst_gap=shift fires at the end of the gap; without it the time never elapses")
    func scheduleShift() async throws {
        try await withGateway { g in
            let refused = try await g.gdbus("Schedule", "{'key': <'skip'>, \(Self.spec)}")
            #expect(refused.status != .exited(0))
            #expect(refused.stderrText.contains("io.github.tocsin.Error.InvalidTrigger"), "\(refused.stderrText)")
            #expect(refused.stderrText.contains("never elapses again"), "\(refused.stderrText)")

            let reply = try await g.gdbus("Schedule", "{'key': <'shift'>, \(Self.spec), 'dst_gap': <'shift'>}")
            #expect(reply.status == .exited(0), "\(reply.stderrText)")
            let list = try await g.gdbus("List").stdoutText
            #expect(list.contains("1806195600000000"), "\(list)")
            #expect(list.contains("2027-03-28 02:30:00 Europe/Berlin, dst_gap=shift"), "\(list)")

            let bad = try await g.gdbus("Schedule", "{'key': <'bad'>, \(Self.spec), 'dst_gap': <'later'>}")
            #expect(bad.stderrText.contains("org.freedesktop.DBus.Error.InvalidArgs"), "\(bad.stderrText)")
            #expect(bad.stderrText.contains("'dst_gap' must be one of 'skip', 'shift', found 'later'"), "\(bad.stderrText)")
        }
    }

    @Test("tocsin schedule --dst-gap/--dst-fold reach the daemon")
    func cliSchedule() async throws {
        try await withGateway { g in
            let out = try await g.tocsin("schedule", "--key", "cli", "--title", "Gap", "--on-calendar", "2027-03-28 02:30",
                                         "--timezone", "Europe/Berlin", "--dst-gap", "shift", "--dst-fold", "both")
            #expect(out.status == .exited(0), "\(out.stderrText)")
            let list = try await g.gdbus("List").stdoutText
            #expect(list.contains("1806195600000000"), "\(list)")
            #expect(list.contains("dst_gap=shift, dst_fold=both"), "\(list)")
        }
    }
}
