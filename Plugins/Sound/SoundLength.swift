import Glibc
public import TocsinTime

/// Why the length of a sound file could not be measured. The config loader turns it into a
/// positioned error at the `file` value, so its message names the file and what is wrong.
public struct SoundFileError: Error, Hashable, Sendable, CustomStringConvertible {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        /// The closed set of codes: clients match on the static members below but cannot make
        /// new ones. Raw values are the stable spellings that messages and tests show.
        private enum _Code: String, Hashable, Sendable {
            case unreadable
            case unknownFormat = "unknown-format"
            case malformed
            case unsupported
        }

        private let code: _Code

        private init(_ code: _Code) { self.code = code }

        /// The stable spelling, e.g. `unreadable`.
        public var description: String { code.rawValue }

        /// The file cannot be opened or read.
        public static let unreadable = Code(.unreadable)
        /// Neither WAV nor Ogg: we cannot tell how long it plays.
        public static let unknownFormat = Code(.unknownFormat)
        /// A WAV or Ogg file whose headers are cut short or inconsistent.
        public static let malformed = Code(.malformed)
        /// A well-formed file of a kind we do not measure (compressed WAV without `fact`, chained Ogg, FLAC in Ogg).
        public static let unsupported = Code(.unsupported)
    }
    public var code: Code
    public var message: String
    public init(_ code: Code, _ message: String) { self.code = code; self.message = message }
    public var description: String { message }
}

/// How long a sound plays, as the exact frame count over the rate it is counted in.
///
/// Kept as a fraction rather than seconds so tests can compare exactly and so the 30 s limit is
/// not blurred by rounding: a file one frame over 30 s is over.
public struct SoundLength: Hashable, Sendable, CustomStringConvertible {
    public enum Format: String, Hashable, Sendable { case wav, vorbis, opus }
    public var format: Format
    /// Sample frames (per channel).
    public var frames: UInt64
    /// Frames per second the count is in (48000 for Opus, whatever the input rate was).
    public var rate: UInt32

    public init(format: Format, frames: UInt64, rate: UInt32) {
        self.format = format; self.frames = frames; self.rate = rate
    }

    public var seconds: Double { Double(frames) / Double(rate) }

    /// Rounded up, so "every must be longer than the sound" never passes by rounding down.
    public var span: TimeSpan {
        let (q, r) = frames.quotientAndRemainder(dividingBy: UInt64(rate))
        let micro = q &* 1_000_000 &+ (r &* 1_000_000 + UInt64(rate) - 1) / UInt64(rate)
        return TimeSpan(microseconds: Int64(clamping: micro))
    }

    /// Whether it plays longer than `limit` whole seconds.
    public func exceeds(seconds limit: UInt64) -> Bool { frames > limit &* UInt64(rate) }

    /// `1.500 s`: milliseconds are enough for a person, and show that 30.001 s is over 30 s.
    public var description: String {
        let ms = span.microseconds / 1000 + (span.microseconds % 1000 == 0 ? 0 : 1)
        let whole = ms / 1000, frac = ms % 1000
        let f = String(frac)
        return "\(whole).\(String(repeating: "0", count: 3 - f.count))\(f) s"
    }
}

/// Random access to the bytes of a sound: a file read with pread, or an array in tests.
/// Measuring never reads a whole file, only the headers and the last Ogg page.
public protocol SoundBytes {
    var count: UInt64 { get }
    /// Up to `length` bytes at `offset` (fewer at the end).
    func read(at offset: UInt64, length: Int) throws(SoundFileError) -> [UInt8]
}

/// Bytes in memory: hand-made files in tests, or a file already read.
public struct SoundData: SoundBytes, Sendable {
    public var bytes: [UInt8]
    public init(_ bytes: [UInt8]) { self.bytes = bytes }
    public var count: UInt64 { UInt64(bytes.count) }
    public func read(at offset: UInt64, length: Int) throws(SoundFileError) -> [UInt8] {
        let n = UInt64(bytes.count)
        guard offset < n, length > 0 else { return [] }
        let end = min(n, offset + UInt64(length))
        return Array(bytes[Int(offset)..<Int(end)])
    }
}

/// An open file descriptor, closed when the value goes away.
final class SoundFileHandle: SoundBytes {
    let path: String
    private let fd: Int32
    let count: UInt64

    init(path: String) throws(SoundFileError) {
        self.path = path
        // Non-blocking: opening a FIFO with no writer would otherwise wait for one, and hang
        // `tocsin check`, the daemon's start or a reload. Reads of a regular file never block.
        let fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else {
            throw SoundFileError(.unreadable, "cannot read sound file '\(path)': \(String(cString: strerror(errno)))")
        }
        var st = stat()
        guard fstat(fd, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG else {
            close(fd)
            throw SoundFileError(.unreadable, "sound file '\(path)' is not a regular file")
        }
        self.fd = fd
        self.count = UInt64(st.st_size)
    }

    deinit { close(fd) }

    func read(at offset: UInt64, length: Int) throws(SoundFileError) -> [UInt8] {
        guard length > 0, offset < count else { return [] }
        var out = [UInt8](repeating: 0, count: length)
        var got = 0
        while got < length {
            let n = out.withUnsafeMutableBytes { buf -> Int in
                guard let base = buf.baseAddress else { return 0 }
                return pread(fd, base + got, length - got, off_t(offset) + off_t(got))
            }
            if n < 0 {
                if errno == EINTR { continue }
                throw SoundFileError(.unreadable, "cannot read sound file '\(path)': \(String(cString: strerror(errno)))")
            }
            if n == 0 { break }
            got += n
        }
        return Array(out[0..<got])
    }
}

/// Measures how long a sound plays, from its headers, without decoding it.
public enum SoundProbe: Sendable {
    /// The file at `path`; errors name it.
    public static func measure(path: String) throws(SoundFileError) -> SoundLength {
        let file = try SoundFileHandle(path: path)
        return try measure(file, name: "'\(path)'")
    }

    /// `name` is how messages call the sound (a quoted path).
    public static func measure(_ bytes: some SoundBytes, name: String = "the sound") throws(SoundFileError) -> SoundLength {
        let magic = try bytes.read(at: 0, length: 12)
        if magic.count >= 12, magic[0..<4].elementsEqual("RIFF".utf8), magic[8..<12].elementsEqual("WAVE".utf8) {
            return try WAVProbe.measure(bytes, name: name)
        }
        if magic.count >= 4, magic[0..<4].elementsEqual("OggS".utf8) {
            return try OggProbe.measure(bytes, name: name)
        }
        if magic.count >= 4, magic[0..<4].elementsEqual("RF64".utf8) {
            throw SoundFileError(.unsupported, "cannot determine the length of \(name): RF64 WAV files are not supported")
        }
        throw SoundFileError(.unknownFormat,
                             "cannot determine the length of \(name): not a WAV or Ogg Vorbis/Opus file")
    }
}

// MARK: - Little-endian helpers

extension Array where Element == UInt8 {
    func le16(_ at: Int) -> UInt16 { UInt16(self[at]) | UInt16(self[at + 1]) << 8 }
    func le32(_ at: Int) -> UInt32 {
        UInt32(self[at]) | UInt32(self[at + 1]) << 8 | UInt32(self[at + 2]) << 16 | UInt32(self[at + 3]) << 24
    }
    func le64(_ at: Int) -> UInt64 { UInt64(le32(at)) | UInt64(le32(at + 4)) << 32 }
}
