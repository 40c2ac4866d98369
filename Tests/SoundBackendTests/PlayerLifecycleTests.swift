import Foundation
import Logging
import Testing
import TocsinConfig
import TocsinCore
import TocsinSoundBackend
import TocsinTesting
import TocsinTime
import TocsinModel
import TocsinSystem

let t0 = Instant(seconds: 1_772_442_000)

/// The sound backend behind a real center on a virtual clock, with fake players that record their
/// starts. Ring timing is the center's; what is tested here is the player per ring.
final class AlarmRig: Sendable {
    let w = SoundWorkspace()
    let clock = VirtualClock(now: t0)
    let center: TocsinCenter
    let backend: SoundBackend
    let events = WaitableState<[PlayerEvent]>([])
    /// Players of a key still running (unreaped) when the next one for that key started.
    let overlaps = WaitableState<[Int32]>([])
    let spy = RecordingBackend(name: "spy")

    /// `player` is the fake player's shell body (`$1` is the sound file).
    init(player: String = "exec sleep 30", every: String = "3s", maxRings: Int = 4,
         limits: PlayerLimits = PlayerLimits(), environment extra: [String: String] = [:]) async throws {
        let file = try w.wav("ring.wav", seconds: 1)
        let script = try w.script("fake-player", player)
        let events = self.events, overlaps = self.overlaps
        let factory = SoundBackendFactory(limits: limits) { e in
            if case .started(let key, _, let pid) = e {
                let earlier = events.value.compactMap { if case .started(key, _, let p) = $0, p != pid { p } else { nil } }
                let alive = earlier.filter(isRunning)
                if !alive.isEmpty { overlaps.update { $0 += alive } }
            }
            events.update { $0.append(e) }
        }
        let toml = """
            [backend.alarm]
            type = "sound"
            file = "\(file)"
            every = "\(every)"
            max_rings = \(maxRings)
            player = ["\(script)", "{file}"]
            """
        var env = ["PATH": "/usr/bin:/bin", "HOME": w.path]
        for (k, v) in extra { env[k] = v }
        let built = try w.load(toml, environment: env, factory: factory).get()
        backend = try #require(built.first as? SoundBackend)
        center = try TocsinCenter(options: CenterOptions(defaultZone: .utc), stateDirectory: w.path + "/state", clock: clock,
                                  timer: clock, logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
        try await center.start(backends: [backend, spy])
    }

    func schedule(_ key: String, at seconds: Int64) async throws {
        var s = NotificationSpec()
        s.key = key
        s.title = "Wake up"
        s.trigger = .at(.instant(t0 + .seconds(seconds)))
        s.backends = [backend.name, spy.name]
        _ = try await center.schedule(s)
    }

    /// Moves the virtual clock and waits until the deliveries that fell due have returned.
    func advance(_ seconds: Int64) async {
        clock.advance(by: .seconds(seconds))
        await center.tick()
        await center.waitForDeliveries()
    }

    func started(_ key: String) -> [(ring: UInt32, pid: Int32)] {
        events.value.compactMap { if case .started(key, let r, let p) = $0 { (r, p) } else { nil } }
    }

    /// Waits for the end of the player `pid`.
    @discardableResult
    func ended(pid: Int32, timeout: Duration = .seconds(10)) async throws -> ChildExit {
        let s = try await events.wait("end of player \(pid)", timeout: timeout) { evs in
            evs.contains { if case .ended(_, _, pid, _) = $0 { true } else { false } }
        }
        for case .ended(_, _, pid, let exit) in s { return exit }
        throw TestProcessError("unreachable")
    }

    func firing(_ key: String, ring: UInt32 = 1) -> Firing {
        let n = TocsinCore.Notification(key: key, title: "Wake up", trigger: .at(t0))
        var f = Firing(notification: n, occurrence: Occurrence(instant: t0, number: 1), due: t0, fired: t0, reason: .scheduled)
        f.ring = ring
        return f
    }
}

/// Alive and not reaped: signal 0 reaches it. Our own children only, so no recycled pid in between.
func isRunning(_ pid: Int32) -> Bool { kill(pid, 0) == 0 }

@Suite("Sound backend: one player per ring")
struct PlayerLifecycleTests {
    /// A fake player's line that says it has run what comes before it: the test waits for the
    /// file instead of hoping the shell was quick (the start window does not wait for it).
    static let ready = "touch \"$(dirname \"$1\")/ready.tmp\"; mv \"$(dirname \"$1\")/ready.tmp\" \"$(dirname \"$1\")/ready\";"
    /// Regression: `tocsin status` said `alarm: ok` while every ring failed for a player or a
    /// sound file deleted after start-up.
    @Test("health: ok while the file and the player are there; names whichever went missing")
    func healthNamesWhatIsMissing() async throws {
        let rig = try await AlarmRig()
        #expect(await rig.backend.health() == .ok)
        let player = try #require(rig.backend.settings.player.first)
        try FileManager.default.removeItem(atPath: player)
        #expect(await rig.backend.health() == .unavailable("cannot run the player \(player): No such file or directory"))
        try FileManager.default.removeItem(atPath: rig.backend.settings.file)
        #expect(await rig.backend.health() == .unavailable("cannot read the sound file \(rig.backend.settings.file): No such file or directory"))
    }

