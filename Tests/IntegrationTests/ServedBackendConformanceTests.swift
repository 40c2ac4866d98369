import DBus
import Foundation
import Logging
import Testing
import TocsinConfig
import TocsinCore
import TocsinModel
import TocsinDBusServiceBackend
import TocsinMQTTBackend
import TocsinSoundBackend
import TocsinTesting

/// `BackendConformance`'s cases against the backends that need a server, each with a real one
/// that the row's fixture starts and stops: the example service on a private bus (dbus-service),
/// mosquitto on 127.0.0.1 (mqtt), a headless PulseAudio with a null sink (sound), and
/// python3-dbusmock's notification daemon on a private session bus (desktop). Which cases a
/// backend gets follows from the capabilities it declares; nothing is skipped.
@Suite("Backend conformance, with servers")
struct ServedBackendConformanceTests {
    @Test("every served backend passes the cases that apply to it", arguments: ServedBackend.rows)
    func conformance(_ row: ServedRow) async throws {
        let findings = ConformanceFindings()
        try await row.backend.run(.conformance(row.check), findings)
        for f in findings.all { Issue.record("\(row): \(f)") }
        #expect(findings.all.isEmpty, "\(row)")
    }

    @Test("with its server away, a delivery fails as a DeliveryError with a known code and a message",
          arguments: ServedBackend.all.filter { !$0.capabilities.contains(.connectsInBackground) })
    func failure(_ served: ServedBackend) async throws {
        let findings = ConformanceFindings()
        try await served.run(.failure, findings)
        for f in findings.all { Issue.record("\(served): \(f)") }
        #expect(findings.all.isEmpty, "\(served)")
    }
}

/// A backend type with the server it needs, and how a check runs against it.
struct ServedBackend: Sendable, CustomTestStringConvertible {
    let name: String
    let capabilities: BackendCapabilities
    let run: @Sendable (Check, ConformanceFindings) async throws -> Void
    var testDescription: String { name }

    /// A conformance case with the server up, or the failing configuration's check.
    enum Check: Sendable {
        case conformance(BackendConformanceCase)
        case failure

        /// `working`: whether the backend is to be configured so its deliveries can succeed.
        var working: Bool { if case .failure = self { false } else { true } }

        func perform(on b: BackendUnderTest, _ findings: ConformanceFindings) async throws {
            switch self {
            case .conformance(let c):
                try await withTimeout(.seconds(60), "case \"\(c.name)\" on \(b)") { try await c.run(b, findings) }
            case .failure:
                try await withTimeout(.seconds(60), "a failing delivery on \(b)") { await BackendConformance.checkFailure(b, findings) }
            }
        }
    }

    init(name: String, capabilities: BackendCapabilities, run: @escaping @Sendable (Check, ConformanceFindings) async throws -> Void) {
        self.name = name; self.capabilities = capabilities; self.run = run
    }

    /// A backend that runs in this process. `withServer(working)` starts the server, hands the
    /// body the backend as the cases see it, and stops everything whether the body threw or not.
    static func inProcess(
        _ name: String, capabilities: BackendCapabilities,
        withServer: @escaping @Sendable (_ working: Bool, _ body: @Sendable (BackendUnderTest) async throws -> Void) async throws -> Void
    ) -> ServedBackend {
        ServedBackend(name: name, capabilities: capabilities) { check, findings in
            try await withServer(check.working) { b in try await check.perform(on: b, findings) }
        }
    }

    static let all: [ServedBackend] = [.dbusService, .mqtt, .sound, .desktop]
    static var rows: [ServedRow] {
        all.flatMap { b in BackendConformance.cases.filter { $0.applies(b.capabilities) }.map { ServedRow(backend: b, check: $0) } }
    }

    /// Without its service on the bus, `Deliver` has nobody to go to.
    static let dbusService = inProcess("dbus-service", capabilities: [.watchesItsServer]) { working, body in
        try await PrivateBus.with { bus in
            let service = working ? try await DBusServiceBackendTests.service(bus) : nil
            let connection = try await DBusConnection.connect(address: bus.address)
            let serviceBus = ServiceBus(current: { connection }, connections: { AsyncStream { $0.yield(connection) } })
            try await finally {
                let make = try configured(DBusServiceBackendFactory(bus: serviceBus), "bridge",
                                          "bus_name = \"\(DBusServiceBackendTests.serviceName)\"")
                try await body(BackendUnderTest("dbus-service", configuredName: "bridge", capabilities: [.watchesItsServer], make: make))
            } then: {
                connection.close()
                _ = try? await service?.kill()
            }
        }
    }

    static let mqtt = inProcess("mqtt", capabilities: [.connectsInBackground]) { _, body in
        let broker = try await MosquittoBroker.start()
        let dir = TemporaryDirectory(prefix: "tocsin-conformance")
        try await finally {
            let make = try configured(MQTTBackendFactory(), "fleet", """
                url = "\(broker.url)"
                client_id = "conformance"
                reconnect_max = "1s"
                """, stateDirectory: dir.path)
            try await body(BackendUnderTest("mqtt", configuredName: "fleet", capabilities: [.connectsInBackground], make: make))
        } then: {
            await broker.stop()
        }
    }

    /// Not working: a player that exits with an error at once, as one without a sound device does.
    static let sound = inProcess("sound", capabilities: []) { working, body in
        let pulse = try await PulseServer.start()
        try await finally {
            let file = pulse.dir.path + "/tone.wav"
            let sox = try await TestProcess.run("sox", ["-n", "-r", "44100", "-c", "1", "-b", "16", file, "synth", "1", "sine", "880"])
            guard sox.status == .exited(0) else { throw TestProcessError("sox: \(sox.stderrText)") }
            let player = working ? "[\"paplay\", \"{file}\"]" : "[\"/bin/false\", \"{file}\"]"
            let environment = pulse.environment.merging(["PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"]) { $1 }
            let make = try configured(SoundBackendFactory(), "alarm", "file = \"\(file)\"\nplayer = \(player)", environment: environment)
            try await body(BackendUnderTest("sound", configuredName: "alarm", make: make))
        } then: {
            await pulse.stop()
        }
    }
}

struct ServedRow: Sendable, CustomTestStringConvertible {
    let backend: ServedBackend
    let check: BackendConformanceCase
    var testDescription: String { "\(backend.name): \(check.name)" }
}

/// Reads a `[backend.NAME]` table as the daemon does; a table the factory refuses throws.
func configured<F: BackendFactory>(_ factory: F, _ name: String, _ toml: String, environment: [String: String] = [:],
                                   stateDirectory: String? = nil) throws -> @Sendable () -> any DeliveryBackend {
    let table = try TOML.parse(toml, file: "conformance.toml")
    var reader = TableReader(table, context: "[backend.\(name)]")
    let env = BackendEnvironment(logger: Logger(label: "conformance") { _ in SwiftLogNoOpLogHandler() },
                                 environment: environment, stateDirectory: stateDirectory)
    guard let options = factory.options(from: &reader, environment: env), reader.issues.isEmpty else {
        throw TestProcessError("[backend.\(name)] refused: \(reader.issues.map(\.message))")
    }
    return { factory.make(name: name, options: options, environment: env) }
}
