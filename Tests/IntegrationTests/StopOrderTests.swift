import Testing
import TocsinCore
import TocsinGateway
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
            let held = HeldBackend(holding: .delivery)
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
            try await held.phase.wait("the delivery to reach the held backend", timeout: .seconds(20)) { $0.reached }

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
