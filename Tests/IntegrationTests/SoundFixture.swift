import Foundation
import TocsinTesting

/// A headless PulseAudio with a null sink, as the test's child: its own runtime directory and home,
/// a socket clients reach through `PULSE_SERVER`, anonymous auth (no cookie to share). Runs as root
/// too (it warns that it is not meant to, and works).
final class PulseServer: Sendable {
    let dir: TemporaryDirectory
    let process: TestProcess
    let socket: String

    var server: String { "unix:" + socket }
    /// What a client needs to reach it, and nothing of the user's session.
    var environment: [String: String] {
        ["PULSE_SERVER": server, "XDG_RUNTIME_DIR": dir.path + "/run", "HOME": dir.path + "/home"]
    }

    private init(dir: TemporaryDirectory, process: TestProcess, socket: String) {
        self.dir = dir
        self.process = process
        self.socket = socket
    }

    static func start() async throws -> PulseServer {
        let dir = TemporaryDirectory(prefix: "tocsin-pulse")
        for d in ["run", "home"] {
            try FileManager.default.createDirectory(atPath: dir.path + "/" + d, withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o700])
        }
        let socket = dir.path + "/pulse.sock"
        let p = try TestProcess("pulseaudio", [
            "--daemonize=no", "--exit-idle-time=-1", "-n", "--disallow-exit", "--use-pid-file=no",
            "--log-target=stderr", "--log-level=info",
            "--load=module-null-sink sink_name=tocsin_null",
            "--load=module-native-protocol-unix socket=\(socket) auth-anonymous=1",
        ], environment: ["HOME": dir.path + "/home", "XDG_RUNTIME_DIR": dir.path + "/run"])
        do {
            try await p.waitForStderr(containing: "Daemon startup complete.", timeout: .seconds(20))
        } catch {
            _ = try? await p.kill()
            throw error
        }
        return PulseServer(dir: dir, process: p, socket: socket)
    }

    func stop() async {
        process.signal(SIGTERM)
        if (try? await process.waitForExit(timeout: .seconds(10))) == nil { _ = try? await process.kill() }
    }

    /// Starts watching sink inputs. With `ackAfter` n > 0 the watcher itself runs `ack` right after
    /// the n-th stream appears, so the ack and the stream's removal are timed on one clock by one
    /// process that does nothing else (the test process's executor is shared with other suites).
    func watch(ackAfter: Int = 0, ack: [String] = []) async throws -> SinkInputWatch {
        let p = try TestProcess("/usr/bin/python3", ["-u", "-c", SinkInputWatch.script, String(ackAfter)] + ack,
                                environment: environment)
        do {
            try await p.waitForOutput(containing: "ready\n", timeout: .seconds(30))
        } catch {
            _ = try? await p.kill()
            throw TestProcessError("sink-input watcher: \(error); stderr: \(p.stderr)")
        }
        return SinkInputWatch(process: p)
    }
}

/// Sink inputs (playback streams) appearing and disappearing, from `pactl subscribe`, each stamped
/// with CLOCK_MONOTONIC by the watcher's reader thread as the line arrives.
final class SinkInputWatch: Sendable {
    struct Event: Sendable, Equatable, CustomStringConvertible {
        var kind: String  // "new" or "remove"
        var index: Int
        var at: Double
        var description: String { "\(kind) #\(index) at \(at)" }
    }
    struct Ack: Sendable {
        var status: Int
        var started: Double
        var returned: Double
    }

