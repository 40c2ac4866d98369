import Testing
import TocsinConfig
import TocsinCore
import TocsinGateway
import TocsinModel
import TocsinTesting
import TocsinTime

/// A graceful stop ends firing before it closes the bus (`TocsinDaemon.run`): while the center
/// waits out its grace for a delivery in flight, the API still answers, reads as usual, and
/// refuses every change with `io.github.tocsin.Error.Stopping`, so a client hears why instead of
/// losing its call to a connection about to close or to backends shutting down.
@Suite("Stopping: firing ends before the bus")
struct StopOrderTests {
    static let config = DaemonInProcessTests.config + "\n[backend.held]\ntype = \"held\"\n"

    @Test("during the stop's grace, Schedule, Cancel and Reload get io.github.tocsin.Error.Stopping, ListPage and Status answer, a backend's answer is still applied, and every service ends in order")
    func callsDuringTheGrace() async throws {
        try await PrivateBus.with { bus in
            let dir = TemporaryDirectory(prefix: "tocsin-stop")
            let clock = VirtualClock(now: DaemonInProcessTests.t0)
            let held = HeldDelivery()
            let log = WaitableState<[String]>([])
            let running = try await DaemonInProcessTests.start(bus: bus, state: dir.path + "/state", clock: clock,
                                                              config: Self.config, extra: [held], log: log)
            let monitor = try TestProcess("dbus-monitor", ["--address", bus.address,
                                                           "type='signal',interface='io.github.tocsin.Gateway1',member='Cancelled'"])
            _ = try await monitor.waitForOutput(containing: "NameAcquired", timeout: .seconds(20))
            let due = DaemonInProcessTests.t0 + .seconds(10)
            for (key, backend) in [("tea", "held"), ("later", "events")] {
                let at = key == "tea" ? due : due + .seconds(3600)
                let out = try await call(bus, "Schedule", "{'key': <'\(key)'>, 'title': <'T'>, 'at': <'@\(at.seconds)'>, 'backends': <['\(backend)']>}")
                try #require(out.status == .exited(0), "\(out.stderrText)")
            }
            clock.advance(to: due)
            await running.center.tick()
            try await held.phase.wait("the delivery to reach the held backend", timeout: .seconds(20)) { $0.entered }

            running.requestStop()
            let graceEnds = await running.graceBegun()
            try #require(graceEnds != nil)
            let refusals: [(String, [String])] = [
                ("Schedule", ["{'key': <'new'>, 'title': <'n'>, 'after': <'1h'>}"]),
                ("Cancel", ["later"]),
                ("Reload", []),
            ]
            for (method, args) in refusals {
                let out = try await call(bus, method, args)
                #expect(out.status != .exited(0) && out.stderrText.contains("io.github.tocsin.Error.Stopping: the daemon is stopping"),
                        "\(method): \(out.stdoutText) \(out.stderrText)")
            }
            let page = try await call(bus, "ListPage", ["''", "10"])
            #expect(page.status == .exited(0) && page.stdoutText.contains("'later'"), "ListPage: \(page.stdoutText) \(page.stderrText)")
            let status = try await call(bus, "Status", [])
            #expect(status.status == .exited(0), "Status: \(status.stderrText)")
            // What a backend relays (here a fleet cancel) may already count as handled there
            // (the mqtt backend records the message's id): it is applied until the store closes.
            let sink = try #require(held.sink.value)
            sink.send(.fleetCancel(key: "later"))
            let cancelled = try await monitor.waitForOutput(containing: "string \"later\"", timeout: .seconds(20))
            #expect(cancelled.contains("member=Cancelled"), "\(cancelled)")

            // The delivery ends within the grace: the stop goes on without the clock moving.
            held.phase.update { $0.open = true }
            await running.stopped()
            let lines = log.value
            #expect(!lines.contains { $0.contains("a service failed") }, "\(lines.suffix(10))")
            #expect(!lines.contains { $0.contains("could not save") || $0.contains("could not record") }, "\(lines.suffix(10))")
            #expect(lines.contains { $0.contains("stopping") })
            _ = try? await monitor.kill()
        }
    }

    private func call(_ bus: PrivateBus, _ method: String, _ args: String...) async throws -> TestProcess.Output {
        try await call(bus, method, args)
    }

    private func call(_ bus: PrivateBus, _ method: String, _ args: [String]) async throws -> TestProcess.Output {
        try await TestProcess.run("gdbus", Array(DaemonInProcessTests.gdbusCall(bus.address, method).dropFirst()) + args)
    }
}

/// A backend whose delivery runs until the test opens it: a delivery in flight at the stop.
private final class HeldDelivery: BackendFactory, DeliveryBackend, Sendable {
    struct Phase: Sendable { var entered = false, open = false }
    let phase = WaitableState(Phase())
    /// Where the test sends what a real backend would relay (a popup's answer, a fleet message).
    let sink = WaitableState<(any BackendEventSink)?>(nil)
    var typeName: String { "held" }
    var optionKeys: [String] { [] }
    var name: String { "held" }
    struct Options: Sendable {}
    func options(from reader: inout some FieldReader, environment: BackendEnvironment) -> Options? { Options() }
    func make(name: String, options: Options, environment: BackendEnvironment) -> any DeliveryBackend { self }
    func start(events: any BackendEventSink) async { sink.update { $0 = events } }

    func deliver(_ firing: Firing) async throws(DeliveryError) {
        phase.update { $0.entered = true }
        _ = try? await phase.wait("the test to let the delivery end", timeout: .seconds(60)) { $0.open }
    }
}