    /// Regression: a reload that replaced the alarm backend (a changed `volume`) left the playing
    /// sound with the old instance; the acknowledge went to the new one, and the sound played on
    /// to the 30 s cap.
    @Test("a reload that replaces the sound backend stops its player; the next ring is the new instance's")
    func reloadStopsTheReplacedPlayer() async throws {
        let rig = try await AlarmRig()
        try await rig.schedule("wake", at: 10)
        await rig.advance(10)
        let pid = try #require(rig.started("wake").first?.pid)
        #expect(isRunning(pid))
        var settings = rig.backend.settings
        settings.volume = 60
        let replacement = SoundBackend(name: rig.backend.name, settings: settings, environment: ["PATH": "/usr/bin:/bin"],
                                       logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
        try await rig.center.reload(backends: [replacement, rig.spy], specs: [], quiet: QuietSettings())
        _ = try await rig.ended(pid: pid)
        #expect(rig.backend.playingKeys.isEmpty)
        await rig.advance(3)
        #expect(replacement.playingKeys == ["wake"], "the next ring plays on the new instance")
        #expect(try await rig.center.acknowledge("wake"))
        #expect(replacement.playingKeys.isEmpty)
    }

    @Test("a ring starts a player; acknowledge stops and reaps it within 100 ms")
    func acknowledgeStops() async throws {
        let rig = try await AlarmRig()
        try await rig.schedule("wake", at: 10)
        await rig.advance(10)
        let pid = try #require(rig.started("wake").first?.pid)
        #expect(rig.started("wake").map(\.ring) == [1])
        #expect(isRunning(pid))
        #expect(rig.backend.playingKeys == ["wake"])

        let t = ContinuousClock.now
        #expect(try await rig.center.acknowledge("wake"))
        let exit = try await rig.ended(pid: pid)
        // The backend's part, withdraw to reaped, is timed on the player's watcher thread; the
        // center's hand-over to withdraw runs on the executor, which other suites keep busy.
        let stop = try #require(exit.stopLatency)
        print("measured: withdraw to reaped player \(stop); acknowledge to reaped \(exit.reapedAt - t)")
        #expect(stop < TimingBudget.scaled(.milliseconds(100)), "withdraw to reaped player took \(stop)")
        #expect(exit.reapedAt - t < TimingBudget.scaled(.seconds(2)), "acknowledge to reaped player took \(exit.reapedAt - t)")
        #expect(exit.stoppedBy == .withdrawn(.acknowledged))
        #expect(exit.status == .signaled(SIGTERM))
        #expect(!isRunning(pid), "player not reaped")
        #expect(rig.backend.playingKeys == [])
        #expect(rig.backend.counters.stopped == 1)
        #expect(rig.backend.counters.playerErrors == 0)
    }

    @Test("withdraw: SIGTERM, SIGKILL after the 50 ms grace if ignored, reaped within 100 ms",
          arguments: [("plays on", "exec sleep 30", SIGTERM), ("ignores SIGTERM", "trap '' TERM; \(PlayerLifecycleTests.ready) sleep 30 & wait", SIGKILL)])
    func withdrawLatency(_ name: String, _ player: String, _ signal: Int32) async throws {
        let rig = try await AlarmRig(player: player)
        try await rig.backend.deliver(rig.firing("wake"))
        let pid = try #require(rig.started("wake").first?.pid)
        // The start window may pass before the shell has run its first command: a SIGTERM sent
        // before `trap` would end it without the SIGKILL this row is about.
        if player.contains(Self.ready) {
            #expect(waitForFile(rig.w.path + "/ready", timeoutMilliseconds: 20_000), "\(name): the player never got ready")
        }
        let t = ContinuousClock.now
        await rig.backend.withdraw(key: "wake", reason: .snoozed)
        let exit = try await rig.ended(pid: pid)
        let stop = try #require(exit.stopLatency)
        print("measured (\(name)): stop request to reaped \(stop); withdraw call returned after \(ContinuousClock.now - t)")
        #expect(stop < TimingBudget.scaled(.milliseconds(100)), "\(name): stop request to reaped took \(stop)")
        #expect(exit.status == .signaled(signal), "\(name)")
        #expect(exit.stoppedBy == .withdrawn(.snoozed), "\(name)")
        #expect(!isRunning(pid), "\(name)")
    }

    @Test("a ring that comes while the previous one still plays replaces it; rings never overlap")
    func replacement() async throws {
        let rig = try await AlarmRig()
        try await rig.schedule("wake", at: 10)
        await rig.advance(10)
        await rig.advance(3)
        let starts = rig.started("wake")
        #expect(starts.map(\.ring) == [1, 2])
        let first = try #require(starts.first?.pid), second = try #require(starts.last?.pid)
        let exit = try await rig.ended(pid: first)
        #expect(exit.stoppedBy == .withdrawn(.replaced))
        #expect(rig.overlaps.value == [], "an old player was still there when the next ring started")
        #expect(!isRunning(first))
        #expect(isRunning(second))
        #expect(try await rig.center.acknowledge("wake"))
        try await rig.ended(pid: second)
        #expect(rig.backend.counters == SoundCounters(started: 2, failedStarts: 0, playerErrors: 0, capped: 0, stopped: 2))
    }

    @Test("several keys ring at once, each with its own player; acknowledging one leaves the other ringing")
    func severalKeys() async throws {
        let rig = try await AlarmRig()
        try await rig.schedule("a", at: 10)
        try await rig.schedule("b", at: 10)
        try await rig.schedule("c", at: 11)
        await rig.advance(10)
        await rig.advance(1)
        #expect(rig.backend.playingKeys == ["a", "b", "c"])
        let a = try #require(rig.started("a").first?.pid)
        let b = try #require(rig.started("b").first?.pid)
        let c = try #require(rig.started("c").first?.pid)
        #expect(Set([a, b, c]).count == 3)
        #expect(try await rig.center.acknowledge("b"))
        try await rig.ended(pid: b)
        #expect(isRunning(a) && isRunning(c))
        #expect(rig.backend.playingKeys == ["a", "c"])
        await rig.advance(2)  // a and b's second ring is due at 13, c's at 14
        #expect(rig.started("a").map(\.ring) == [1, 2])
        #expect(rig.started("b").map(\.ring) == [1])
        #expect(rig.started("c").map(\.ring) == [1])
        await rig.center.shutdown()
        for case .started(_, _, let pid) in rig.events.value { try await rig.ended(pid: pid) }
        #expect(rig.backend.playingKeys == [])
    }

    @Test("max_rings reached: the center withdraws (unanswered) and the last player stops")
    func unanswered() async throws {
        let rig = try await AlarmRig(maxRings: 2)
        try await rig.schedule("wake", at: 10)
        await rig.advance(10)
        await rig.advance(3)
        let last = try #require(rig.started("wake").last?.pid)
        await rig.advance(3)
        let exit = try await rig.ended(pid: last)
        #expect(exit.stoppedBy == .withdrawn(.unanswered))
        #expect(rig.started("wake").map(\.ring) == [1, 2])
        #expect(await rig.center.lookup("wake")?.state == .unanswered(rings: 2))
    }

    @Test("a player still running at the cap is stopped there")
    func cap() async throws {
        var limits = PlayerLimits()
        limits.cap = .milliseconds(300)
        let rig = try await AlarmRig(limits: limits)
        try await rig.backend.deliver(rig.firing("wake"))
        let pid = try #require(rig.started("wake").first?.pid)
        let exit = try await rig.ended(pid: pid)
        #expect(exit.stoppedBy == .capped)
        #expect(exit.elapsed >= .milliseconds(300) && exit.elapsed < .milliseconds(300) + TimingBudget.scaled(.milliseconds(500)), "stopped after \(exit.elapsed)")
        #expect(!isRunning(pid))
        #expect(rig.backend.counters.capped == 1)
        #expect(rig.backend.playingKeys == [])
    }

    @Test("withdraw for a key that is not playing does nothing")
    func withdrawIdle() async throws {
        let rig = try await AlarmRig(player: "exit 0")
        await rig.backend.withdraw(key: "never", reason: .cancelled)
        try await rig.backend.deliver(rig.firing("short"))
        let pid = try #require(rig.started("short").first?.pid)
        let exit = try await rig.ended(pid: pid)
        #expect(exit.status == .exited(0) && exit.stoppedBy == nil)
        await rig.backend.withdraw(key: "short", reason: .acknowledged)
        #expect(rig.events.value.count == 2)
        #expect(rig.backend.counters == SoundCounters(started: 1, failedStarts: 0, playerErrors: 0, capped: 0, stopped: 0))
    }

    @Test("a player failing at start is a retryable delivery error carrying its stderr")
    func failsAtStart() async throws {
        // A shell that exits at once can take longer than the start window to do so on a machine
        // loaded by a sanitizer run (seen under AddressSanitizer): widened like every latency.
        var limits = PlayerLimits()
        limits.startWindow = TimingBudget.scaled(limits.startWindow)
        let rig = try await AlarmRig(player: "echo 'Connection failure: Connection refused' >&2; exit 1", limits: limits)
        await #expect(throws: DeliveryError(.unavailable, "\(rig.w.path)/fake-player failed at start (exit status 1): Connection failure: Connection refused")) {
            try await rig.backend.deliver(rig.firing("wake"))
        }
        #expect(rig.backend.counters.failedStarts == 1)
        #expect(rig.backend.playingKeys == [])
    }

