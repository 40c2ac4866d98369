import DBus
import Synchronization
import Testing
import TocsinCore
import TocsinGateway
import TocsinTesting
import TocsinTime
import TocsinSystem

/// python3-dbusmock's `logind` template on a private bus that plays the system bus
/// (`contrib/test/dbus-system.conf`): it hands out inhibitor descriptors, lists the ones still
/// open, and emits `PrepareForSleep` when asked through its mock interface.
final class MockLogind: Sendable {
    let bus: PrivateBus
    let mock: TestProcess

    private init(bus: PrivateBus, mock: TestProcess) { self.bus = bus; self.mock = mock }

    static func start() async throws -> MockLogind {
        let bus = try await PrivateBus.start(configFile: PrivateBus.systemConfigFile)
        let mock: TestProcess
        do {
            mock = try TestProcess("/usr/bin/python3", ["-m", "dbusmock", "--template", "logind", "--system"],
                                   environment: ["DBUS_SYSTEM_BUS_ADDRESS": bus.address])
            // `gdbus wait` returns once the name is owned: an event, not a guess.
            let up = try await TestProcess.run("gdbus", ["wait", "--address", bus.address, "--timeout", "30", "org.freedesktop.login1"])
            guard up.status == .exited(0) else { throw TestProcessError("dbusmock's logind did not appear: \(mock.stderr)") }
        } catch {
            await bus.stop()
            throw error
        }
        return MockLogind(bus: bus, mock: mock)
    }

    func stop() async {
        _ = try? await mock.kill()
        await bus.stop()
    }

    private func call(_ member: String, _ args: [String]) async throws -> String {
        let out = try await TestProcess.run("gdbus", ["call", "--address", bus.address, "-d", "org.freedesktop.login1",
                                                      "-o", "/org/freedesktop/login1", "-m", member] + args)
        guard out.status == .exited(0) else { throw TestProcessError("\(member): \(out.stderrText)") }
        return out.stdoutText
    }

    /// `ListInhibitors` as gdbus prints it.
    func inhibitors() async throws -> String { try await call("org.freedesktop.login1.Manager.ListInhibitors", []) }

    /// logind's announcement, sent by the mock from its own name (a match on the sender holds).
    func prepareForSleep(_ sleeping: Bool) async throws {
        _ = try await call("org.freedesktop.DBus.Mock.EmitSignal",
                           ["org.freedesktop.login1.Manager", "PrepareForSleep", "b", "[<\(sleeping)>]"])
    }
}

/// Sleep and resume as logind announces them, on the whole daemon in-process (a virtual clock,
/// so time can pass "during sleep" without the timer being told).
@Suite("Sleep and resume (logind)", .serialized)
struct LogindSleepTests {
    static let t0 = DaemonInProcessTests.t0
    static let ours = "'Tocsin', 'save state and arm wake alarms', 'delay'"

    @Test("the delay inhibitor is taken, released on PrepareForSleep(true) after arming the wake alarm, taken again on false; what fell due during sleep is caught up at once with its policy and Missed")
    func sleepAndResume() async throws {
        let logind = try await MockLogind.start()
        do {
            try await PrivateBus.with { bus in
                let dir = TemporaryDirectory(prefix: "tocsin-sleep")
                let clock = VirtualClock(now: Self.t0)
                let log = WaitableState<[String]>([])
                let alarm = ArmedWakeAlarm()
                let system = logind.bus.address
                let running = try await InProcessDaemon.start(.init(
                    config: DaemonInProcessTests.config, state: dir.path + "/state", clock: clock,
                    connect: InProcessDaemon.bus(bus.address), log: log) {
                        $0.connectSystem = { try await DBusConnection.connect(address: system) }
                        $0.makeWakeAlarm = { _ in alarm }
                    })
                try await log.wait("the daemon to watch logind", timeout: .seconds(20)) { $0.contains { $0.contains("watching logind for sleep") } }
                #expect(try await logind.inhibitors().contains(Self.ours), "the inhibitor is held while awake")

                let once = Self.t0 + .seconds(60), skipped = Self.t0 + .seconds(120)
                for spec in ["{'key': <'once'>, 'title': <'t'>, 'at': <'@\(once.seconds)'>, 'missed': <'fire-once'>, 'wake': <true>}",
                             "{'key': <'skipped'>, 'title': <'t'>, 'at': <'@\(skipped.seconds)'>}"] {
                    let out = try await TestProcess.run("gdbus", DaemonInProcessTests.gdbusCall(bus.address, "Schedule").dropFirst() + [spec])
                    #expect(out.status == .exited(0), "\(out.stderrText)")
                }
                let monitor = try TestProcess("dbus-monitor", ["--address", bus.address,
                                                               "type='signal',interface='io.github.tocsin.Gateway1',member='Fired'",
                                                               "type='signal',interface='io.github.tocsin.Gateway1',member='Missed'"])
                _ = try await monitor.waitForOutput(containing: "NameAcquired", timeout: .seconds(20))

                try await logind.prepareForSleep(true)
                try await log.wait("the daemon to prepare for sleep", timeout: .seconds(20)) { $0.contains { $0.contains("system going to sleep") } }
                #expect(!(try await logind.inhibitors().contains(Self.ours)), "released so the machine may sleep")
                #expect(alarm.armed == once - .seconds(30), "the wake alarm is armed 30 s before the wake notification (resuming takes seconds)")

                clock.passWhileSuspended(.hours(1))
                #expect(await running.daemon.center.activeCount == 2, "nothing runs while suspended")

                try await logind.prepareForSleep(false)
                _ = try await monitor.waitForOutput(containing: "string \"skipped\"", timeout: .seconds(20))
                let signals = try await monitor.waitForOutput(containing: "string \"once\"", timeout: .seconds(20))
                #expect(signals.contains("member=Missed"), "skip reports Missed: \(signals)")
                #expect(signals.contains("member=Fired"), "fire-once delivers late: \(signals)")
                try await log.wait("the daemon to resume", timeout: .seconds(20)) { $0.contains { $0.contains("system resumed") } }
                #expect(try await logind.inhibitors().contains(Self.ours), "taken again after resume")
                #expect(await running.daemon.center.activeCount == 0)
                await running.shutdown()
                _ = try? await monitor.kill()
            }
        } catch {
            await logind.stop()
            throw error
        }
        await logind.stop()
    }
}

/// A wake alarm that keeps what it was armed for (the real timerfd is tested in `WakeTimerTests`).
final class ArmedWakeAlarm: WakeAlarm, Sendable {
    private let at = Mutex<Instant?>(nil)
    func arm(at instant: Instant?) { at.withLock { $0 = instant } }
    var armed: Instant? { at.withLock { $0 } }
    var status: WakeAlarmStatus { WakeAlarmStatus(availability: .available, armed: armed) }
}
