/// Hand-made WAV and Ogg files for the edge cases sox will not write. The Ogg CRC here is a
/// bit-by-bit rewrite, independent of the table-driven one under test (which real files from sox
/// and opusenc check against libogg).
enum Bytes {
    static func le16(_ v: UInt16) -> [UInt8] { [UInt8(v & 0xFF), UInt8(v >> 8)] }
    static func le32(_ v: UInt32) -> [UInt8] { (0..<4).map { UInt8((v >> (8 * $0)) & 0xFF) } }
    static func le64(_ v: UInt64) -> [UInt8] { (0..<8).map { UInt8((v >> (8 * $0)) & 0xFF) } }
    static func ascii(_ s: String) -> [UInt8] { Array(s.utf8) }

    // MARK: WAV

    /// A chunk, padded to even length unless `pad` is false; `declared` overrides the size field.
    static func chunk(_ id: String, _ body: [UInt8], declared: UInt32? = nil, pad: Bool = true) -> [UInt8] {
        var c = ascii(id) + le32(declared ?? UInt32(body.count)) + body
        if pad, body.count % 2 == 1 { c.append(0) }
        return c
    }

    static func fmt(code: UInt16 = 1, channels: UInt16 = 1, rate: UInt32 = 8000, bits: UInt16 = 16,
                    blockAlign: UInt16? = nil) -> [UInt8] {
        let align = blockAlign ?? channels * ((bits + 7) / 8)
        return le16(code) + le16(channels) + le32(rate) + le32(rate * UInt32(align)) + le16(align) + le16(bits)
    }

    /// WAVE_FORMAT_EXTENSIBLE with `sub` as the SubFormat's format code.
    static func extensibleFmt(sub: UInt16, channels: UInt16, rate: UInt32, bits: UInt16) -> [UInt8] {
        let guidTail: [UInt8] = [0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x80, 0x00, 0x00, 0xAA, 0x00, 0x38, 0x9B, 0x71]
        return fmt(code: 0xFFFE, channels: channels, rate: rate, bits: bits)
            + le16(22) + le16(bits) + le32(0x3F) + le16(sub) + guidTail
    }

    static func wav(_ chunks: [UInt8]...) -> [UInt8] {
        let body = ascii("WAVE") + chunks.flatMap { $0 }
        return ascii("RIFF") + le32(UInt32(body.count)) + body
    }

    // MARK: Ogg

    static func crc(_ data: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0
        for byte in data {
            crc ^= UInt32(byte) << 24
            for _ in 0..<8 { crc = crc & 0x8000_0000 != 0 ? (crc << 1) ^ 0x04C1_1DB7 : crc << 1 }
        }
        return crc
    }

    /// One page holding whole `packets`.
    static func oggPage(serial: UInt32 = 0x1234, sequence: UInt32, granule: UInt64, type: UInt8 = 0,
                        packets: [[UInt8]], corruptCRC: Bool = false) -> [UInt8] {
        var lacing: [UInt8] = []
        for p in packets {
            lacing += Array(repeating: 255, count: p.count / 255)
            lacing.append(UInt8(p.count % 255))
        }
        var page = ascii("OggS") + [0, type] + le64(granule) + le32(serial) + le32(sequence) + le32(0)
            + [UInt8(lacing.count)] + lacing + packets.flatMap { $0 }
        var c = crc(page)
        if corruptCRC { c ^= 1 }
        page.replaceSubrange(22..<26, with: le32(c))
        return page
    }

    static func opusHead(preSkip: UInt16 = 312, channels: UInt8 = 1, version: UInt8 = 1) -> [UInt8] {
        ascii("OpusHead") + [version, channels] + le16(preSkip) + le32(44100) + le16(0) + [0]
    }

    static func vorbisID(rate: UInt32, channels: UInt8 = 1) -> [UInt8] {
        [1] + ascii("vorbis") + le32(0) + [channels] + le32(rate) + le32(0) + le32(128_000) + le32(0) + [0xB8, 1]
    }

    /// Identification page, a comment page, and audio pages ending at `granules`.
    static func ogg(id: [UInt8], granules: [UInt64], serial: UInt32 = 0x1234, tags: String = "OpusTags") -> [UInt8] {
        var out = oggPage(serial: serial, sequence: 0, granule: 0, type: 2, packets: [id])
        out += oggPage(serial: serial, sequence: 1, granule: 0, packets: [ascii(tags) + le32(0) + le32(0)])
        for (i, g) in granules.enumerated() {
            out += oggPage(serial: serial, sequence: UInt32(2 + i), granule: g, type: i == granules.count - 1 ? 4 : 0,
                           packets: [Array(repeating: UInt8(truncatingIfNeeded: 0x4F + i), count: 300)])
        }
        return out
    }
}