    /// argv[1]: after which `new` to run the rest of argv as the ack command (0: never).
    static let script = #"""
        import queue, subprocess, sys, threading, time
        ack_after = int(sys.argv[1]); ack = sys.argv[2:]
        p = subprocess.Popen(["pactl", "subscribe"], stdout=subprocess.PIPE, text=True, bufsize=1)
        q = queue.Queue()
        def reader():
            for line in p.stdout:
                q.put((time.monotonic(), line.strip()))
            q.put((time.monotonic(), None))
        threading.Thread(target=reader, daemon=True).start()
        # pactl prints nothing until something happens, and subscribes asynchronously: cause a
        # change until we see one.
        ready = False
        for attempt in range(30):
            subprocess.run(["pactl", "set-sink-mute", "tocsin_null", "toggle"], check=True)
            deadline = time.monotonic() + 1
            while not ready:
                try:
                    t, line = q.get(timeout=max(0.0, deadline - time.monotonic()))
                except queue.Empty:
                    break
                if line is None:
                    sys.exit("pactl subscribe ended")
                ready = "'change' on sink #" in line
            if ready:
                break
        if not ready:
            sys.exit("pactl subscribe saw no event")
        print("ready", flush=True)
        news = 0
        while True:
            t, line = q.get()
            if line is None:
                break
            parts = line.split()
            if len(parts) == 5 and parts[3] == "sink-input" and parts[1] in ("'new'", "'remove'"):
                print(f"{parts[1][1:-1]} {parts[4][1:]} {t:.6f}", flush=True)
                if parts[1] == "'new'":
                    news += 1
                    if news == ack_after and ack:
                        t0 = time.monotonic()
                        r = subprocess.run(ack, capture_output=True, text=True)
                        t1 = time.monotonic()
                        print(f"ack {r.returncode} {t0:.6f} {t1:.6f}", flush=True)
                        if r.returncode != 0:
                            print(r.stderr, file=sys.stderr, flush=True)
        """#

    let process: TestProcess

    init(process: TestProcess) { self.process = process }

    static func parse(_ text: String) -> (events: [Event], ack: Ack?) {
        var events: [Event] = []
        var ack: Ack?
        for line in text.split(separator: "\n") {
            let f = line.split(separator: " ")
            if f.count == 3, f[0] == "new" || f[0] == "remove", let i = Int(f[1]), let t = Double(f[2]) {
                events.append(Event(kind: String(f[0]), index: i, at: t))
            } else if f.count == 4, f[0] == "ack", let rc = Int(f[1]), let t0 = Double(f[2]), let t1 = Double(f[3]) {
                ack = Ack(status: rc, started: t0, returned: t1)
            }
        }
        return (events, ack)
    }

    var events: [Event] { Self.parse(process.stdout).events }
    func count(_ kind: String) -> Int { events.filter { $0.kind == kind }.count }

    /// Waits for the `n`th event of `kind` (1-based).
    @discardableResult
    func wait(_ kind: String, number n: Int, timeout: Duration) async throws -> Event {
        let s = try await process.output.wait("sink-input \(kind) #\(n)", timeout: timeout) {
            Self.parse($0.stdoutText).events.filter { $0.kind == kind }.count >= n || $0.status != nil
        }
        let hits = Self.parse(s.stdoutText).events.filter { $0.kind == kind }
        guard hits.count >= n else { throw TestProcessError("sink-input watcher ended: \(s.stderrText)") }
        return hits[n - 1]
    }

    /// Waits for the removal of sink input `index`.
    @discardableResult
    func waitForRemoval(of index: Int, timeout: Duration) async throws -> Event {
        @Sendable func hit(_ text: String) -> Event? { Self.parse(text).events.first { $0.kind == "remove" && $0.index == index } }
        let s = try await process.output.wait("removal of sink-input #\(index)", timeout: timeout) {
            hit($0.stdoutText) != nil || $0.status != nil
        }
        guard let e = hit(s.stdoutText) else { throw TestProcessError("sink-input watcher ended: \(s.stderrText)") }
        return e
    }

    func waitForAck(timeout: Duration) async throws -> Ack {
        let s = try await process.output.wait("the watcher's ack", timeout: timeout) {
            Self.parse($0.stdoutText).ack != nil || $0.status != nil
        }
        guard let a = Self.parse(s.stdoutText).ack else { throw TestProcessError("sink-input watcher ended: \(s.stderrText)") }
        return a
    }

    /// Kills the watcher and its pactl (its process group: pactl shares the watcher's stderr, which
    /// would keep the watcher's output open).
    func stop() async {
        if process.status == nil { _ = Glibc.kill(-process.pid, SIGKILL) }
        _ = try? await process.waitForExit(timeout: .seconds(10))
    }
}

/// A private bus, PulseAudio and a daemon whose `[backend.alarm]` plays through `paplay`.
final class AlarmFixture: Sendable {
    let pulse: PulseServer
    let bus: PrivateBus
    let daemon: DaemonUnderTest
    let watch: SinkInputWatch
    let sound: String
    let daemonProcess: WaitableState<TestProcess?>

    var process: TestProcess {
        get throws {
            guard let p = daemonProcess.value else { throw TestProcessError("daemon not running") }
            return p
        }
    }

    private init(pulse: PulseServer, bus: PrivateBus, daemon: DaemonUnderTest, watch: SinkInputWatch, sound: String) {
        self.pulse = pulse
        self.bus = bus
        self.daemon = daemon
        self.watch = watch
        self.sound = sound
        daemonProcess = WaitableState(nil)
    }

    /// `every`, `maxRings` and a sine of `soundSeconds` made by sox; `extraConfig` adds backends.
    /// `player`: the player's argv template, `paplay` when nil.
    static func start(every: String, maxRings: Int, soundSeconds: String,
                      ackKeyAfter: (key: String, ring: Int)? = nil, extraConfig: String = "",
                      player: [String]? = nil) async throws -> AlarmFixture {
        let pulse = try await PulseServer.start()
        let bus: PrivateBus
        do { bus = try await PrivateBus.start() } catch {
            await pulse.stop()
            throw error
        }
        do {
            let ack = ackKeyAfter.map { [Products.executable("tocsin"), "ack", $0.key, "--bus", bus.address] } ?? []
            let watch = try await pulse.watch(ackAfter: ackKeyAfter?.ring ?? 0, ack: ack)
            let sound = pulse.dir.path + "/ring.wav"
            let sox = try await TestProcess.run("sox", ["-n", "-r", "44100", "-c", "1", "-b", "16", sound, "synth", soundSeconds, "sine", "880"])
            guard sox.status == .exited(0) else { throw TestProcessError("sox: \(sox.stderrText)") }
            let config = """
                [backend.alarm]
                type = "sound"
                file = "\(sound)"
                every = "\(every)"
                max_rings = \(maxRings)
                player = [\((player ?? ["paplay", "{file}"]).map { "\"\($0)\"" }.joined(separator: ", "))]

