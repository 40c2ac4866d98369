/// One complete D-Bus type.
public indirect enum DBusType: Sendable, Hashable, CustomStringConvertible {
    case byte, boolean, int16, uint16, int32, uint32, int64, uint64, double
    case string, objectPath, signature, unixFD
    case array(DBusType)
    /// `a{KV}`: D-Bus only allows dict entries as array elements, so the array is implied.
    case dictionary(key: DBusType, value: DBusType)
    case structure([DBusType])
    case variant

    public var isBasic: Bool {
        switch self {
        case .array, .dictionary, .structure, .variant: return false
        default: return true
        }
    }

    /// The signature code of a basic type.
    var basicCode: Character? {
        switch self {
        case .byte: "y"
        case .boolean: "b"
        case .int16: "n"
        case .uint16: "q"
        case .int32: "i"
        case .uint32: "u"
        case .int64: "x"
        case .uint64: "t"
        case .double: "d"
        case .string: "s"
        case .objectPath: "o"
        case .signature: "g"
        case .unixFD: "h"
        default: nil
        }
    }

    public var description: String {
        switch self {
        case .array(let element): return "a" + element.description
        case .dictionary(let key, let value): return "a{" + key.description + value.description + "}"
        case .structure(let fields): return "(" + fields.map(\.description).joined() + ")"
        case .variant: return "v"
        default: return basicCode.map { String($0) } ?? ""
        }
    }

    /// Whether a type built in code is one the parser would accept, checked on the structure
    /// itself (the parser's rules: at most 255 bytes, arrays and structs each nested at most 32
    /// deep, basic dictionary keys, no empty struct), without printing and re-parsing it.
    var isWithinLimits: Bool {
        var length = 0
        return fits(arrayDepth: 0, structDepth: 0, length: &length) && length <= 255
    }

    private func fits(arrayDepth: Int, structDepth: Int, length: inout Int) -> Bool {
        guard length <= 255 else { return false }
        switch self {
        case .array(let element):
            length += 1
            return arrayDepth < 32 && element.fits(arrayDepth: arrayDepth + 1, structDepth: structDepth, length: &length)
        case .dictionary(let key, let value):
            length += 3
            return arrayDepth < 32 && key.isBasic
                && key.fits(arrayDepth: arrayDepth + 1, structDepth: structDepth + 1, length: &length)
                && value.fits(arrayDepth: arrayDepth + 1, structDepth: structDepth + 1, length: &length)
        case .structure(let fields):
            length += 2
            guard structDepth < 32, !fields.isEmpty else { return false }
            for f in fields where !f.fits(arrayDepth: arrayDepth, structDepth: structDepth + 1, length: &length) { return false }
            return true
        default:
            length += 1
            return true
        }
    }

    /// The signature's length in bytes, without building it.
    var signatureLength: Int {
        switch self {
        case .array(let element): return 1 + element.signatureLength
        case .dictionary(let key, let value): return 3 + key.signatureLength + value.signatureLength
        case .structure(let fields): return 2 + fields.reduce(0) { $0 + $1.signatureLength }
        default: return 1
        }
    }

    /// Parses a single complete type.
    public init(_ signature: String) throws(DBusError) {
        let parsed: [DBusType]
        if let known = DBusSignature.common(signature) { parsed = known.types } else { parsed = try DBusSignature.parse(signature) }
        guard parsed.count == 1, let only = parsed.first else {
            throw DBusError(.invalidSignature, "'\(signature)' is not a single complete type")
        }
        self = only
    }
}

/// A parsed, validated D-Bus signature: a sequence of complete types.
///
/// Parsing here (rather than passing strings through) lets marshalling check values against
/// the declared types before libdbus sees them, and lets handlers compare signatures cheaply.
public struct DBusSignature: Sendable, Hashable, CustomStringConvertible, ExpressibleByStringLiteral {
    public let types: [DBusType]

    public init(_ types: [DBusType]) { self.types = types }

    public init(_ string: String) throws(DBusError) {
        if let known = Self.common(string) { self = known; return }
        types = try Self.parse(string)
    }

    static func parse(_ string: String) throws(DBusError) -> [DBusType] {
        let bytes = Array(string.utf8)
        if bytes.count > 255 {
            throw DBusError(.invalidSignature, "signature longer than 255 bytes")
        }
        var parser = SignatureParser(bytes: bytes)
        var types: [DBusType] = []
        while parser.index < bytes.count {
            types.append(try parser.parseComplete(arrayDepth: 0, structDepth: 0))
        }
        return types
    }

