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

    /// `pactl subscribe`, ready once it has seen an event we caused.
    func subscribe() async throws -> SinkInputWatch {
        let p = try TestProcess("pactl", ["subscribe"], environment: environment)
        // pactl prints nothing until something happens: make something happen, and wait for it.
        let mute = try await TestProcess.run("pactl", ["set-sink-mute", "tocsin_null", "toggle"], environment: environment)
        guard mute.status == .exited(0) else { throw TestProcessError("pactl set-sink-mute: \(mute.stderrText)") }
        try await p.waitForOutput(containing: "Event 'change' on sink #", timeout: .seconds(10))
        return SinkInputWatch(process: p)
    }
}

/// Sink inputs (playback streams) appearing and disappearing, from `pactl subscribe`, each stamped
/// with the moment the test saw it.
final class SinkInputWatch: Sendable {
    struct Event: Sendable, Equatable {
        var kind: String  // "new" or "remove"
        var index: Int
    }

    let process: TestProcess
    private let seen = WaitableState<[(event: Event, at: ContinuousClock.Instant)]>([])

    init(process: TestProcess) {
        self.process = process
        let seen = self.seen
        // The reader thread updates the output; a task turns new lines into stamped events.
        Task.detached {
            var consumed = 0
            while true {
                let from = consumed
                let state = try? await process.output.wait("pactl output", timeout: .seconds(3600)) {
                    $0.stdout[from...].contains(10) || $0.status != nil
                }
                guard let state else { return }
                let text = state.stdout
                guard let lastNewline = text[consumed...].lastIndex(of: 10) else { return }
                let now = ContinuousClock.now
                let lines = String(decoding: text[consumed..<lastNewline], as: UTF8.self).split(separator: "\n")
                consumed = lastNewline + 1
                let events = lines.compactMap(Self.parse)
                if !events.isEmpty { seen.update { $0 += events.map { ($0, now) } } }
                if state.status != nil { return }
            }
        }
    }

    /// `Event 'new' on sink-input #3`.
    static func parse(_ line: Substring) -> Event? {
        let parts = line.split(separator: " ")
        guard parts.count == 5, parts[0] == "Event", parts[3] == "sink-input", parts[4].hasPrefix("#"),
              let index = Int(parts[4].dropFirst()) else { return nil }
        let kind = parts[1].trimmingCharacters(in: CharacterSet(charactersIn: "'"))
        guard kind == "new" || kind == "remove" else { return nil }
        return Event(kind: kind, index: index)
    }

    var events: [Event] { seen.value.map(\.event) }
    func count(_ kind: String) -> Int { events.filter { $0.kind == kind }.count }

    /// Waits for the `n`th event of `kind` (1-based); returns it and when it was seen.
    @discardableResult
    func wait(_ kind: String, number n: Int, timeout: Duration) async throws -> (event: Event, at: ContinuousClock.Instant) {
        let s = try await seen.wait("sink-input \(kind) #\(n)", timeout: timeout) { $0.filter { $0.event.kind == kind }.count >= n }
        return s.filter { $0.event.kind == kind }[n - 1]
    }

    /// Waits for the removal of sink input `index`.
    func waitForRemoval(of index: Int, timeout: Duration) async throws -> ContinuousClock.Instant {
        let s = try await seen.wait("removal of sink-input #\(index)", timeout: timeout) {
            $0.contains { $0.event == Event(kind: "remove", index: index) }
        }
        guard let hit = s.first(where: { $0.event == Event(kind: "remove", index: index) }) else {
            throw TestProcessError("removal of sink-input #\(index) vanished")
        }
        return hit.at
    }

    func stop() async { _ = try? await process.kill() }
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

    /// `every`, `maxRings` and a sine of `soundSeconds` made by sox.
    static func start(every: String, maxRings: Int, soundSeconds: String) async throws -> AlarmFixture {
        let pulse = try await PulseServer.start()
        let bus: PrivateBus
        do { bus = try await PrivateBus.start() } catch {
            await pulse.stop()
            throw error
        }
        do {
            let watch = try await pulse.subscribe()
            let sound = pulse.dir.path + "/ring.wav"
            let sox = try await TestProcess.run("sox", ["-n", "-r", "44100", "-c", "1", "-b", "16", sound, "synth", soundSeconds, "sine", "880"])
            guard sox.status == .exited(0) else { throw TestProcessError("sox: \(sox.stderrText)") }
            let config = """
                [backend.alarm]
                type = "sound"
                file = "\(sound)"
                every = "\(every)"
                max_rings = \(maxRings)
                player = ["paplay", "{file}"]

                [backend.log]
                type = "log"
                format = "json"
                """
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

func withAlarm<T: Sendable>(every: String, maxRings: Int, soundSeconds: String,
                            _ body: (AlarmFixture) async throws -> T) async throws -> T {
    let f = try await AlarmFixture.start(every: every, maxRings: maxRings, soundSeconds: soundSeconds)
    do {
        let r = try await body(f)
        await f.stop()
        return r
    } catch {
        await f.stop()
        throw error
    }
}
