import Testing
import TocsinSoundBackend
import TocsinTesting
import TocsinTime

/// Sound lengths are measured from headers; these pin them to the frame, on files made by sox and
/// opusenc and on hand-made ones for what those tools never write.
@Suite("Sound length probe")
struct SoundLengthTests {
    struct Made: Sendable, CustomTestStringConvertible {
        var name: String
        var tool: String
        var arguments: [String]  // OUT stands for the output path
        var ext: String
        var expected: SoundLength
        var testDescription: String { name }
    }

    static let made: [Made] = [
        Made(name: "WAV 44.1 kHz mono 16-bit 2 s", tool: "sox", arguments: ["-n", "-r", "44100", "-c", "1", "-b", "16", "OUT", "synth", "2", "sine", "440"],
             ext: "wav", expected: SoundLength(format: .wav, frames: 88200, rate: 44100)),
        Made(name: "WAV 48 kHz stereo 24-bit 1.5 s (extensible)", tool: "sox", arguments: ["-n", "-r", "48000", "-c", "2", "-b", "24", "OUT", "synth", "1.5", "sine", "440"],
             ext: "wav", expected: SoundLength(format: .wav, frames: 72000, rate: 48000)),
        Made(name: "WAV 22.05 kHz 6 channels 16-bit 0.5 s (extensible)", tool: "sox", arguments: ["-n", "-r", "22050", "-c", "6", "-b", "16", "OUT", "synth", "0.5", "sine", "440"],
             ext: "wav", expected: SoundLength(format: .wav, frames: 11025, rate: 22050)),
        Made(name: "WAV 8 kHz unsigned 8-bit 3 s", tool: "sox", arguments: ["-n", "-r", "8000", "-c", "1", "-b", "8", "-e", "unsigned-integer", "OUT", "synth", "3", "sine", "440"],
             ext: "wav", expected: SoundLength(format: .wav, frames: 24000, rate: 8000)),
        Made(name: "WAV 32-bit float 1 s", tool: "sox", arguments: ["-n", "-r", "16000", "-c", "1", "-b", "32", "-e", "floating-point", "OUT", "synth", "1", "sine", "440"],
             ext: "wav", expected: SoundLength(format: .wav, frames: 16000, rate: 16000)),
        Made(name: "WAV A-law 2 s", tool: "sox", arguments: ["-n", "-r", "8000", "-c", "1", "-e", "a-law", "OUT", "synth", "2", "sine", "440"],
             ext: "wav", expected: SoundLength(format: .wav, frames: 16000, rate: 8000)),
        Made(name: "WAV IMA ADPCM 2 s (frames from 'fact')", tool: "sox", arguments: ["-n", "-r", "8000", "-c", "1", "-e", "ima-adpcm", "OUT", "synth", "2", "sine", "440"],
             ext: "wav", expected: SoundLength(format: .wav, frames: 16000, rate: 8000)),
        Made(name: "WAV 31 s", tool: "sox", arguments: ["-n", "-r", "8000", "-c", "1", "-b", "16", "OUT", "synth", "31", "sine", "440"],
             ext: "wav", expected: SoundLength(format: .wav, frames: 248_000, rate: 8000)),
        Made(name: "Ogg Vorbis 44.1 kHz 2 s", tool: "sox", arguments: ["-n", "-r", "44100", "-c", "1", "OUT", "synth", "2", "sine", "440"],
             ext: "ogg", expected: SoundLength(format: .vorbis, frames: 88200, rate: 44100)),
        Made(name: "Ogg Vorbis 22.05 kHz stereo 1.2 s", tool: "sox", arguments: ["-n", "-r", "22050", "-c", "2", "OUT", "synth", "1.2", "sine", "440"],
             ext: "ogg", expected: SoundLength(format: .vorbis, frames: 26460, rate: 22050)),
        Made(name: "Ogg Vorbis 31 s", tool: "sox", arguments: ["-n", "-r", "8000", "-c", "1", "OUT", "synth", "31", "sine", "440"],
             ext: "ogg", expected: SoundLength(format: .vorbis, frames: 248_000, rate: 8000)),
    ]

    @Test("files made by sox measure exactly", arguments: made)
    func soxFiles(_ row: Made) async throws {
        let dir = TemporaryDirectory()
        let out = dir.path + "/t." + row.ext
        let r = try await TestProcess.run(row.tool, row.arguments.map { $0 == "OUT" ? out : $0 })
        try #require(r.status == .exited(0), "\(row.name): \(row.tool) failed: \(r.stderrText)")
        #expect(try SoundProbe.measure(path: out) == row.expected, "\(row.name)")
    }