    public init?(validating string: String) { try? self.init(string) }

    public init(stringLiteral value: String) {
        do { try self.init(value) } catch { preconditionFailure("invalid signature literal \(value)") }
    }

    public static let empty = DBusSignature([DBusType]())

    /// The signatures a `Schedule` call meets, made once: parsing anew cost about 1,500
    /// instructions for `a{sv}`, twice per call (its message's signature and its argument's type),
    /// for the same answer each time. A miss costs a length check and at most three comparisons
    /// of short strings (about 150 instructions) before the parse it would have done anyway.
    private static let oneByte: [DBusSignature?] = (0..<128).map { (code: UInt8) in
        guard code > 0, let types = try? parse(String(Unicode.Scalar(code))), types.count == 1 else { return nil }
        return DBusSignature(types)
    }
    static let commonTable: [(String, DBusSignature)] = ["a{sv}", "as", "aa{sv}"].map { text in
        guard let types = try? parse(text) else { preconditionFailure("invalid signature in the table of common ones: \(text)") }
        return (text, DBusSignature(types))
    }

    /// The type a one-letter signature names (a variant's usual signature), without a `String`.
    static func oneLetterType(_ code: UInt8) -> DBusType? {
        code < 128 ? oneByte[Int(code)]?.types[0] : nil
    }

    static func common(_ string: String) -> DBusSignature? {
        let utf8 = string.utf8
        switch utf8.count {
        case 0: return .empty
        case 1: return utf8.first.flatMap { $0 < 128 ? oneByte[Int($0)] : nil }
        case 2...6: return commonTable.first { $0.0 == string }?.1
        default: return nil
        }
    }

    public var description: String { types.map(\.description).joined() }
    public var isEmpty: Bool { types.isEmpty }
}

private struct SignatureParser {
    let bytes: [UInt8]
    var index = 0

    private func fail(_ why: String) -> DBusError {
        DBusError(.invalidSignature, "invalid signature '\(String(decoding: bytes, as: UTF8.self))': \(why)")
    }

    mutating func parseComplete(arrayDepth: Int, structDepth: Int) throws(DBusError) -> DBusType {
        guard index < bytes.count else { throw fail("unexpected end") }
        let c = bytes[index]
        index += 1
        switch c {
        case UInt8(ascii: "y"): return .byte
        case UInt8(ascii: "b"): return .boolean
        case UInt8(ascii: "n"): return .int16
        case UInt8(ascii: "q"): return .uint16
        case UInt8(ascii: "i"): return .int32
        case UInt8(ascii: "u"): return .uint32
        case UInt8(ascii: "x"): return .int64
        case UInt8(ascii: "t"): return .uint64
        case UInt8(ascii: "d"): return .double
        case UInt8(ascii: "s"): return .string
        case UInt8(ascii: "o"): return .objectPath
        case UInt8(ascii: "g"): return .signature
        case UInt8(ascii: "h"): return .unixFD
        case UInt8(ascii: "v"): return .variant
        case UInt8(ascii: "a"):
            guard arrayDepth < 32 else { throw fail("arrays nested deeper than 32") }
            if index < bytes.count, bytes[index] == UInt8(ascii: "{") {
                index += 1
                let key = try parseComplete(arrayDepth: arrayDepth + 1, structDepth: structDepth + 1)
                guard key.isBasic else { throw fail("dictionary key must be a basic type") }
                let value = try parseComplete(arrayDepth: arrayDepth + 1, structDepth: structDepth + 1)
                guard index < bytes.count, bytes[index] == UInt8(ascii: "}") else {
                    throw fail("dictionary entry must have exactly two types")
                }
                index += 1
                return .dictionary(key: key, value: value)
            }
            return .array(try parseComplete(arrayDepth: arrayDepth + 1, structDepth: structDepth))
        case UInt8(ascii: "("):
            guard structDepth < 32 else { throw fail("structs nested deeper than 32") }
            var fields: [DBusType] = []
            while true {
                guard index < bytes.count else { throw fail("unterminated struct") }
                if bytes[index] == UInt8(ascii: ")") {
                    index += 1
                    break
                }
                fields.append(try parseComplete(arrayDepth: arrayDepth, structDepth: structDepth + 1))
            }
            guard !fields.isEmpty else { throw fail("empty struct") }
            return .structure(fields)
        default:
            throw fail("unexpected character at offset \(index - 1)")
        }
    }
}