    @Test("real paplay without a sound server: .unavailable")
    func paplayNoServer() async throws {
        let rig = try await AlarmRig(environment: ["PULSE_SERVER": "unix:/nonexistent/pulse.sock"])
        // Same backend settings, the real player.
        var settings = rig.backend.settings
        settings.player = ["/usr/bin/paplay", "{file}"]
        // paplay's own failure takes longer on a machine loaded by a sanitizer run: the start
        // window that tells a failed start from playing is widened the same way as latencies.
        var limits = PlayerLimits()
        limits.startWindow = TimingBudget.scaled(limits.startWindow)
        let paplay = SoundBackend(name: "alarm", settings: settings,
                                  environment: ["PATH": "/usr/bin:/bin", "HOME": rig.w.path, "PULSE_SERVER": "unix:/nonexistent/pulse.sock"],
                                  logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }), limits: limits)
        do {
            try await paplay.deliver(rig.firing("wake"))
            Issue.record("paplay played without a server")
        } catch {
            #expect(error.code == .unavailable)
            #expect(error.message.hasPrefix("/usr/bin/paplay failed at start (exit status 1)"), "\(error.message)")
        }
    }

    @Test("program or file gone since the config was loaded: a permanent delivery error")
    func goneSinceLoad() async throws {
        let rig = try await AlarmRig()
        try FileManager.default.removeItem(atPath: rig.w.path + "/fake-player")
        await #expect(throws: DeliveryError(.permanent, "cannot run \(rig.w.path)/fake-player: No such file or directory")) {
            try await rig.backend.deliver(rig.firing("wake"))
        }
        try FileManager.default.removeItem(atPath: rig.w.path + "/ring.wav")
        await #expect(throws: DeliveryError(.permanent, "cannot read sound file '\(rig.w.path)/ring.wav': No such file or directory")) {
            try await rig.backend.deliver(rig.firing("wake"))
        }
        #expect(rig.backend.counters.failedStarts == 2)
    }

    @Test("a player held open for writing (being installed) is a retryable error; once closed it plays")
    func busyPlayerIsRetried() async throws {
        let rig = try await AlarmRig()
        let player = rig.w.path + "/fake-player"
        let writer = open(player, O_WRONLY | O_CLOEXEC)
        try #require(writer >= 0)
        await #expect(throws: DeliveryError(.unavailable, "cannot run \(player): Text file busy")) {
            try await rig.backend.deliver(rig.firing("wake"))
        }
        close(writer)
        // A fork of another test running meanwhile holds a copy of the writer until its exec
        // (close-on-exec closes it only then), and the kernel still answers "busy": retried, as
        // the center retries an unavailable delivery, it plays once that copy is gone.
        let backend = rig.backend, firing = rig.firing("wake")
        let busyAgain = try await withTimeout(.seconds(10), "the player to start once closed") { () async throws -> Int in
            var busy = 0
            while true {
                do {
                    try await backend.deliver(firing)
                    return busy
                } catch let error as DeliveryError where error.code == .unavailable && error.message.hasSuffix("Text file busy") {
                    busy += 1
                    try Task.checkCancellation()
                    await Task.yield()
                }
            }
        }
        #expect(rig.backend.playingKeys == ["wake"])
        #expect(rig.backend.counters.failedStarts == 1 + busyAgain)
        await rig.backend.withdraw(key: "wake", reason: .acknowledged)
    }

    @Test("a player that fails later is logged and counted; the delivery stood")
    func failsLater() async throws {
        // The delay is the fake player's own behaviour, past the start window; the test waits on its end.
        let rig = try await AlarmRig(player: "sleep 0.4; echo 'underrun' >&2; exit 4")
        try await rig.backend.deliver(rig.firing("wake"))
        let pid = try #require(rig.started("wake").first?.pid)
        let exit = try await rig.ended(pid: pid)
        #expect(exit.status == .exited(4))
        #expect(exit.stderr == "underrun")
        #expect(exit.stoppedBy == nil)
        #expect(rig.backend.counters.playerErrors == 1)
    }

    @Test("whatever the player started in its process group goes with it")
    func processGroup() async throws {
        let rig = try await AlarmRig(player: "sleep 30 & echo $! > \"$(dirname \"$1\")/g.tmp\"; mv \"$(dirname \"$1\")/g.tmp\" \"$(dirname \"$1\")/grandchild\"; wait")
        try await rig.backend.deliver(rig.firing("wake"))
        let pid = try #require(rig.started("wake").first?.pid)
        #expect(waitForFile(rig.w.path + "/grandchild", timeoutMilliseconds: 20_000), "the player never started its child")
        await rig.backend.withdraw(key: "wake", reason: .acknowledged)
        try await rig.ended(pid: pid)
        let text = try String(contentsOfFile: rig.w.path + "/grandchild", encoding: .utf8)
        let grandchild = try #require(Int32(text.trimmingCharacters(in: .whitespacesAndNewlines)))
        // Signals arrive asynchronously: wait (with a deadline) for its exit on a pidfd, which works
        // for a process that is not our child.
        #expect(waitForExit(ofAnyProcess: grandchild, timeoutMilliseconds: 2000), "grandchild still alive")
    }

    @Test("the player gets default signal dispositions and only the sound-server variables")
    func childEnvironment() async throws {
        let rig = try await AlarmRig(player: "env > \"$(dirname \"$1\")/env.tmp\"; mv \"$(dirname \"$1\")/env.tmp\" \"$(dirname \"$1\")/env\"; exec sleep 30",
                                     environment: ["PULSE_SERVER": "unix:/x", "SECRET_TOKEN": "hunter2"])
        // The daemon traps SIGTERM; a player must not inherit that, or withdraw would need SIGKILL.
        let old = signal(SIGTERM, SIG_IGN)
        do {
            try await rig.backend.deliver(rig.firing("wake"))
        } catch {
            signal(SIGTERM, old)
            throw error
        }
        signal(SIGTERM, old)
        let pid = try #require(rig.started("wake").first?.pid)
        #expect(waitForFile(rig.w.path + "/env", timeoutMilliseconds: 20_000), "the player never wrote its environment")
        await rig.backend.withdraw(key: "wake", reason: .acknowledged)
        let exit = try await rig.ended(pid: pid)
        #expect(exit.status == .signaled(SIGTERM))
        let env = try String(contentsOfFile: rig.w.path + "/env", encoding: .utf8)
        #expect(env.contains("PULSE_SERVER=unix:/x"))
        #expect(!env.contains("SECRET_TOKEN"))
    }
}
