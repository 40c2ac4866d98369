import Logging
import Testing
import TocsinConfig
import TocsinModel
import TocsinCore
import TocsinDBusSignalBackend
import TocsinGateway
import TocsinTesting

/// The config's one path (`ConfigPlan`): validation, what `tocsin check` runs, reads every
/// backend table and constructs none; start-up and each reload construct each backend once.
/// A backend may open sockets or threads when made, so a backend made only to be thrown away is
/// a cost and a side effect, not a detail.
@Suite("Reload plan")
struct ReloadPlanTests {
    static let backends = """


        [backend.a]
        type = "counting"

        [backend.b]
        type = "counting"
        """
    /// The in-process daemon's config (a `dbus-signal` backend, `events`) with two counted backends.
    static let config = DaemonInProcessTests.config + backends
    /// The same, refused: its `[daemon]` zone does not exist.
    static let refused = "[daemon]\ntimezone = \"Mars/Base\"\n\n[backend.events]\ntype = \"dbus-signal\"" + backends

    @Test("validating a config reads each backend table once and constructs no backend, valid or not")
    func validationConstructsNothing() {
        let counting = CountingFactory()
        let registry = BackendRegistry([counting])
        let plan = ConfigPlan(source: .text("[daemon]\ntimezone = \"UTC\"" + Self.backends, name: "check.toml"), registry: registry, environment: [:])
        let validated = plan.validate()
        #expect(throws: Never.self) { try validated.get() }
        #expect(counting.counts.value == CountingFactory.Counts(read: ["a": 1, "b": 1], made: [:]))

        let bad = ConfigPlan(source: .text(Self.backends + "\n[[notification]]\ntitle = \"t\"\ntimezone = \"Mars/Base\"\nafter = \"1h\"\n",
                                           name: "bad.toml"), registry: registry, environment: [:])
        guard case .failure(let e) = bad.validate() else { Issue.record("an unknown zone must be refused"); return }
        #expect(e.rendered.contains("Mars/Base"), "\(e.rendered)")
        #expect(counting.counts.value.made.isEmpty, "a refused config constructs nothing either")
    }

    @Test("a plan built with a registry that links other implementations is refused with the tables' positions, and builds nothing")
    func builtByAnotherRegistry() throws {
        let checking = CountingFactory()
        let source = ConfigSource.text("[daemon]\ntimezone = \"UTC\"" + Self.backends, name: "check.toml")
        let validated = try ConfigPlan(source: source, registry: BackendRegistry([checking]), environment: [:]).validate().get()
        let other = ConfigPlan(source: source, registry: BackendRegistry([OtherCounting()]), environment: [:])
        guard case .failure(let e) = other.build(validated, logger: Logger(label: "test"), stateDirectory: "/nonexistent") else {
            Issue.record("options of another type must not be built"); return
        }
        #expect(e.diagnostics.map(\.location.line) == [5, 8], "\(e.rendered)")
        #expect(e.rendered.contains("in [backend.a] was checked by another implementation"), "\(e.rendered)")
        #expect(checking.counts.value.made.isEmpty)
    }

    @Test("start-up constructs each backend once; a reload constructs only the backends whose table changed, and a refused reload none")
    func constructedOncePerReload() async throws {
        try await PrivateBus.with { bus in
            let dir = TemporaryDirectory(prefix: "tocsin-plan")
            let file = try dir.write("config.toml", Self.config)
            let counting = CountingFactory()
            let running = try await DaemonInProcessTests.start(bus: bus, state: dir.path + "/state", clock: VirtualClock(now: DaemonInProcessTests.t0),
                                                               config: Self.config, extra: [counting]) { $0.source = .file(file) }
            #expect(counting.counts.value == CountingFactory.Counts(read: ["a": 1, "b": 1], made: ["a": 1, "b": 1], started: ["a": 1, "b": 1]))

            // Nothing changed: the running instances go on, neither made, started nor shut down again.
            #expect(await running.daemon.reload() == nil)
            #expect(counting.counts.value == CountingFactory.Counts(read: ["a": 2, "b": 2], made: ["a": 1, "b": 1], started: ["a": 1, "b": 1]))

            // One table changed: that backend alone is made and started again, and the one it replaces shut down.
            try dir.write("config.toml", Self.config + "\nmark = \"2\"\n")
            #expect(await running.daemon.reload() == nil)
            #expect(counting.counts.value == CountingFactory.Counts(read: ["a": 3, "b": 3], made: ["a": 1, "b": 2], started: ["a": 1, "b": 2],
                                                                    shutDown: ["b": 1]))