    struct Opus: Sendable, CustomTestStringConvertible {
        var name: String
        var rate: String
        var seconds: String
        var frames: UInt64
        var testDescription: String { name }
    }

    @Test("Ogg Opus made by opusenc measures exactly: 48 kHz granules less the pre-skip", arguments: [
        Opus(name: "from 48 kHz, 2 s", rate: "48000", seconds: "2", frames: 96000),
        Opus(name: "from 44.1 kHz (resampled), 1.5 s", rate: "44100", seconds: "1.5", frames: 72000),
        Opus(name: "from 16 kHz, 31 s", rate: "16000", seconds: "31", frames: 1_488_000),
    ])
    func opusenc(_ row: Opus) async throws {
        let dir = TemporaryDirectory()
        let wav = dir.path + "/in.wav", opus = dir.path + "/t.opus"
        let s = try await TestProcess.run("sox", ["-n", "-r", row.rate, "-c", "1", "-b", "16", wav, "synth", row.seconds, "sine", "440"])
        try #require(s.status == .exited(0), "\(s.stderrText)")
        let o = try await TestProcess.run("opusenc", ["--quiet", wav, opus])
        try #require(o.status == .exited(0), "opusenc: \(o.stderrText)")
        #expect(try SoundProbe.measure(path: opus) == SoundLength(format: .opus, frames: row.frames, rate: 48000), "\(row.name)")
    }

    enum Expect: Sendable {
        case length(SoundLength)
        case refused(SoundFileError.Code, String)
    }

    struct Edge: Sendable, CustomTestStringConvertible {
        var name: String
        var bytes: [UInt8]
        var expect: Expect
        var testDescription: String { name }
    }

    static let pcm = Bytes.fmt(code: 1, channels: 2, rate: 8000, bits: 16)  // 4 bytes a frame
    static let audio = [UInt8](repeating: 7, count: 4000)                   // 1000 frames
    static let opus = Bytes.opusHead(preSkip: 312)

