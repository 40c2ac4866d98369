/// Ogg Vorbis and Ogg Opus length: the granule position of the stream's last page, counted in the
/// rate of the identification header (Vorbis) or at 48 kHz less the pre-skip (Opus, RFC 7845 §4).
///
/// Pages are accepted only with a matching CRC, so a stray "OggS" inside compressed data is never
/// taken for a page. Only the first page and the last ~128 KiB are read.
enum OggProbe {
    struct Page {
        var headerType: UInt8
        var granule: UInt64
        var serial: UInt32
        var bodyOffset: Int
        var lacing: [UInt8]
        var length: Int
        var isBeginning: Bool { headerType & 0x02 != 0 }
    }

    /// 27-byte header, 255 lacing values, 255 segments of 255 bytes.
    static let maxPageSize = 27 + 255 + 255 * 255
    static let noGranule = UInt64.max

    static func measure(_ b: some SoundBytes, name: String) throws(SoundFileError) -> SoundLength {
        let head = try b.read(at: 0, length: maxPageSize)
        guard let first = page(in: head, at: 0) else {
            throw SoundFileError(.malformed, "cannot determine the length of \(name): the first Ogg page is damaged or cut short")
        }
        guard first.isBeginning else {
            throw SoundFileError(.malformed, "cannot determine the length of \(name): the first Ogg page does not begin a stream")
        }
        let packet = firstPacket(of: first, in: head)
        let codec = try identify(packet, name: name)

        // The last page of the stream ends at most one page before a cut-short tail.
        let window = UInt64(2 * maxPageSize)
        let start = b.count > window ? b.count - window : 0
        let tail = try b.read(at: start, length: Int(b.count - start))
        guard let last = lastPage(in: tail) else {
            throw SoundFileError(.malformed, "cannot determine the length of \(name): no complete Ogg page with a granule position near the end of the file")
        }
        guard last.serial == first.serial else {
            throw SoundFileError(.unsupported, "cannot determine the length of \(name): chained or multiplexed Ogg streams are not supported")
        }
        switch codec {
        case .vorbis(let rate):
            return SoundLength(format: .vorbis, frames: last.granule, rate: rate)
        case .opus(let preSkip):
            guard last.granule >= UInt64(preSkip) else {
                throw SoundFileError(.malformed, "cannot determine the length of \(name): Opus end granule \(last.granule) is before the pre-skip \(preSkip)")
            }
            return SoundLength(format: .opus, frames: last.granule - UInt64(preSkip), rate: 48000)
        }
    }

    enum Codec: Equatable { case vorbis(rate: UInt32), opus(preSkip: UInt16) }

    static func identify(_ p: [UInt8], name: String) throws(SoundFileError) -> Codec {
        if p.count >= 7, p[0] == 1, p[1..<7].elementsEqual("vorbis".utf8) {
            guard p.count >= 30 else {
                throw SoundFileError(.malformed, "cannot determine the length of \(name): Vorbis identification header cut short")
            }
            let version = p.le32(7), rate = p.le32(12)
            guard version == 0, p[11] > 0, rate > 0 else {
                throw SoundFileError(.malformed, "cannot determine the length of \(name): Vorbis identification header with version \(version), \(p[11]) channels, rate \(rate)")
            }
            return .vorbis(rate: rate)
        }
        if p.count >= 8, p[0..<8].elementsEqual("OpusHead".utf8) {
            guard p.count >= 19 else {
                throw SoundFileError(.malformed, "cannot determine the length of \(name): OpusHead cut short")
            }
            // The upper nibble is the major version; only 0 is defined (RFC 7845 §5.1).
            guard p[8] >> 4 == 0, p[9] > 0 else {
                throw SoundFileError(.unsupported, "cannot determine the length of \(name): OpusHead version \(p[8]) with \(p[9]) channels")
            }
            return .opus(preSkip: p.le16(10))
        }
        let what: String
        if p.count >= 5, p[0] == 0x7F, p[1..<5].elementsEqual("FLAC".utf8) {
            what = "Ogg FLAC"
        } else if p.count >= 8, p[0..<8].elementsEqual("Speex   ".utf8) {
            what = "Ogg Speex"
        } else {
            what = "an Ogg stream of an unknown codec"
        }
        throw SoundFileError(.unsupported, "cannot determine the length of \(name): \(what) (only Vorbis and Opus are measured)")
    }

    /// The page at `at` if it is complete in `buf` and its CRC matches.
    static func page(in buf: [UInt8], at i: Int) -> Page? {
        guard i >= 0, i + 27 <= buf.count, buf[i..<(i + 4)].elementsEqual("OggS".utf8), buf[i + 4] == 0 else { return nil }
        let segments = Int(buf[i + 26])
        guard i + 27 + segments <= buf.count else { return nil }
        let lacing = Array(buf[(i + 27)..<(i + 27 + segments)])
        let bodyLength = lacing.reduce(0) { $0 + Int($1) }
        let length = 27 + segments + bodyLength
        guard i + length <= buf.count else { return nil }
        let stored = buf.le32(i + 22)
        guard OggCRC.checksum(buf, from: i, count: length, zeroing: (i + 22)..<(i + 26)) == stored else { return nil }
        return Page(headerType: buf[i + 5], granule: buf.le64(i + 6), serial: buf.le32(i + 14),
                    bodyOffset: i + 27 + segments, lacing: lacing, length: length)
    }

    /// The first packet on a page (identification headers always fit on their page).
    static func firstPacket(of p: Page, in buf: [UInt8]) -> [UInt8] {
        var n = 0
        for l in p.lacing {
            n += Int(l)
            if l < 255 { break }
        }
        return Array(buf[p.bodyOffset..<(p.bodyOffset + n)])
    }

    /// The last valid page in `buf` that finishes a packet (granule not -1).
    static func lastPage(in buf: [UInt8]) -> Page? {
        var i = buf.count - 27
        while i >= 0 {
            if buf[i] == 0x4F, let p = page(in: buf, at: i), p.granule != noGranule { return p }
            i -= 1
        }
        return nil
    }
}

/// The Ogg page checksum: CRC-32 with polynomial 0x04C11DB7, MSB first, initial value and final XOR 0.
enum OggCRC {
    static let table: [UInt32] = (0..<256).map { i -> UInt32 in
        var r = UInt32(i) << 24
        for _ in 0..<8 { r = r & 0x8000_0000 != 0 ? (r << 1) ^ 0x04C1_1DB7 : r << 1 }
        return r
    }

    static func checksum(_ buf: [UInt8], from start: Int, count: Int, zeroing skip: Range<Int>) -> UInt32 {
        var crc: UInt32 = 0
        for j in start..<(start + count) {
            let byte = skip.contains(j) ? 0 : buf[j]
            crc = (crc << 8) ^ table[Int(((crc >> 24) ^ UInt32(byte)) & 0xFF)]
        }
        return crc
    }

    static func checksum(_ bytes: [UInt8]) -> UInt32 { checksum(bytes, from: 0, count: bytes.count, zeroing: 0..<0) }
}
