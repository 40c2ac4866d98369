import Glibc
import Logging
public import TocsinCore
import TocsinTime
public import TocsinModel
import TocsinSystem

/// Builds `type = "sound"` backends from `[backend.NAME]`:
///
/// | key | default |
/// | --- | --- |
/// | `file` | the sound theme's `alarm-clock-elapsed`, else the sound Tocsin ships (see `DefaultSound`) |
/// | `every` | `1min`; must be longer than the sound |
/// | `max_rings` | 10 |
/// | `player` | the first of `pw-play`, `paplay`, `aplay` on PATH |
/// | `volume` | the player's own (100 %); 0–100 percent |
///
/// Everything that can be checked is checked here, when the config is loaded, so `tocsin check`
/// and a reload report a bad sound at its line instead of a silent alarm at 06:30.
public struct SoundBackendFactory: BackendFactory {
    /// An alarm sound longer than this is refused, and a player still running this long is stopped.
    public static let maxSeconds: UInt64 = 30

    private let limits: PlayerLimits
    private let observer: (@Sendable (PlayerEvent) -> Void)?

    public init() {
        limits = PlayerLimits()
        observer = nil
    }

    /// For tests: shorter limits and an observer of players.
    public init(limits: PlayerLimits, observer: (@Sendable (PlayerEvent) -> Void)? = nil) {
        self.limits = limits
        self.observer = observer
    }

    public var typeName: String { "sound" }
    public var optionKeys: [String] { ["file", "every", "max_rings", "player", "volume"] }

    /// Variables a player may need to find the sound server; nothing else of the daemon's leaks to it.
    static let passedVariables = [
        "HOME", "LANG", "LC_ALL", "XDG_RUNTIME_DIR", "DBUS_SESSION_BUS_ADDRESS",
        "PULSE_SERVER", "PULSE_COOKIE", "PULSE_SINK", "PIPEWIRE_REMOTE", "PIPEWIRE_RUNTIME_DIR", "ALSA_CARD", "AUDIODEV",
    ]

    public func options(from options: inout some FieldReader, environment: BackendEnvironment) -> SoundSettings? {
        let env = environment.environment
        let before = options.issues.count
        let file = readFile(&options, environment: env)
        let length = file.flatMap { measure($0, &options) }

        let every = options.duration("every", positive: true) ?? .minutes(1)
        if let length, every <= length.span {
            let key = options.has("every") ? "every" : "file"
            options.report(key, "'every' (\(every)) must be longer than the sound (\(length))")
        }
        let maxRings = options.integer("max_rings", in: 1...10_000).map { UInt32($0) } ?? 10
        let volume = options.integer("volume", in: 0...100).map { Int($0) }
        let player = readPlayer(&options, environment: env, volume: volume)

        guard options.issues.count == before, let file, let length, let player else { return nil }
        return SoundSettings(file: file, length: length, player: player, volume: volume, every: every, maxRings: maxRings)
    }

    public func make(name: String, options settings: SoundSettings, environment: BackendEnvironment) -> any DeliveryBackend {
        let env = environment.environment
        var playerEnv: [String: String] = ["PATH": env["PATH"] ?? Self.defaultPath]
        for k in Self.passedVariables { if let v = env[k] { playerEnv[k] = v } }
        return SoundBackend(name: name, settings: settings, environment: playerEnv, logger: environment.logger,
                            limits: limits, observer: observer, stateDirectory: environment.stateDirectory)
    }

    static let defaultPath = "/usr/local/bin:/usr/bin:/bin"

    private func readFile(_ options: inout some FieldReader, environment env: [String: String]) -> String? {
        guard options.has("file") else {
            if let found = DefaultSound.locate(environment: env) { return found }
            options.report("file", "no alarm sound found (looked for the freedesktop sound theme's alarm-clock-elapsed and for Tocsin's tocsin/sounds/alarm.wav in the data directories); set 'file' or install sound-theme-freedesktop")
            return nil
        }
        guard let raw = options.string("file") else { return nil }
        var path = raw
        if path.hasPrefix("~/"), let home = env["HOME"], home.hasPrefix("/") { path = home + path.dropFirst(1) }
        guard path.hasPrefix("/") else {
            options.report("file", "'file' must be an absolute path (or start with ~/), found '\(raw)'")
            return nil
        }
        return path
    }

    private func measure(_ path: String, _ options: inout some FieldReader) -> SoundLength? {
        let length: SoundLength
        do {
            length = try SoundProbe.measure(path: path)
        } catch {
            options.report("file", error.message)
            return nil
        }
        if length.frames == 0 {
            options.report("file", "sound file '\(path)' is empty (0 s)")
            return nil
        }
        if length.exceeds(seconds: Self.maxSeconds) {
            options.report("file", "sound file '\(path)' plays \(length); an alarm sound may last at most \(Self.maxSeconds) s")
            return nil
        }
        return length
    }

    private func readPlayer(_ options: inout some FieldReader, environment env: [String: String], volume: Int?) -> [String]? {
        let searchPath = env["PATH"] ?? Self.defaultPath
        guard options.has("player") else {
            guard let found = DefaultPlayer.find(path: searchPath) else {
                options.report("player", "no sound player found on PATH (\(DefaultPlayer.candidates.map(\.name).joined(separator: ", "))); install pulseaudio-utils or set 'player'")
                return nil
            }
            if volume != nil, !found.template.contains(where: DefaultPlayer.hasVolume) {
                options.report("volume", "\(found.name) cannot set a volume; remove 'volume' or set a 'player' that can")
                return nil
            }
            return found.template
        }
        guard let argv = options.stringArray("player") else { return nil }
        guard let program = argv.first, !program.isEmpty else {
            options.report("player", "'player' must name a program as its first element")
            return nil
        }
        guard argv.contains(where: { $0.contains("{file}") }) else {
            options.report("player", "'player' must contain {file} where the sound file goes, e.g. [\"paplay\", \"{file}\"]")
            return nil
        }
        guard let resolved = DefaultPlayer.resolve(program, path: searchPath) else {
            options.report("player", "player program '\(program)' not found\(program.contains("/") ? "" : " on PATH") or not executable")
            return nil
        }
        if volume != nil, !argv.contains(where: DefaultPlayer.hasVolume) {
            options.report("volume", "'volume' needs a {volume}, {volume_pa} or {volume_fraction} placeholder in 'player'")
            return nil
        }
        return [resolved] + argv.dropFirst()
    }
}