    static let edges: [Edge] = [
        Edge(name: "WAV: plain", bytes: Bytes.wav(Bytes.chunk("fmt ", pcm), Bytes.chunk("data", audio)),
             expect: .length(SoundLength(format: .wav, frames: 1000, rate: 8000))),
        Edge(name: "WAV: unknown chunks, one odd-sized with its pad byte, before and after data",
             bytes: Bytes.wav(Bytes.chunk("LIST", Array("INFOISFT\u{5}\0\0\0abcd\0".utf8)), Bytes.chunk("fmt ", pcm),
                              Bytes.chunk("junk", [1, 2, 3]), Bytes.chunk("data", audio), Bytes.chunk("id3 ", [9, 9, 9, 9, 9])),
             expect: .length(SoundLength(format: .wav, frames: 1000, rate: 8000))),
        Edge(name: "WAV: odd-sized data chunk (last partial frame dropped)",
             bytes: Bytes.wav(Bytes.chunk("fmt ", Bytes.fmt(channels: 1, rate: 8000, bits: 8)), Bytes.chunk("data", [UInt8](repeating: 0x80, count: 8001))),
             expect: .length(SoundLength(format: .wav, frames: 8001, rate: 8000))),
        Edge(name: "WAV: extensible with PCM SubFormat",
             bytes: Bytes.wav(Bytes.chunk("fmt ", Bytes.extensibleFmt(sub: 1, channels: 2, rate: 8000, bits: 16)), Bytes.chunk("data", audio)),
             expect: .length(SoundLength(format: .wav, frames: 1000, rate: 8000))),
        Edge(name: "WAV: data chunk claims more than the file holds (cut short)",
             bytes: Bytes.wav(Bytes.chunk("fmt ", pcm), Bytes.chunk("data", audio, declared: 400_000)),
             expect: .length(SoundLength(format: .wav, frames: 1000, rate: 8000))),
        Edge(name: "WAV: streaming writer's 0xFFFFFFFF data size",
             bytes: Bytes.wav(Bytes.chunk("fmt ", pcm), Bytes.chunk("data", audio, declared: 0xFFFF_FFFF)),
             expect: .length(SoundLength(format: .wav, frames: 1000, rate: 8000))),
        Edge(name: "WAV: compressed with a 'fact' chunk",
             bytes: Bytes.wav(Bytes.chunk("fmt ", Bytes.fmt(code: 0x11, channels: 1, rate: 8000, bits: 4, blockAlign: 256)),
                              Bytes.chunk("fact", Bytes.le32(12345)), Bytes.chunk("data", audio)),
             expect: .length(SoundLength(format: .wav, frames: 12345, rate: 8000))),
        Edge(name: "WAV: compressed without 'fact'",
             bytes: Bytes.wav(Bytes.chunk("fmt ", Bytes.fmt(code: 0x55, channels: 1, rate: 8000, bits: 0, blockAlign: 1)), Bytes.chunk("data", audio)),
             expect: .refused(.unsupported, "compressed WAV (format 0x0055) without a 'fact' chunk")),
        Edge(name: "WAV: no data chunk", bytes: Bytes.wav(Bytes.chunk("fmt ", pcm), Bytes.chunk("LIST", [0, 0])),
             expect: .refused(.malformed, "WAV file without a 'data' chunk")),
        Edge(name: "WAV: no fmt chunk", bytes: Bytes.wav(Bytes.chunk("data", audio)),
             expect: .refused(.malformed, "WAV file without a 'fmt ' chunk")),
        Edge(name: "WAV: header only", bytes: Array("RIFF\u{4}\0\0\0WAVE".utf8),
             expect: .refused(.malformed, "WAV file without a 'fmt ' chunk")),
        Edge(name: "WAV: fmt chunk too short", bytes: Bytes.wav(Bytes.chunk("fmt ", Array(pcm[0..<12])), Bytes.chunk("data", audio)),
             expect: .refused(.malformed, "'fmt ' chunk of 12 bytes (at least 16 expected)")),
        Edge(name: "WAV: file ends inside fmt", bytes: Array(Bytes.wav(Bytes.chunk("fmt ", pcm)).prefix(30)),
             expect: .refused(.malformed, "file ends inside the 'fmt ' chunk")),
        Edge(name: "WAV: zero rate", bytes: Bytes.wav(Bytes.chunk("fmt ", Bytes.fmt(rate: 0)), Bytes.chunk("data", audio)),
             expect: .refused(.malformed, "'fmt ' chunk with 1 channels, rate 0")),
        Edge(name: "WAV: extensible too short for SubFormat",
             bytes: Bytes.wav(Bytes.chunk("fmt ", Bytes.fmt(code: 0xFFFE) + Bytes.le16(0)), Bytes.chunk("data", audio)),
             expect: .refused(.malformed, "extensible 'fmt ' chunk too short")),
        Edge(name: "RF64", bytes: Array("RF64\u{FF}\u{FF}\u{FF}\u{FF}WAVEds64".utf8),
             expect: .refused(.unsupported, "RF64 WAV files are not supported")),
        Edge(name: "garbage", bytes: (0..<5000).map { UInt8(truncatingIfNeeded: $0 &* 7919) },
             expect: .refused(.unknownFormat, "not a WAV or Ogg Vorbis/Opus file")),
        Edge(name: "empty file", bytes: [], expect: .refused(.unknownFormat, "not a WAV or Ogg Vorbis/Opus file")),
        Edge(name: "MP3 (ID3 tag)", bytes: Array("ID3\u{4}\0\0\0\0\0\0".utf8) + [UInt8](repeating: 0, count: 100),
             expect: .refused(.unknownFormat, "not a WAV or Ogg Vorbis/Opus file")),

        Edge(name: "Opus: end granule less the pre-skip", bytes: Bytes.ogg(id: opus, granules: [48312, 96312, 144_312]),
             expect: .length(SoundLength(format: .opus, frames: 144_000, rate: 48000))),
        Edge(name: "Opus: pre-skip 0, one audio page", bytes: Bytes.ogg(id: Bytes.opusHead(preSkip: 0), granules: [24000]),
             expect: .length(SoundLength(format: .opus, frames: 24000, rate: 48000))),
        Edge(name: "Opus: last page cut short, the one before counts",
             bytes: Array(Bytes.ogg(id: opus, granules: [48312, 96312]).dropLast(100)),
             expect: .length(SoundLength(format: .opus, frames: 48000, rate: 48000))),
        Edge(name: "Opus: trailing page with no finished packet (granule -1) is passed over",
             bytes: Bytes.ogg(id: opus, granules: [48312, UInt64.max]),
             expect: .length(SoundLength(format: .opus, frames: 48000, rate: 48000))),
        Edge(name: "Opus: end granule before the pre-skip", bytes: Bytes.ogg(id: opus, granules: [100]),
             expect: .refused(.malformed, "Opus end granule 100 is before the pre-skip 312")),
        Edge(name: "Opus: unknown major version", bytes: Bytes.ogg(id: Bytes.opusHead(version: 0x10), granules: [48312]),
             expect: .refused(.unsupported, "OpusHead version 16")),
        Edge(name: "Opus: OpusHead cut short", bytes: Bytes.ogg(id: Array(opus.prefix(12)), granules: [48312]),
             expect: .refused(.malformed, "OpusHead cut short")),
        Edge(name: "Vorbis: granule over the identification header's rate",
             bytes: Bytes.ogg(id: Bytes.vorbisID(rate: 22050), granules: [22050, 33075], tags: "\u{3}vorbis"),
             expect: .length(SoundLength(format: .vorbis, frames: 33075, rate: 22050))),
        Edge(name: "Vorbis: rate 0", bytes: Bytes.ogg(id: Bytes.vorbisID(rate: 0), granules: [100], tags: "\u{3}vorbis"),
             expect: .refused(.malformed, "Vorbis identification header with version 0, 1 channels, rate 0")),
        Edge(name: "Ogg: damaged first page (CRC)",
             bytes: Bytes.oggPage(sequence: 0, granule: 0, type: 2, packets: [opus], corruptCRC: true),
             expect: .refused(.malformed, "the first Ogg page is damaged or cut short")),
        Edge(name: "Ogg: first page not a stream start",
             bytes: Bytes.oggPage(sequence: 0, granule: 0, type: 0, packets: [opus]),
             expect: .refused(.malformed, "the first Ogg page does not begin a stream")),
        Edge(name: "Ogg: headers only, then garbage",
             bytes: Bytes.oggPage(sequence: 0, granule: 0, type: 2, packets: [opus]) + Array("OggS garbage".utf8),
             expect: .refused(.malformed, "Opus end granule 0 is before the pre-skip 312")),
        Edge(name: "Ogg: chained streams",
             bytes: Bytes.ogg(id: opus, granules: [48312]) + Bytes.ogg(id: opus, granules: [48312], serial: 0x9999),
             expect: .refused(.unsupported, "chained or multiplexed Ogg streams are not supported")),
        Edge(name: "Ogg FLAC", bytes: Bytes.ogg(id: [0x7F] + Array("FLAC\u{1}\0\0\0fLaC".utf8), granules: [100]),
             expect: .refused(.unsupported, "Ogg FLAC (only Vorbis and Opus are measured)")),
        Edge(name: "Ogg Speex", bytes: Bytes.ogg(id: Array("Speex   1.2".utf8), granules: [100]),
             expect: .refused(.unsupported, "Ogg Speex")),
        Edge(name: "Ogg of an unknown codec", bytes: Bytes.ogg(id: Array("\u{80}theora".utf8), granules: [100]),
             expect: .refused(.unsupported, "an Ogg stream of an unknown codec")),
    ]

