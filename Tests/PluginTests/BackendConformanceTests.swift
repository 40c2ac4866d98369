import Testing
import TocsinCore
import TocsinDBusSignalBackend
import TocsinExecBackend
import TocsinLogBackend
import TocsinTesting

/// Every backend that delivers without a server or a person. `dbus-service`, `desktop`, `sound`
/// and `mqtt` need a service on a bus, a notification server, an audio server or a broker: they
/// run the same cases in IntegrationTests' ServedBackendConformanceTests, whose fixtures start those.
enum ConformingBackends {
    static let working: [BackendUnderTest] = [
        BackendUnderTest("log (text)", configuredName: "journal") { LogBackend(name: "journal") },
        BackendUnderTest("log (json)", configuredName: "json-lines") { LogBackend(name: "json-lines", format: .json) },
        BackendUnderTest("exec", configuredName: "hook") {
            ExecBackend(name: "hook", command: ["/bin/true"], baseEnvironment: ["PATH": "/usr/bin:/bin"])
        },
        // The emitter is the daemon's (it sends on the current bus connection); the backend's part
        // is handing each firing over and passing its result back.
        BackendUnderTest("dbus-signal", configuredName: "signals") { DBusSignalBackend(name: "signals") { BatchHandOff(errors: $0.map { _ in nil }) } },
        BackendUnderTest("recording spy", configuredName: "spy") { RecordingBackend(name: "spy") },
    ]

    /// The same backends configured so that every delivery fails (the log one cannot be made to).
    static let failing: [BackendUnderTest] = [
        BackendUnderTest("exec, a program that fails", configuredName: "hook") {
            ExecBackend(name: "hook", command: ["/bin/false"], baseEnvironment: ["PATH": "/usr/bin:/bin"])
        },
        BackendUnderTest("exec, a program not on PATH", configuredName: "hook") {
            ExecBackend(name: "hook", command: ["tocsin-no-such-hook"], baseEnvironment: ["PATH": "/usr/bin:/bin"])
        },
        BackendUnderTest("dbus-signal, no connection", configuredName: "signals") {
            DBusSignalBackend(name: "signals") { BatchHandOff(errors: $0.map { _ in DeliveryError(.unavailable, "not connected to the bus") }) }
        },
        BackendUnderTest("recording spy, failing", configuredName: "spy") {
            RecordingBackend(name: "spy", behaviour: .fail(DeliveryError(.permanent, "refused")))
        },
    ]
}

@Suite("Backend conformance")
struct BackendConformanceTests {
    @Test("every backend passes the same cases", arguments: BackendConformance.rows(ConformingBackends.working))
    func conformance(_ row: BackendConformanceRow) async throws {
        let (backend, c) = (row.backend, row.check)
        let findings = ConformanceFindings()
        try await withTimeout(.seconds(30), "case \"\(c.name)\" on \(backend)") { try await c.run(backend, findings) }
        for f in findings.all { Issue.record("\(backend), \(c.name): \(f)") }
        #expect(findings.all.isEmpty, "backend \(backend), case \"\(c.name)\"")
    }

    @Test("a failed delivery is a DeliveryError with a known code and a message", arguments: ConformingBackends.failing)
    func failure(_ backend: BackendUnderTest) async throws {
        let findings = ConformanceFindings()
        try await withTimeout(.seconds(30), "a failing delivery on \(backend)") { await BackendConformance.checkFailure(backend, findings) }
        for f in findings.all { Issue.record("\(backend): \(f)") }
        #expect(findings.all.isEmpty, "backend \(backend)")
    }
}
