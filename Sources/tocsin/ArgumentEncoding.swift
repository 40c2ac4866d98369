import Glibc

/// The command line's bytes checked as UTF-8 before anything parses them.
///
/// `CommandLine.arguments` repairs invalid UTF-8 with U+FFFD, so `--key $'\xff'` and
/// `--key $'\xfe'` named the same notification, a title was stored with replacement characters,
/// and errors quoted '�' instead of saying what was wrong. Every key, text and expression Tocsin
/// takes is UTF-8 (D-Bus carries nothing else), so such an argument is refused, naming it and
/// the byte, as `tocsin check` names a file's.
struct InvalidArgumentEncoding: Error, Equatable {
    /// 1 for the first argument after the program's name.
    var position: Int
    /// The option the argument is the value of (`--key`), when the one before it is an option.
    var option: String?
    /// 1-based, in the bytes of the value (after `=` in `--option=value`).
    var byteOffset: Int
    var byte: UInt8

    var message: String {
        let what = option.map { "the value of \($0)" } ?? "argument \(position)"
        let hex = String(byte, radix: 16, uppercase: true)
        return "error: \(what) is not valid UTF-8 (byte 0x\(hex.count < 2 ? "0" + hex : hex) at byte \(byteOffset) of it)"
    }

    /// The first invalid argument of `arguments` (the program's name excluded), or nil.
    static func first(in arguments: [[UInt8]]) -> InvalidArgumentEncoding? {
        for (i, bytes) in arguments.enumerated() {
            guard let offset = invalidOffset(bytes) else { continue }
            var option: String?
            var valueStart = 0
            if bytes.first != UInt8(ascii: "-") {
                if i > 0, let previous = arguments[i - 1].first, previous == UInt8(ascii: "-"), invalidOffset(arguments[i - 1]) == nil {
                    option = String(decoding: arguments[i - 1], as: UTF8.self)
                }
            } else if let equals = bytes.firstIndex(of: UInt8(ascii: "=")), equals < offset {
                // `--key=VALUE`: named as the option, counted in the value.
                option = String(decoding: bytes[..<equals], as: UTF8.self)
                valueStart = equals + 1
            }
            return InvalidArgumentEncoding(position: i + 1, option: option, byteOffset: offset - valueStart + 1, byte: bytes[offset])
        }
        return nil
    }

    /// The 0-based offset of the first byte that does not start or continue a valid scalar.
    static func invalidOffset(_ bytes: [UInt8]) -> Int? {
        var parser = Unicode.UTF8.ForwardParser()
        var input = bytes.makeIterator()
        var offset = 0
        while true {
            switch parser.parseScalar(from: &input) {
            case .valid(let scalar): offset += scalar.count
            case .emptyInput: return nil
            case .error: return offset
            }
        }
    }

    /// The process's arguments as the kernel passed them.
    static func processArguments() -> [[UInt8]] {
        (1..<Int(CommandLine.argc)).map { i in
            guard let p = CommandLine.unsafeArgv[i] else { return [] }
            return Array(UnsafeBufferPointer(start: UnsafeRawPointer(p).assumingMemoryBound(to: UInt8.self), count: strlen(p)))
        }
    }
}
