import Foundation
import Logging
import Testing
import TocsinConfig
import TocsinCore
import TocsinSoundBackend
import TocsinTesting
import TocsinTime
import TocsinGateway
import TocsinModel

/// A directory with sounds and fake players, for building backends from config text.
final class SoundWorkspace: Sendable {
    let dir = TemporaryDirectory(prefix: "tocsin-sound")
    var path: String { dir.path }

    /// `seconds` of 8 kHz mono 16-bit PCM, written by hand (no sox needed for config tests).
    @discardableResult
    func wav(_ name: String, seconds: Double) throws -> String {
        let frames = Int(seconds * 8000)
        let bytes = Bytes.wav(Bytes.chunk("fmt ", Bytes.fmt(channels: 1, rate: 8000, bits: 16)),
                              Bytes.chunk("data", [UInt8](repeating: 0, count: frames * 2)))
        let p = path + "/" + name
        try Data(bytes).write(to: URL(fileURLWithPath: p))
        return p
    }

    /// An executable shell script.
    @discardableResult
    func script(_ name: String, _ body: String) throws -> String {
        try dir.script(name, body)
    }

    func load(_ toml: String, environment: [String: String]? = nil, factory: SoundBackendFactory = SoundBackendFactory())
        -> Result<[any DeliveryBackend], DiagnosticError> {
        let file = path + "/config.toml"
        switch ConfigLoader.load(bytes: Array(toml.utf8), file: file) {
        case .failure(let e): return .failure(DiagnosticError(e.diagnostics))
        case .success(let loaded):
            let env = environment ?? ["PATH": path, "HOME": path]
            return BackendRegistry([factory]).makeBackends(
                for: loaded.configuration, file: file,
                environment: BackendEnvironment(logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }), environment: env))
        }
    }

    /// The backend, or the diagnostics rendered as `line:column: message` lines.
    func build(_ toml: String, environment: [String: String]? = nil) -> (SoundBackend?, [String]) {
        switch load(toml, environment: environment) {
        case .success(let b): return (b.first as? SoundBackend, [])
        case .failure(let e): return (nil, e.diagnostics.map { "\($0.location.line):\($0.location.column): \($0.message)" })
        }
    }
}

@Suite("Sound backend configuration")
struct SoundConfigTests {
    @Test("defaults: every 1min, 10 rings, the first player on PATH with its volume scale")
    func defaults() throws {
        let w = SoundWorkspace()
        let file = try w.wav("a.wav", seconds: 1.5)
        let paplay = try w.script("paplay", "exit 0")
        let (b, errors) = w.build("[backend.alarm]\ntype = \"sound\"\nfile = \"\(file)\"\n")
        #expect(errors == [])
        let backend = try #require(b)
        #expect(backend.ringPolicy == RingPolicy(every: .minutes(1), maxRings: 10))
        #expect(backend.settings.length == SoundLength(format: .wav, frames: 12000, rate: 8000))
        #expect(backend.settings.arguments == [paplay, "--volume=65536", file])
    }

    struct Row: Sendable, CustomTestStringConvertible {
        var name: String
        var table: String        // after [backend.alarm] and type; FILE is the 1.5 s sound
        var players: [String]    // fake players to put on PATH
        var expected: [String]   // "line:column: message" or, for a success, the argv
        var testDescription: String { name }
    }

