import TocsinConfig
import TocsinCore
import TocsinModel
import TocsinTesting

/// A backend of type `held` that holds the daemon where a test wants it until the test opens it:
/// in its `start` (between taking the bus name and loading the state), or in a delivery (in
/// flight when the daemon stops). It also keeps the event sink, for what a real backend relays.
final class HeldBackend: BackendFactory, DeliveryBackend, Sendable {
    enum Hold: Sendable { case start, delivery }
    struct Phase: Sendable { var reached = false, open = false }
    let hold: Hold
    let phase = WaitableState(Phase())
    let sink = WaitableState<(any BackendEventSink)?>(nil)

    init(holding hold: Hold) { self.hold = hold }

    var typeName: String { "held" }
    var optionKeys: [String] { [] }
    var name: String { "held" }
    struct Options: Sendable, Equatable {}
    func options(from reader: inout some FieldReader, environment: BackendEnvironment) -> Options? { Options() }
    func make(name: String, options: Options, environment: BackendEnvironment) -> any DeliveryBackend { self }

    func start(events: any BackendEventSink) async {
        sink.update { $0 = events }
        if hold == .start { await held() }
    }

    func deliver(_ firing: Firing) async throws(DeliveryError) {
        if hold == .delivery { await held() }
    }

    private func held() async {
        phase.update { $0.reached = true }
        _ = try? await phase.wait("the test to open the backend", timeout: .seconds(60)) { $0.open }
    }
}
