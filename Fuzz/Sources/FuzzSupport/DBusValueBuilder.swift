import DBus

/// Builds a well-typed `DBusValue` from fuzz bytes, shaped like what a client can send to `Schedule`.
///
/// A type is chosen first and the value generated from it, so arrays and dictionaries are
/// homogeneous as on the wire (libdbus never delivers anything else). Keys come mostly from the
/// field names the decoder knows, so inputs reach the field parsers instead of dying on "unknown
/// field"; strings come from per-field example values or raw bytes, and raw bytes go through
/// `DBusValue.string(validatingUTF8:)`, which is checked against the standard library here.
public struct DBusValueBuilder {
    /// A D-Bus type with containers expanded, as the generator walks it.
    indirect enum Kind {
        case basic(DBusType)
        case variant
        case array(Kind)
        case dictionary(key: DBusType, value: Kind)
        case structure([Kind])

        var type: DBusType {
            switch self {
            case .basic(let t): t
            case .variant: .variant
            case .array(let e): .array(e.type)
            case .dictionary(let k, let v): .dictionary(key: k, value: v.type)
            case .structure(let fs): .structure(fs.map(\.type))
            }
        }
    }

    public var cursor: ByteCursor
    let fieldNames: [String]
    let exampleStrings: [String]
    /// Containers nested deeper than this become basic values: depth is not what the decoder
    /// is being tested for (D-Bus itself caps it at 64), and deep recursion only slows the fuzzer.
    let maxDepth = 6

    public init(_ bytes: [UInt8], fieldNames: [String], exampleStrings: [String]) {
        cursor = ByteCursor(bytes)
        self.fieldNames = fieldNames
        self.exampleStrings = exampleStrings
    }

    static let basicTypes: [DBusType] = [
        .byte, .boolean, .int16, .uint16, .int32, .uint32, .int64, .uint64, .double,
        .string, .objectPath, .signature, .unixFD,
    ]

    /// The request: an `a{sv}` most of the time, any value otherwise (the gateway's method
    /// signature guarantees `a{sv}`, but the decoder's own guard should hold anyway).
    public mutating func spec() -> DBusValue {
        if cursor.below(16) == 0 {
            let kind = self.kind(depth: 0)
            return value(of: kind, depth: 0)
        }
        let count = cursor.below(14)
        var entries: [DBusValue.DictEntry] = []
        for _ in 0..<count {
            entries.append(DBusValue.DictEntry(.string(key()), .variant(variantContent(depth: 1))))
        }
        return .dictionary(key: .string, value: .variant, entries)
    }

    /// A value of any type the builder makes (nested up to `maxDepth`).
    public mutating func anyValue() -> DBusValue {
        value(of: kind(depth: 0), depth: 0)
    }

    /// Mostly a known field name, sometimes a near miss or raw bytes.
    mutating func key() -> String {
        let choice = cursor.byte()
        switch choice {
        case 0..<200 where !fieldNames.isEmpty: return fieldNames[Int(choice) % fieldNames.count]
        case 200..<230: return fieldNames.isEmpty ? "" : fieldNames[cursor.below(fieldNames.count)] + "x"
        default: return rawString()
        }
    }

    /// The value inside a field's variant: strings dominate, as every field but a few takes one.
    mutating func variantContent(depth: Int) -> DBusValue {
        switch cursor.below(8) {
        case 0, 1, 2: return .string(exampleString())
        case 3: return .string(rawString())
        default: return value(of: kind(depth: depth), depth: depth)
        }
    }

    mutating func exampleString() -> String {
        guard !exampleStrings.isEmpty else { return "" }
        let base = exampleStrings[cursor.below(exampleStrings.count)]
        // Occasionally splice raw bytes onto an example, to reach the parsers' error paths from valid prefixes.
        if cursor.below(4) == 0 { return base + rawString() }
        return base
    }

