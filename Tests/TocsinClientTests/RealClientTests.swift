import Foundation
import Synchronization
import Testing
import TocsinClient
import TocsinTesting

/// What only the real client has: other clients on the same daemon, a daemon that restarts or
/// is started by the bus, and a schedule too large for one reply.
@Suite("TocsinClient on a real daemon")
struct RealClientTests {
    /// Its first call opens the connection: the bus's handshake is bounded by the center's
    /// timeout as its calls are, instead of holding that call forever.
    @Test("regression: a bus that accepts and never answers fails the first call at the center's timeout, naming the address")
    func silentBus() async throws {
        let dir = TemporaryDirectory(prefix: "tocsin-client-silent")
        let silent = try SilentUnixSocket(path: dir.path + "/bus")
        let center = TocsinNotificationCenter(bus: .address(silent.address), timeout: .seconds(1))
        let started = ContinuousClock.now
        let error = try await withTimeout(.seconds(10), "the first call to give up") { () -> TocsinClientError? in
            do {
                _ = try await center.status()
                return nil
            } catch let e as TocsinClientError {
                return e
            }
        }
        let waited = ContinuousClock.now - started
        #expect(error?.code == .bus, "\(String(describing: error))")
        #expect(error?.message.contains("the bus at \(silent.address) accepted the connection but did not complete authentication within 1s") == true,
                "\(String(describing: error))")
        #expect(waited >= .milliseconds(900), "gave up after \(waited), before its timeout")
    }

    static func request(_ key: String, after seconds: Int = 3600) -> NotificationRequest {
        NotificationRequest(key: key, content: NotificationContent(title: key, backends: Backends.events),
                            trigger: .after(.seconds(seconds)))
    }

    @Test("a center's default stream carries its own notifications only, not another client's")
    func mineIsMine() async throws {
        let h = try await DaemonHarness.start()
        do {
            let other = h.otherCenter()
            let mine = EventLog(try await h.center.events())
            let everything = EventLog(try await h.center.events(.all))
            try await h.center.add(Self.request("mine"))
            try await other.add(Self.request("theirs"))
            _ = try await other.removeAll()
            try await everything.state.wait("both Cancelled", timeout: .seconds(30)) {
                $0.contains(.cancelled(key: "mine")) && $0.contains(.cancelled(key: "theirs"))
            }
            try await mine.wait("Cancelled mine") { $0 == .cancelled(key: "mine") }
            #expect(!mine.events.contains(.cancelled(key: "theirs")), "\(mine.events)")
        } catch {
            await h.stop()
            throw error
        }
        await h.stop()
    }

    @Test("the event stream survives a daemon restart: it says so, and the new daemon's events arrive on it")
    func streamSurvivesRestart() async throws {
        let h = try await DaemonHarness.start()
        do {
            let log = EventLog(try await h.center.events())
            try await h.center.add(Self.request("kept"))
            try await h.restartDaemon()
            try await log.wait("daemonVanished") { $0 == .daemonVanished }
            try await log.wait("daemonAppeared") { $0 == .daemonAppeared }
            #expect(try await h.center.pending().map(\.key) == ["kept"], "the schedule outlived the restart")
            try await h.center.add(Self.request("after-restart", after: 1))
            try await log.wait("Fired after the restart") { $0.isFired }
            #expect(log.fired("after-restart").count == 1)
        } catch {
            await h.stop()
            throw error
        }
        await h.stop()
    }

    @Test("the event stream and the calls survive a restart of the bus itself: both reconnect")
    func busRestart() async throws {
        let listen = try PrivateBus.temporarySocketAddress()
        var bus = try await PrivateBus.start(listenAddress: listen)
        let dir = TemporaryDirectory(prefix: "tocsin-client-bus")
        try dir.write("config.toml", DaemonHarness.config)
        // The address without the bus's guid: the restarted bus has another.
        let center = TocsinNotificationCenter(bus: .address(bus.socketAddress))
        let daemon = try await DaemonHarness.startDaemon(bus: bus, dir: dir, address: bus.socketAddress)
        do {
            let log = EventLog(try await center.events())
            try await center.add(Self.request("before"))
            try await bus.crash()
            bus = try await PrivateBus.start(listenAddress: listen)
            try await log.wait("daemonAppeared on the new bus") { $0 == .daemonAppeared }
            // The daemon reconnects with backoff of its own; gdbus waits for its name.
            let back = try await TestProcess.run("gdbus", ["wait", "--address", bus.socketAddress, "--timeout", "30",
                                                           "io.github.tocsin.Gateway"], timeout: .seconds(40))
            try #require(back.status == .exited(0), "\(back.stderrText)")
            #expect(try await center.pending().map(\.key) == ["before"])
            try await center.add(Self.request("after", after: 1))
            try await log.wait("Fired after the bus restart") { $0.isFired }
            #expect(log.fired("after").count == 1)
        } catch {
            daemon.signal(SIGTERM)
            await bus.stop()
            throw error
        }
        daemon.signal(SIGTERM)
        _ = try? await daemon.waitForExit(timeout: .seconds(10))
        await bus.stop()
    }

    @Test("with no daemon and none to activate, a call is daemonUnavailable with the bus's error name")
    func noDaemon() async throws {
        try await PrivateBus.with { bus in
            let center = TocsinNotificationCenter(bus: .address(bus.address))
            do throws(TocsinClientError) {
                _ = try await center.status()
                Issue.record("status() answered without a daemon")
            } catch {
                #expect(error.code == .daemonUnavailable && error.name == "org.freedesktop.DBus.Error.ServiceUnknown", "\(error)")
            }
        }
    }

    @Test("a call starts the daemon through D-Bus activation when it is not running")
    func activation() async throws {
        let dir = TemporaryDirectory(prefix: "tocsin-activation")
        try dir.write("config.toml", DaemonHarness.config)
        let env = DaemonHarness.daemonEnvironment(dir: dir).map { "\($0.key)='\($0.value)'" }.sorted().joined(separator: " ")
        let args = DaemonHarness.daemonArguments(dir: dir).map { "'\($0)'" }.joined(separator: " ")
        let script = try dir.script("start-tocsin", "exec env \(env) '\(Products.executable("tocsin"))' \(args) --bus \"$DBUS_STARTER_ADDRESS\" 2>>'\(dir.path)/daemon.log'")
        try FileManager.default.createDirectory(atPath: dir.path + "/services", withIntermediateDirectories: true)
        try dir.write("services/io.github.tocsin.Gateway.service", "[D-BUS Service]\nName=io.github.tocsin.Gateway\nExec=\(script)\n")
        let stock = try String(contentsOfFile: PrivateBus.defaultConfigFile, encoding: .utf8)
        let busConfig = try dir.write("bus.conf", stock.replacingOccurrences(
            of: "</busconfig>", with: "  <servicedir>\(dir.path)/services</servicedir>\n</busconfig>"))
        let bus = try await PrivateBus.start(configFile: busConfig)
        let center = TocsinNotificationCenter(bus: .address(bus.address))
        do {
            let log = EventLog(try await center.events(.all))
            let status = try await center.status()
            #expect(status.pending == 0 && status.pid > 0, "\(status)")
            try await log.wait("daemonAppeared") { $0 == .daemonAppeared }
            try await center.add(Self.request("activated"))
            #expect(try await center.pending().map(\.key) == ["activated"])
            // The bus started it, so it is not our child: stop it by its pid and see it leave.
            kill(pid_t(status.pid), SIGTERM)
            try await log.wait("daemonVanished") { $0 == .daemonVanished }
        } catch {
            await bus.stop()
            throw error
        }
        await bus.stop()
    }

    @Test("regression: calls racing to open the connection share one, so the daemon counts one client against its quota")
    func concurrentFirstCallsShareOneConnection() async throws {
        let h = try await DaemonHarness.start(config: DaemonHarness.config.replacingOccurrences(
            of: "max_pending_per_client = 1000000", with: "max_pending_per_client = 20"))
        do {
            let center = h.center
            let refused = try await withThrowingTaskGroup(of: TocsinClientError.Code?.self) { group in
                for i in 0..<40 {
                    group.addTask {
                        do throws(TocsinClientError) {
                            try await center.add(Self.request("q\(i)"))
                            return nil
                        } catch {
                            return error.code
                        }
                    }
                }
                return try await group.reduce(into: [TocsinClientError.Code]()) { if let c = $1 { $0.append(c) } }
            }
            #expect(refused.count == 20 && refused.allSatisfy { $0 == .quotaExceeded }, "\(refused)")
        } catch {
            await h.stop()
            throw error
        }
        await h.stop()
    }

    /// A real `interrupted` entry: the daemon is killed (SIGKILL) while an exec backend's
    /// delivery runs, and reports it when it starts again. The hook writes its pid (the shell
    /// execs `sleep`, keeping it) so the test knows the delivery is running and can end it.
    @Test("history keeps an interrupted delivery with its backends, and the firing before it with its backends and lateness")
    func interruptedInHistory() async throws {
        let work = TemporaryDirectory(prefix: "tocsin-client-hook")
        let pidFile = work.path + "/hook.pid"
        let h = try await DaemonHarness.start(config: DaemonHarness.config + """


            [backend.hook]
            type = "exec"
            timeout = "120s"
            command = ["/bin/sh", "-c", "echo $$ > '\(pidFile).tmp' && mv '\(pidFile).tmp' '\(pidFile)' && exec sleep 100"]
            """)
        do {
            let log = EventLog(try await h.center.events())
            try await h.center.add(NotificationRequest(key: "job", content: NotificationContent(title: "Job", backends: ["hook"]),
                                                       trigger: .after(.seconds(1))))
            try await waitUntil("the hook running", timeout: .seconds(30)) { FileManager.default.fileExists(atPath: pidFile) }
            let hook = try #require(Int32(try String(contentsOfFile: pidFile, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)))
            try await h.crashDaemon()
            kill(hook, SIGKILL)
            try await log.wait("Interrupted job") { if case .interrupted("job", _, 1, ["hook"]) = $0 { true } else { false } }
            let history = try await h.center.history(HistoryQuery(key: "job"))
            #expect(history.map(\.kind) == [.interrupted, .fired], "\(history)")
            let interrupted = try #require(history.first)
            #expect(interrupted.backends == ["hook"] && interrupted.occurrence == 1 && interrupted.due != nil, "\(interrupted)")
            let fired = try #require(history.last)
            #expect(fired.backends == ["hook"] && fired.late == false && fired.due == interrupted.due, "\(fired)")
        } catch {
            await h.stop()
            throw error
        }
        await h.stop()
    }

    /// Typed throws leave no room for `CancellationError`: the `cancelled` code stands for it,
    /// so an app can tell a task it cancelled from a bus failure.
    @Test("a call whose task is cancelled while the daemon does not answer throws the cancelled code, at once")
    func cancelledCall() async throws {
        let h = try await DaemonHarness.start()
        let daemon = h.daemon.withLock { $0 }
        do {
            _ = try await h.center.status()
            daemon.signal(SIGSTOP)
            let center = h.center
            let call = Task { () -> TocsinClientError? in
                do throws(TocsinClientError) {
                    _ = try await center.status()
                    return nil
                } catch {
                    return error
                }
            }
            call.cancel()
            let error = try await withTimeout(.seconds(10), "the cancelled call to return") { await call.value }
            daemon.signal(SIGCONT)
            #expect(error?.code == .cancelled && error?.name == nil, "\(String(describing: error))")
        } catch {
            daemon.signal(SIGCONT)
            await h.stop()
            throw error
        }
        await h.stop()
    }

    /// TOCSIN_CLIENT_PENDING=250000 measures the issue's scale; the default keeps the suite quick
    /// while still walking several full pages of the daemon's largest size (10000).
    static let pendingCount = Int(ProcessInfo.processInfo.environment["TOCSIN_CLIENT_PENDING"] ?? "") ?? 12_000

    @Test("pending() returns every notification of a schedule larger than the daemon's largest page, once")
    func largeSchedule() async throws {
        let h = try await DaemonHarness.start()
        do {
            let n = Self.pendingCount
            let started = ContinuousClock.now
            let center = h.center
            try await withThrowingTaskGroup(of: Void.self) { group in
                let window = 64
                for worker in 0..<window {
                    group.addTask {
                        var i = worker
                        while i < n {
                            try await center.add(NotificationRequest(
                                key: String(format: "p%06d", i), content: NotificationContent(title: "pending \(i)", backends: Backends.events),
                                trigger: .after(.seconds(86_400 + i))))
                            i += window
                        }
                    }
                }
                try await group.waitForAll()
            }
            let scheduled = ContinuousClock.now
            let pending = try await center.pending()
            let listed = ContinuousClock.now
            #expect(pending.count == n)
            #expect(pending.map(\.key) == (0..<n).map { String(format: "p%06d", $0) }, "every key once, in key order")
            print("pending=\(n) schedule=\(scheduled - started) pending()=\(listed - scheduled)")
        } catch {
            await h.stop()
            throw error
        }
        await h.stop()
    }
}