    @Test("hand-made edge cases: exact lengths and refusals with messages", arguments: edges)
    func edgeCases(_ row: Edge) {
        let result = Result { () throws(SoundFileError) in try SoundProbe.measure(SoundData(row.bytes), name: "'x.snd'") }
        switch (row.expect, result) {
        case (.length(let want), .success(let got)):
            #expect(got == want, "\(row.name)")
        case (.refused(let code, let text), .failure(let e)):
            #expect(e.code == code, "\(row.name): \(e.message)")
            #expect(e.message.hasPrefix("cannot determine the length of 'x.snd': "), "\(row.name): \(e.message)")
            #expect(e.message.contains(text), "\(row.name): \(e.message)")
        case (.length(let want), .failure(let e)):
            Issue.record("\(row.name): expected \(want), refused: \(e.message)")
        case (.refused(let code, _), .success(let got)):
            Issue.record("\(row.name): expected refusal \(code), measured \(got)")
        }
    }

    @Test("lengths print in milliseconds, rounded up, and compare exactly against 30 s")
    func lengthArithmetic() {
        let exact = SoundLength(format: .wav, frames: 30 * 44100, rate: 44100)
        let over = SoundLength(format: .wav, frames: 30 * 44100 + 1, rate: 44100)
        #expect(!exact.exceeds(seconds: 30))
        #expect(over.exceeds(seconds: 30))
        #expect(exact.description == "30.000 s")
        #expect(over.description == "30.001 s")
        #expect(SoundLength(format: .opus, frames: 72000, rate: 48000).span.microseconds == 1_500_000)
        #expect(SoundLength(format: .wav, frames: 1, rate: 3).span.microseconds == 333_334)
    }

    @Test("a missing file is refused with its path and the system's reason")
    func missingFile() {
        #expect(throws: SoundFileError(.unreadable, "cannot read sound file '/nonexistent/a.wav': No such file or directory")) {
            try SoundProbe.measure(path: "/nonexistent/a.wav")
        }
        #expect(throws: SoundFileError(.unreadable, "sound file '/tmp' is not a regular file")) {
            try SoundProbe.measure(path: "/tmp")
        }
    }
}