                [backend.log]
                type = "log"
                format = "json"

                """ + extraConfig
            var env = bus.environment
            env["PULSE_SERVER"] = pulse.server
            env["XDG_RUNTIME_DIR"] = pulse.dir.path + "/run"
            let daemon = try DaemonUnderTest(config: config, environment: env)
            let f = AlarmFixture(pulse: pulse, bus: bus, daemon: daemon, watch: watch, sound: sound)
            try await f.startDaemon()
            return f
        } catch {
            await bus.stop()
            await pulse.stop()
            throw error
        }
    }

    func startDaemon() async throws {
        let p = try daemon.start(["--bus", bus.address])
        daemonProcess.update { $0 = p }
        try await p.waitForStderr(containing: "serving the D-Bus API", timeout: .seconds(30))
    }

    /// SIGTERM and reap; the daemon's players are stopped by its shutdown.
    func stopDaemon() async throws {
        let p = try process
        p.signal(SIGTERM)
        let status = try await p.waitForExit(timeout: .seconds(15))
        guard status == .exited(0) else { throw TestProcessError("daemon ended with \(status): \(p.stderr.suffix(2000))") }
    }

    func stop() async {
        if let p = daemonProcess.value, p.status == nil {
            p.signal(SIGTERM)
            _ = try? await p.waitForExit(timeout: .seconds(10))
        }
        await watch.stop()
        await bus.stop()
        await pulse.stop()
    }

    func tocsin(_ args: String...) async throws -> TestProcess.Output {
        let out = try await TestProcess.run(Products.executable("tocsin"), args + ["--bus", bus.address])
        guard out.status == .exited(0) else { throw TestProcessError("tocsin \(args.joined(separator: " ")): \(out.stderrText)") }
        return out
    }

    /// Fires a log-only notification `after` from now and waits for it: everything due before it
    /// has been handled by then, which turns "no further ring" into something we can wait for.
    func marker(after: String, timeout: Duration = .seconds(30)) async throws {
        let title = "marker-\(UUID().uuidString.prefix(8))"
        _ = try await tocsin("schedule", "--title", title, "--after", after, "--backend", "log")
        try await process.waitForOutput(containing: title, timeout: timeout)
    }
}

func withAlarm<T: Sendable>(every: String, maxRings: Int, soundSeconds: String, ackKeyAfter: (key: String, ring: Int)? = nil,
                            extraConfig: String = "", player: [String]? = nil,
                            _ body: (AlarmFixture) async throws -> T) async throws -> T {
    let f = try await AlarmFixture.start(every: every, maxRings: maxRings, soundSeconds: soundSeconds, ackKeyAfter: ackKeyAfter,
                                         extraConfig: extraConfig, player: player)
    do {
        let r = try await body(f)
        await f.stop()
        return r
    } catch {
        await f.stop()
        throw error
    }
}
