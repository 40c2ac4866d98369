import Glibc
import Testing
import TocsinCore
import TocsinDesktopBackend
import TocsinTesting

extension ServedBackend {
    /// libnotify reaches the notification server through GLib's one session-bus connection, which
    /// it finds in the process's `DBUS_SESSION_BUS_ADDRESS`, and every child any test spawns
    /// inherits that variable. So each desktop check runs in a process of its own (an exit test):
    /// there the private bus is the session bus without reaching any other test.
    static let desktop = ServedBackend(name: "desktop (libnotify)", capabilities: [.watchesItsServer]) { check, _ in
        let caseName: String
        switch check {
        case .conformance(let c): caseName = c.name
        case .failure: caseName = ""
        }
        // A failure is recorded by this expectation and by the child's own issues (its findings).
        await #expect(processExitsWith: .success) { [caseName = caseName as String] in
            try await DesktopConformance.runInChild(caseName: caseName)
        }
    }
}

/// What the desktop check's own process does. `caseName` empty: the failing configuration's
/// check (no notification server on the bus).
enum DesktopConformance {
    static func runInChild(caseName: String) async throws {
        let check: ServedBackend.Check
        if caseName.isEmpty {
            check = .failure
        } else {
            guard let c = BackendConformance.cases.first(where: { $0.name == caseName }) else {
                throw TestProcessError("no conformance case named '\(caseName)'")
            }
            check = .conformance(c)
        }
        let findings = ConformanceFindings()
        try await PrivateBus.with { bus in
            setenv("DBUS_SESSION_BUS_ADDRESS", bus.address, 1)
            let server = check.working ? try await NotificationServer.mock(bus: bus, capabilities: "actions body body-markup") : nil
            try await finally {
                let make = try configured(DesktopBackendFactory(), "popups", "app_name = \"Tocsin conformance\"")
                let b = BackendUnderTest("desktop (libnotify)", configuredName: "popups", capabilities: [.watchesItsServer], make: make)
                try await check.perform(on: b, findings)
            } then: {
                await server?.stop()
            }
        }
        // Recorded here, an issue reaches the parent's test with its message; the exit status
        // fails the row even if it did not.
        for f in findings.all { Issue.record("desktop (libnotify), \(caseName.isEmpty ? "no notification server" : caseName): \(f)") }
        if !findings.all.isEmpty { exit(EXIT_FAILURE) }
    }
}