    static let rows: [Row] = [
        Row(name: "volume on paplay's 0..65536 scale", table: "file = \"FILE\"\nvolume = 50", players: ["paplay"],
            expected: ["DIR/paplay", "--volume=32768", "FILE"]),
        Row(name: "pw-play preferred, volume as a fraction", table: "file = \"FILE\"\nvolume = 5", players: ["paplay", "pw-play"],
            expected: ["DIR/pw-play", "--volume=0.05", "FILE"]),
        Row(name: "aplay when nothing else", table: "file = \"FILE\"", players: ["aplay"], expected: ["DIR/aplay", "-q", "FILE"]),
        Row(name: "custom player, every placeholder", table: "file = \"FILE\"\nvolume = 100\nplayer = [\"mpv\", \"--volume={volume}\", \"--pa={volume_pa}\", \"--f={volume_fraction}\", \"{file}\"]",
            players: ["mpv"], expected: ["DIR/mpv", "--volume=100", "--pa=65536", "--f=1.00", "FILE"]),
        Row(name: "~/ in file is the home directory", table: "file = \"~/a.wav\"", players: ["paplay"],
            expected: ["DIR/paplay", "--volume=65536", "FILE"]),

        Row(name: "every not longer than the sound", table: "file = \"FILE\"\nevery = \"1500ms\"", players: ["paplay"],
            expected: ["5:9: 'every' (1.500000s) must be longer than the sound (1.500 s)"]),
        Row(name: "aplay has no volume", table: "file = \"FILE\"\nvolume = 70", players: ["aplay"],
            expected: ["5:10: aplay cannot set a volume; remove 'volume' or set a 'player' that can"]),
        Row(name: "volume out of range", table: "file = \"FILE\"\nvolume = 101", players: ["paplay"],
            expected: ["5:10: 'volume' must be between 0 and 100, found 101"]),
        Row(name: "max_rings zero", table: "file = \"FILE\"\nmax_rings = 0", players: ["paplay"],
            expected: ["5:13: 'max_rings' must be between 1 and 10000, found 0"]),
        Row(name: "relative file", table: "file = \"a.wav\"", players: ["paplay"],
            expected: ["4:8: 'file' must be an absolute path (or start with ~/), found 'a.wav'"]),
        Row(name: "missing file", table: "file = \"/nonexistent/x.wav\"", players: ["paplay"],
            expected: ["4:8: cannot read sound file '/nonexistent/x.wav': No such file or directory"]),
        Row(name: "no player on PATH", table: "file = \"FILE\"", players: [],
            expected: ["1:1: no sound player found on PATH (pw-play, paplay, aplay); install pulseaudio-utils or set 'player'"]),
        Row(name: "custom player without {file}", table: "file = \"FILE\"\nplayer = [\"paplay\"]", players: ["paplay"],
            expected: ["5:10: 'player' must contain {file} where the sound file goes, e.g. [\"paplay\", \"{file}\"]"]),
        Row(name: "custom player not found", table: "file = \"FILE\"\nplayer = [\"nosuchplayer\", \"{file}\"]", players: [],
            expected: ["5:10: player program 'nosuchplayer' not found on PATH or not executable"]),
        Row(name: "regression: a NUL in a player argument, at the argument", table: "file = \"FILE\"\nplayer = [\"mpv\", \"a\\u0000b\", \"{file}\"]",
            players: ["mpv"], expected: ["5:18: 'player' must not contain a NUL character"]),
        Row(name: "volume without a placeholder in player", table: "file = \"FILE\"\nvolume = 3\nplayer = [\"mpv\", \"{file}\"]", players: ["mpv"],
            expected: ["5:10: 'volume' needs a {volume}, {volume_pa} or {volume_fraction} placeholder in 'player'"]),
        Row(name: "misspelt key", table: "file = \"FILE\"\nmax_ring = 3", players: ["paplay"],
            expected: ["5:1: unknown key 'max_ring' in [backend.alarm]; did you mean 'max_rings'?"]),
    ]

    @Test("options: player argv or positioned errors", arguments: rows)
    func options(_ row: Row) throws {
        let w = SoundWorkspace()
        let file = try w.wav("a.wav", seconds: 1.5)
        for p in row.players { try w.script(p, "exit 0") }
        let toml = "[backend.alarm]\ntype = \"sound\"\n\n" + row.table.replacing("FILE", with: file) + "\n"
        let (b, errors) = w.build(toml)
        let expected = row.expected.map { $0.replacing("FILE", with: file).replacing("DIR", with: w.path) }
        if let b {
            #expect(b.settings.arguments == expected, "\(row.name)")
        } else {
            #expect(errors == expected, "\(row.name)")
        }
    }

