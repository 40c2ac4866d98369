import Glibc
import TocsinConfig

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
    /// `--key` of `--key=VALUE` with the bad byte in VALUE.
    var option: String?
    /// The long option just before the argument (`--key VALUE`): named as a hint only, since
    /// whether that option takes a value is the parser's to say (`--json VALUE` is a flag and a
    /// positional argument).
    var after: String?
    /// 1-based, in the bytes of the value (after `=` in `--option=value`).
    var byteOffset: Int
    var byte: UInt8

    var message: String {
        let hex = String(byte, radix: 16, uppercase: true)
        let at = "byte 0x\(hex.count < 2 ? "0" + hex : hex) at byte \(byteOffset) of it"
        if let option { return "error: the value of \(option) in argument \(position) is not valid UTF-8 (\(at))" }
        return "error: argument \(position)\(after.map { ", after \($0)," } ?? "") is not valid UTF-8 (\(at))"
    }

    /// The first invalid argument of `arguments` (the program's name excluded), or nil.
    static func first(in arguments: [[UInt8]]) -> InvalidArgumentEncoding? {
        var optionsEnded = false
        for (i, bytes) in arguments.enumerated() {
            defer { if bytes == Array("--".utf8) { optionsEnded = true } }
            guard let offset = invalidOffset(bytes) else { continue }
            if !optionsEnded, let name = longOptionName(bytes), let equals = bytes.firstIndex(of: UInt8(ascii: "=")), equals < offset {
                return InvalidArgumentEncoding(position: i + 1, option: name, byteOffset: offset - equals, byte: bytes[offset])
            }
            let previous = i > 0 && !optionsEnded ? longOptionName(arguments[i - 1]) : nil
            let after = previous.flatMap { arguments[i - 1].contains(UInt8(ascii: "=")) ? nil : $0 }
            return InvalidArgumentEncoding(position: i + 1, after: after, byteOffset: offset + 1, byte: bytes[offset])
        }
        return nil
    }

    /// `--name` of an argument shaped `--name` or `--name=...` (lowercase letters and dashes, as
    /// every option of `tocsin` is), else nil: so what is echoed is plain ASCII.
    static func longOptionName(_ bytes: [UInt8]) -> String? {
        guard bytes.count > 2, bytes[0] == UInt8(ascii: "-"), bytes[1] == UInt8(ascii: "-") else { return nil }
        let name = bytes[2...].prefix { $0 != UInt8(ascii: "=") }
        guard let first = name.first, first >= UInt8(ascii: "a"), first <= UInt8(ascii: "z"),
              name.allSatisfy({ ($0 >= UInt8(ascii: "a") && $0 <= UInt8(ascii: "z")) || $0 == UInt8(ascii: "-") }) else { return nil }
        return "--" + String(decoding: name, as: UTF8.self)
    }

    /// The 0-based offset of the first byte that does not start or continue a valid scalar.
    static func invalidOffset(_ bytes: [UInt8]) -> Int? {
        bytes.withUnsafeBufferPointer { invalidUTF8Offsets($0, limit: 1).first }
    }

    /// The process's arguments as the kernel passed them (argv may even be empty).
    static func processArguments() -> [[UInt8]] {
        guard CommandLine.argc > 1 else { return [] }
        return (1..<Int(CommandLine.argc)).map { i in
            guard let p = CommandLine.unsafeArgv[i] else { return [] }
            return Array(UnsafeBufferPointer(start: UnsafeRawPointer(p).assumingMemoryBound(to: UInt8.self), count: strlen(p)))
        }
    }
}
