import Logging
import Testing
import TocsinCore
import TocsinTesting
@testable import TocsinMQTTBackend

/// A stop shuts the `[fleet]` backend down last, but an answer can still reach it afterwards (the
/// center waits for its queue at most 2 s): the outbox must keep it for the next start.
@Suite("mqtt backend: an answer after its shutdown")
struct ShutdownOutboxTests {
    /// Records nothing: the backend relays nothing in this test.
    struct NoSink: BackendEventSink { func send(_ event: BackendEvent) {} }

    @Test("an Acknowledge that reaches the backend after its shutdown is kept in the outbox, not dropped")
    func answerAfterShutdownIsKept() async throws {
        let dir = TemporaryDirectory(prefix: "tocsin-mqtt-outbox")
        // No broker is needed: the client only queues, and this port refuses the connection.
        let options = MQTTBackendFactory.Options(host: "127.0.0.1", port: 1, clientID: "tocsin-test-outbox")
        let backend = MQTTBackend(name: "fleet", options: options, subscribes: true, stateDirectory: dir.path,
                                  logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
        await backend.start(events: NoSink())
        await backend.shutdown()
        await backend.withdraw(key: "wake", reason: .acknowledged, snoozedUntil: nil)
        let owed = try FleetStore(path: dir.path + "/mqtt-fleet.sqlite").outbox()
        #expect(owed.map(\.topic) == ["tocsin/acknowledged"], "owed to the fleet: \(owed.map(\.id))")
    }
}