    /// Raw bytes as a string when they are one D-Bus accepts; refused bytes give "" after the
    /// refusal was checked to be right.
    mutating func rawString() -> String {
        let bytes = cursor.chunk(max: 48)
        return Self.checkedString(bytes) ?? ""
    }

    /// `DBusValue.string(validatingUTF8:)` must accept exactly the valid UTF-8 without NUL and keep
    /// the bytes unchanged; anything else would let a malformed string reach libdbus (which aborts).
    public static func checkedString(_ bytes: [UInt8]) -> String? {
        let swift = String(validating: bytes, as: UTF8.self)
        let carriable = swift != nil && !bytes.contains(0)
        do {
            let v = try DBusValue.string(validatingUTF8: bytes)
            guard carriable, case .string(let s) = v, Array(s.utf8) == bytes else {
                fuzzFailure("string(validatingUTF8:) accepted \(bytes) as \(v)")
            }
            return s
        } catch {
            if carriable { fuzzFailure("string(validatingUTF8:) refused valid UTF-8 \(bytes): \(error)") }
            return nil
        }
    }

    mutating func kind(depth: Int) -> Kind {
        let pick = cursor.below(depth >= maxDepth ? 13 : 18)
        switch pick {
        case 0..<13: return .basic(Self.basicTypes[pick])
        case 13: return .variant
        case 14, 15: return .array(kind(depth: depth + 1))
        case 16:
            let key = cursor.below(3) == 0 ? Self.basicTypes[cursor.below(Self.basicTypes.count)] : .string
            return .dictionary(key: key, value: cursor.bool() ? .variant : kind(depth: depth + 1))
        default:
            var fields: [Kind] = []
            for _ in 0...cursor.below(3) { fields.append(kind(depth: depth + 1)) }
            return .structure(fields)
        }
    }

    mutating func value(of kind: Kind, depth: Int) -> DBusValue {
        switch kind {
        case .basic(let t): return basic(t)
        case .variant:
            if depth >= maxDepth { return .variant(basic(.string)) }
            return .variant(variantContent(depth: depth + 1))
        case .array(let element):
            let n = cursor.below(depth >= maxDepth ? 2 : 6)
            var items: [DBusValue] = []
            for _ in 0..<n { items.append(value(of: element, depth: depth + 1)) }
            return .array(element.type, items)
        case .dictionary(let key, let valueKind):
            let n = cursor.below(depth >= maxDepth ? 2 : 6)
            var entries: [DBusValue.DictEntry] = []
            for _ in 0..<n {
                let k = key == .string ? DBusValue.string(self.key()) : basic(key)
                entries.append(DBusValue.DictEntry(k, value(of: valueKind, depth: depth + 1)))
            }
            return .dictionary(key: key, value: valueKind.type, entries)
        case .structure(let fields):
            return .structure(fields.map { value(of: $0, depth: depth + 1) })
        }
    }

    mutating func basic(_ t: DBusType) -> DBusValue {
        switch t {
        case .byte: return .byte(cursor.byte())
        case .boolean: return .boolean(cursor.bool())
        case .int16: return .int16(cursor.integer(Int16.self))
        case .uint16: return .uint16(cursor.integer(UInt16.self))
        case .int32: return .int32(cursor.integer(Int32.self))
        case .uint32: return .uint32(cursor.integer(UInt32.self))
        case .int64: return .int64(cursor.integer(Int64.self))
        case .uint64: return .uint64(cursor.integer(UInt64.self))
        case .double: return .double(Double(bitPattern: cursor.integer(UInt64.self)))
        case .objectPath: return .objectPath(ObjectPath(validating: "/" + rawString()) ?? "/")
        case .signature: return .signature(DBusSignature(validating: rawString()) ?? "s")
        // Never a descriptor the process owns: the decoder must refuse it without touching it.
        case .unixFD: return .unixFD(Int32(cursor.below(4)) - 1)
        default: return cursor.bool() ? .string(exampleString()) : .string(rawString())
        }
    }
}