            try dir.write("config.toml", Self.refused)
            let refused = await running.daemon.reload()
            #expect(refused?.code == .invalidConfig && refused?.message.contains("Mars/Base") == true, "\(refused.map { "\($0)" } ?? "accepted")")
            #expect(counting.counts.value.made == ["a": 1, "b": 2], "a refused reload constructs nothing")
            #expect(await running.daemon.center.backendNames.sorted() == ["a", "b", "events"], "and keeps the running backends")

            // Back to the first table of b after the refusal: compared with what runs (mark = "2"), not with the refused file.
            try dir.write("config.toml", Self.config)
            #expect(await running.daemon.reload() == nil)
            #expect(counting.counts.value.made == ["a": 1, "b": 3])
            #expect(counting.counts.value.shutDown == ["b": 2])
            await running.shutdown()
        }
    }

    @Test("a config the command checked is built by the daemon's own registry, once, and never by the checking one")
    func checkedByTheCommandBuiltByTheDaemon() async throws {
        try await PrivateBus.with { bus in
            let dir = TemporaryDirectory(prefix: "tocsin-plan")
            let checking = CountingFactory(), building = CountingFactory()
            let source = ConfigSource.text(Self.config, name: "test.toml")
            // What `tocsin daemon` does: the plan run to validation before the daemon (and its bus link) exists.
            let validated = try ConfigPlan(source: source, registry: BackendRegistry([checking, Self.signalStandIn]), environment: [:])
                .validate().get()
            let running = try await DaemonInProcessTests.start(bus: bus, state: dir.path + "/state", clock: VirtualClock(now: DaemonInProcessTests.t0),
                                                               config: Self.config, extra: [building]) { $0.config = validated }
            #expect(checking.counts.value == CountingFactory.Counts(read: ["a": 1, "b": 1], made: [:]))
            #expect(building.counts.value == CountingFactory.Counts(read: [:], made: ["a": 1, "b": 1], started: ["a": 1, "b": 1]))
            await running.shutdown()
        }
    }

    /// The `dbus-signal` type for a registry without a bus, as `tocsin check` has.
    static let signalStandIn = DBusSignalBackendFactory(emit: { firings in BatchHandOff(errors: firings.map { _ in DeliveryError(.unavailable, "no bus") }) })
}

/// Counts, per instance name, the tables read into options and the backends made.
final class CountingFactory: BackendFactory, Sendable {
    struct Counts: Hashable, Sendable {
        var read: [String: Int] = [:]
        var made: [String: Int] = [:]
        var started: [String: Int] = [:]
        var shutDown: [String: Int] = [:]
    }
    struct Options: Sendable, Equatable { var name: String; var mark: String? }
    let counts = WaitableState(Counts())
    var typeName: String { "counting" }
    var optionKeys: [String] { ["mark"] }

    func options(from reader: inout some FieldReader, environment: BackendEnvironment) -> Options? {
        // The table's context is "[backend.NAME]": the name is what the count is kept by.
        let name = String(reader.context.dropFirst("[backend.".count).dropLast())
        counts.update { $0.read[name, default: 0] += 1 }
        return Options(name: name, mark: reader.string("mark"))
    }

    func make(name: String, options: Options, environment: BackendEnvironment) -> any DeliveryBackend {
        counts.update { $0.made[name, default: 0] += 1 }
        return Counted(name: name, counts: counts)
    }

    struct Counted: DeliveryBackend {
        let name: String
        var counts: WaitableState<Counts>? = nil
        func deliver(_ firing: Firing) async throws(DeliveryError) {}
        func start(events: any BackendEventSink) async { counts?.update { $0.started[name, default: 0] += 1 } }
        func shutdown() async { counts?.update { $0.shutDown[name, default: 0] += 1 } }
        // As a sound backend: what it started only it can stop, so a replaced one is shut down.
        var shutsDownWhenReplaced: Bool { true }
    }
}

/// A `counting` type whose options are not `CountingFactory`'s.
private struct OtherCounting: BackendFactory {
    struct Options: Sendable, Equatable {}
    var typeName: String { "counting" }
    var optionKeys: [String] { [] }
    func options(from reader: inout some FieldReader, environment: BackendEnvironment) -> Options? { Options() }
    func make(name: String, options: Options, environment: BackendEnvironment) -> any DeliveryBackend {
        CountingFactory.Counted(name: name)
    }
}