    @Test("a sound over 30 s is refused at the file value; exactly 30 s is accepted")
    func tooLong() throws {
        let w = SoundWorkspace()
        try w.script("paplay", "exit 0")
        let long = try w.wav("long.wav", seconds: 30.001)
        let (b, errors) = w.build("[backend.alarm]\ntype = \"sound\"\nevery = \"1min\"\nfile = \"\(long)\"\n")
        #expect(b == nil)
        #expect(errors == ["4:8: sound file '\(long)' plays 30.001 s; an alarm sound may last at most 30 s"])
        let exact = try w.wav("exact.wav", seconds: 30)
        let (ok, none) = w.build("[backend.alarm]\ntype = \"sound\"\nfile = \"\(exact)\"\n")
        #expect(none == [])
        #expect(ok?.settings.length.span == .seconds(30))
    }

    @Test("an unmeasurable or empty file is refused with the reason")
    func unmeasurable() throws {
        let w = SoundWorkspace()
        try w.script("paplay", "exit 0")
        let junk = try w.dir.write("junk.mp3", "ID3 not really")
        let empty = try w.wav("empty.wav", seconds: 0)
        #expect(w.build("[backend.a]\ntype = \"sound\"\nfile = \"\(junk)\"\n").1
            == ["3:8: cannot determine the length of '\(junk)': not a WAV or Ogg Vorbis/Opus file"])
        #expect(w.build("[backend.a]\ntype = \"sound\"\nfile = \"\(empty)\"\n").1 == ["3:8: sound file '\(empty)' is empty (0 s)"])
    }

    @Test("default file: the freedesktop theme's alarm-clock-elapsed when installed, else Tocsin's own")
    func defaultFile() throws {
        let w = SoundWorkspace()
        // Without the theme in the data directories, the checkout's contrib/sounds/alarm.wav is found
        // from the test binary in .build, as `tocsin` run from the build tree finds it.
        let env = ["XDG_DATA_DIRS": w.path + "/nothing", "XDG_DATA_HOME": w.path + "/nothing-either"]
        let shipped = try #require(DefaultSound.locate(environment: env))
        #expect(shipped.hasSuffix("/contrib/sounds/alarm.wav"))
        #expect(try SoundProbe.measure(path: shipped) == SoundLength(format: .wav, frames: 24000, rate: 16000))

        // Installed under a prefix: PREFIX/share/tocsin/sounds next to PREFIX/bin/tocsin.
        try FileManager.default.createDirectory(atPath: w.path + "/prefix/share/tocsin/sounds", withIntermediateDirectories: true)
        try w.wav("prefix/share/tocsin/sounds/alarm.wav", seconds: 1)
        #expect(DefaultSound.locate(environment: env, executable: w.path + "/prefix/bin/tocsin") == w.path + "/prefix/share/tocsin/sounds/alarm.wav")

        // The theme wins where it is installed.
        let theme = w.path + "/share/sounds/freedesktop/stereo"
        try FileManager.default.createDirectory(atPath: theme, withIntermediateDirectories: true)
        try w.wav("share/sounds/freedesktop/stereo/alarm-clock-elapsed.wav", seconds: 1)
        let withTheme = ["XDG_DATA_DIRS": "/nonexistent:" + w.path + "/share", "XDG_DATA_HOME": w.path + "/nothing"]
        #expect(DefaultSound.locate(environment: withTheme, executable: w.path + "/prefix/bin/tocsin") == theme + "/alarm-clock-elapsed.wav")
        try w.wav("share/sounds/freedesktop/stereo/alarm-clock-elapsed.oga", seconds: 1)
        #expect(DefaultSound.locate(environment: withTheme) == theme + "/alarm-clock-elapsed.oga")

        // Nothing anywhere: a clear error at the table.
        #expect(DefaultSound.locate(environment: env, executable: "/nonexistent/bin/tocsin") == nil)
    }
}
