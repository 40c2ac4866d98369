/// WAV (RIFF/WAVE) length from the `fmt ` and `data` chunks.
///
/// Chunks are walked in order; unknown ones (`LIST`, `bext`, `cue `...) are skipped, honouring the
/// pad byte after an odd-sized chunk. A `data` chunk that claims more bytes than the file holds (a
/// writer that never went back to fix the size, or a file cut short) counts what is there, since
/// that is what a player plays.
enum WAVProbe {
    private struct Format {
        var code: UInt16
        var channels: UInt16
        var rate: UInt32
        var blockAlign: UInt16
    }

    /// Formats whose frames are a fixed number of bytes: PCM, IEEE float, A-law, µ-law.
    private static let frameSized: Set<UInt16> = [0x0001, 0x0003, 0x0006, 0x0007]
    private static let extensible: UInt16 = 0xFFFE

    static func measure(_ b: some SoundBytes, name: String) throws(SoundFileError) -> SoundLength {
        var format: Format?
        var factFrames: UInt32?
        var dataBytes: UInt64?
        var offset: UInt64 = 12
        while offset + 8 <= b.count {
            let header = try b.read(at: offset, length: 8)
            guard header.count == 8 else { break }
            let id = header[0..<4]
            // Trailing garbage after the last chunk is common (tags written by other tools); stop there.
            guard id.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) else { break }
            let size = UInt64(header.le32(4))
            let body = offset + 8
            switch String(decoding: id, as: UTF8.self) {
            case "fmt ":
                format = try readFormat(b, at: body, size: size, name: name)
            case "fact":
                let f = try b.read(at: body, length: 4)
                if size >= 4, f.count == 4 { factFrames = f.le32(0) }
            case "data":
                let available = b.count - body
                dataBytes = min(size, available)
            default:
                break
            }
            offset = body + size + (size & 1)
        }
        guard let format else {
            throw SoundFileError(.malformed, "cannot determine the length of \(name): WAV file without a 'fmt ' chunk")
        }
        guard let dataBytes else {
            throw SoundFileError(.malformed, "cannot determine the length of \(name): WAV file without a 'data' chunk")
        }
        if frameSized.contains(format.code) {
            return SoundLength(format: .wav, frames: dataBytes / UInt64(format.blockAlign), rate: format.rate)
        }
        if let factFrames {
            return SoundLength(format: .wav, frames: UInt64(factFrames), rate: format.rate)
        }
        throw SoundFileError(.unsupported, "cannot determine the length of \(name): compressed WAV (format 0x\(hex(format.code))) without a 'fact' chunk")
    }

    private static func readFormat(_ b: some SoundBytes, at body: UInt64, size: UInt64,
                                   name: String) throws(SoundFileError) -> Format {
        guard size >= 16 else {
            throw SoundFileError(.malformed, "cannot determine the length of \(name): 'fmt ' chunk of \(size) bytes (at least 16 expected)")
        }
        let f = try b.read(at: body, length: Int(min(size, 40)))
        guard f.count >= 16 else {
            throw SoundFileError(.malformed, "cannot determine the length of \(name): file ends inside the 'fmt ' chunk")
        }
        var code = f.le16(0)
        if code == extensible {
            // WAVE_FORMAT_EXTENSIBLE: the real format is the first two bytes of the SubFormat GUID.
            guard f.count >= 40, f.le16(16) >= 22 else {
                throw SoundFileError(.malformed, "cannot determine the length of \(name): extensible 'fmt ' chunk too short for its SubFormat")
            }
            code = f.le16(24)
        }
        let format = Format(code: code, channels: f.le16(2), rate: f.le32(4), blockAlign: f.le16(12))
        guard format.channels > 0, format.rate > 0, format.blockAlign > 0 else {
            throw SoundFileError(.malformed, "cannot determine the length of \(name): 'fmt ' chunk with \(format.channels) channels, rate \(format.rate), block align \(format.blockAlign)")
        }
        return format
    }

    private static func hex(_ v: UInt16) -> String {
        let s = String(v, radix: 16)
        return String(repeating: "0", count: max(0, 4 - s.count)) + s
    }
}
