/// Deterministic reader of fuzz bytes: every structured choice a target makes comes from here,
/// so one input always rebuilds the same value and a crash reproduces from its file.
///
/// Running out of bytes is not an error: reads then return zero, which libFuzzer's minimizer
/// relies on to shrink an input while keeping its shape.
public struct ByteCursor {
    private let bytes: [UInt8]
    private var index = 0

    public init(_ bytes: [UInt8]) { self.bytes = bytes }

    public var isAtEnd: Bool { index >= bytes.count }
    public var remaining: Int { bytes.count - index }

    public mutating func byte() -> UInt8 {
        guard index < bytes.count else { return 0 }
        defer { index += 1 }
        return bytes[index]
    }

    public mutating func bool() -> Bool { byte() & 1 == 1 }

    /// A value in `0..<bound` (0 when `bound` is 0).
    public mutating func below(_ bound: Int) -> Int {
        guard bound > 0 else { return 0 }
        return Int(byte()) % bound
    }

    public mutating func integer<T: FixedWidthInteger>(_: T.Type) -> T {
        var v: T = 0
        for _ in 0..<MemoryLayout<T>.size { v = (v << 8) | T(truncatingIfNeeded: byte()) }
        return v
    }

    /// Up to `max` raw bytes, the count taken from the input.
    public mutating func chunk(max: Int) -> [UInt8] {
        let n = min(below(max + 1), remaining)
        defer { index += n }
        return Array(bytes[index..<(index + n)])
    }
}

/// The fuzz input as a Swift array; libFuzzer may pass a null pointer with size 0.
public func fuzzBytes(_ data: UnsafePointer<UInt8>?, _ size: Int) -> [UInt8] {
    guard let data, size > 0 else { return [] }
    return Array(UnsafeBufferPointer(start: data, count: size))
}

/// Stops the run with a message libFuzzer turns into a saved crash input: used for broken
/// invariants (a round-trip that does not hold, a search that runs too long), which are bugs
/// even when nothing traps.
public func fuzzFailure(_ message: String) -> Never {
    var text = "FUZZ INVARIANT BROKEN: " + message + "\n"
    text.withUTF8 { buf in _ = fwriteStderr(buf) }
    abortProcess()
}