/// The players tried when `player` is not set, in order, with the volume scale each understands.
public enum DefaultPlayer: Sendable {
    public struct Candidate: Sendable {
        public var name: String
        public var arguments: [String]
    }
    public static let candidates: [Candidate] = [
        // PipeWire's native player; --volume is a linear factor.
        Candidate(name: "pw-play", arguments: ["--volume={volume_fraction}", "{file}"]),
        // PulseAudio (and pipewire-pulse); --volume is 0..65536, 65536 being 100 %.
        Candidate(name: "paplay", arguments: ["--volume={volume_pa}", "{file}"]),
        // ALSA directly; no volume of its own.
        Candidate(name: "aplay", arguments: ["-q", "{file}"]),
    ]

    static func hasVolume(_ arg: String) -> Bool {
        arg.contains("{volume}") || arg.contains("{volume_pa}") || arg.contains("{volume_fraction}")
    }

    /// The first candidate on `path`, with its template (program resolved to an absolute path).
    public static func find(path: String) -> (name: String, template: [String])? {
        for c in candidates {
            if let p = resolve(c.name, path: path) { return (c.name, [p] + c.arguments) }
        }
        return nil
    }

    /// An absolute path for `program`: itself if it contains a slash, else searched in `path`.
    public static func resolve(_ program: String, path: String) -> String? {
        if program.contains("/") {
            return program.hasPrefix("/") && Spawn.isExecutable(program) ? program : nil
        }
        return Spawn.lookUp(program, path: path)
    }
}

/// Where the default alarm sound comes from.
///
/// 1. The freedesktop sound theme's `alarm-clock-elapsed` (`.oga`, `.ogg` or `.wav` under
///    `sounds/freedesktop/stereo/` of each XDG data directory): the sound the desktop uses, when
///    the theme is installed (`sound-theme-freedesktop`).
/// 2. Tocsin's own `alarm.wav` (made by `contrib/sounds/make-alarm.sh`), installed as
///    `PREFIX/share/tocsin/sounds/alarm.wav`. It is found next to the executable
///    (`PREFIX/bin/../share/tocsin/sounds/`), in the XDG data directories (`tocsin/sounds/`), and,
///    for a binary run from a source checkout (`.build/debug/tocsin`), in the checkout's
///    `contrib/sounds/`. Relative to the executable rather than a compiled-in prefix, so a
///    relocated install and the build tree both work without configuration.
public enum DefaultSound: Sendable {
    public static let themeNames = ["alarm-clock-elapsed.oga", "alarm-clock-elapsed.ogg", "alarm-clock-elapsed.wav"]
    public static let shippedName = "alarm.wav"

    /// XDG data directories, most important first.
    public static func dataDirectories(_ env: [String: String]) -> [String] {
        var dirs: [String] = []
        if let h = env["XDG_DATA_HOME"], h.hasPrefix("/") {
            dirs.append(h)
        } else if let home = env["HOME"], home.hasPrefix("/") {
            dirs.append(home + "/.local/share")
        }
        let system = env["XDG_DATA_DIRS"].flatMap { $0.isEmpty ? nil : $0 } ?? "/usr/local/share:/usr/share"
        dirs += system.split(separator: ":").map(String.init).filter { $0.hasPrefix("/") }
        return dirs
    }

    /// Every place looked at, in order.
    public static func candidates(environment env: [String: String], executable: String?) -> [String] {
        let data = dataDirectories(env)
        var out: [String] = []
        for d in data { for n in themeNames { out.append("\(d)/sounds/freedesktop/stereo/\(n)") } }
        if let exe = executable, let bin = parent(exe) {
            if let prefix = parent(bin) { out.append("\(prefix)/share/tocsin/sounds/\(shippedName)") }
        }
        for d in data { out.append("\(d)/tocsin/sounds/\(shippedName)") }
        if let exe = executable {
            var dir = parent(exe)
            for _ in 0..<5 {
                guard let d = dir else { break }
                out.append("\(d == "/" ? "" : d)/contrib/sounds/\(shippedName)")
                dir = parent(d)
            }
        }
        return out
    }

    public static func locate(environment env: [String: String], executable: String? = currentExecutable()) -> String? {
        candidates(environment: env, executable: executable).first { path in
            var st = stat()
            return stat(path, &st) == 0 && (st.st_mode & S_IFMT) == S_IFREG && access(path, R_OK) == 0
        }
    }

    static func parent(_ path: String) -> String? {
        guard path.hasPrefix("/"), path != "/" else { return nil }
        let trimmed = path.hasSuffix("/") ? String(path.dropLast()) : path
        guard let slash = trimmed.lastIndex(of: "/") else { return nil }
        let p = String(trimmed[..<slash])
        return p.isEmpty ? "/" : p
    }

    /// The running binary, through /proc so a symlinked `tocsin` finds its real prefix.
    public static func currentExecutable() -> String? {
        var buf = [CChar](repeating: 0, count: 4096)
        let n = readlink("/proc/self/exe", &buf, buf.count - 1)
        guard n > 0 else { return nil }
        return String(decoding: buf[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
