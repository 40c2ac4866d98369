import CDBus
import Glibc

/// A D-Bus value of any type, as sent or received.
///
/// Containers carry their element types so an empty array still has a signature, and so
/// marshalling can check every element before libdbus is asked to append anything.
///
/// Only `variant` is boxed: with the whole enum `indirect`, every value, a string or an integer
/// too, was a heap allocation of its own, a dozen per `Schedule` call.
public enum DBusValue: Sendable, Hashable {
    case byte(UInt8)
    case boolean(Bool)
    case int16(Int16)
    case uint16(UInt16)
    case int32(Int32)
    case uint32(UInt32)
    case int64(Int64)
    case uint64(UInt64)
    case double(Double)
    case string(String)
    case objectPath(ObjectPath)
    case signature(DBusSignature)
    /// A file descriptor. Sending duplicates it (the caller keeps its own); a received one is
    /// a fresh descriptor owned by the receiver, who must close it.
    case unixFD(Int32)
    case array(DBusType, [DBusValue])
    case dictionary(key: DBusType, value: DBusType, [DictEntry])
    case structure([DBusValue])
    indirect case variant(DBusValue)

    public struct DictEntry: Sendable, Hashable {
        public var key: DBusValue
        public var value: DBusValue
        public init(_ key: DBusValue, _ value: DBusValue) {
            self.key = key
            self.value = value
        }
    }

    /// The D-Bus type of this value.
    public var type: DBusType {
        switch self {
        case .byte: .byte
        case .boolean: .boolean
        case .int16: .int16
        case .uint16: .uint16
        case .int32: .int32
        case .uint32: .uint32
        case .int64: .int64
        case .uint64: .uint64
        case .double: .double
        case .string: .string
        case .objectPath: .objectPath
        case .signature: .signature
        case .unixFD: .unixFD
        case .array(let element, _): .array(element)
        case .dictionary(let key, let value, _): .dictionary(key: key, value: value)
        case .structure(let fields): .structure(fields.map(\.type))
        case .variant: .variant
        }
    }

    /// Builds a string value from raw bytes, refusing what D-Bus cannot carry.
    ///
    /// Swift `String`s are always valid UTF-8, so this is the entry point for bytes coming from
    /// outside (files, sockets) that must not be silently repaired.
    public static func string(validatingUTF8 bytes: some Sequence<UInt8>) throws(DBusError) -> DBusValue {
        let array = Array(bytes)
        if array.contains(0) { throw DBusError(.invalidArgs, "string contains a NUL byte") }
        let ok = (array + [0]).withUnsafeBufferPointer { buf in
            buf.withMemoryRebound(to: CChar.self) { dbus_validate_utf8($0.baseAddress, nil) != 0 }
        }
        guard ok else { throw DBusError(.invalidArgs, "string is not valid UTF-8") }
        return .string(String(decoding: array, as: UTF8.self))
    }

    /// An `a{sv}` dictionary, the usual shape for options and property maps.
    public static func vardict(_ entries: [(String, DBusValue)]) -> DBusValue {
        .dictionary(key: .string, value: .variant, entries.map { DictEntry(.string($0.0), .variant($0.1)) })
    }

    /// An array whose element type is taken from its first element; empty needs a type.
    public static func array(of element: DBusType, _ values: [DBusValue]) -> DBusValue { .array(element, values) }

    /// Checks the whole tree before marshalling: element types, strings, descriptors, and
    /// that every container signature is one libdbus accepts (it aborts on one it does not).
    public func validate() throws(DBusError) {
        try validateSignature()
        try validate(depth: 0)
    }

    /// The type signature, re-parsed: catches nesting and length limits of types built in code.
    private func validateSignature() throws(DBusError) {
        switch self {
        case .array, .dictionary, .structure: break
        default: return
        }
        let t = type
        guard t.isWithinLimits else {
            throw DBusError(.invalidSignature, "value of type '\(t.description.prefix(300))' exceeds D-Bus type limits")
        }
    }

    /// Whether this value has type `t`, compared without building its type (which would box
    /// every container level on the heap): a thousand Fired dictionaries are checked per burst.
    func hasType(_ t: DBusType) -> Bool {
        switch (self, t) {
        case (.byte, .byte), (.boolean, .boolean), (.int16, .int16), (.uint16, .uint16), (.int32, .int32),
             (.uint32, .uint32), (.int64, .int64), (.uint64, .uint64), (.double, .double), (.string, .string),
             (.objectPath, .objectPath), (.signature, .signature), (.unixFD, .unixFD), (.variant, .variant):
            return true
        case (.array(let element, _), .array(let wanted)): return element == wanted
        case (.dictionary(let k, let v, _), .dictionary(let wk, let wv)): return k == wk && v == wv
        case (.structure(let fields), .structure(let wanted)):
            guard fields.count == wanted.count else { return false }
            for (f, w) in zip(fields, wanted) where !f.hasType(w) { return false }
            return true
        default: return false
        }
    }

    private func validate(depth: Int) throws(DBusError) {
        guard depth <= 64 else { throw DBusError(.limitsExceeded, "value nested deeper than 64 containers") }
        switch self {
        case .string(let s): try validateStringForWire(s)
        case .signature(let g):
            guard (try? DBusSignature(g.description)) != nil else {
                throw DBusError(.invalidSignature, "signature value '\(g.description.prefix(300))' is not valid")
            }
        case .unixFD(let fd):
            guard fd >= 0, fcntl(fd, F_GETFD) != -1 else {
                throw DBusError(.invalidArgs, "\(fd) is not an open file descriptor")
            }
        case .array(let element, let values):
            for v in values {
                guard v.hasType(element) else {
                    throw DBusError(.invalidArgs, "array of '\(element)' holds a '\(v.type)'")
                }
                try v.validate(depth: depth + 1)
            }
        case .dictionary(let key, let value, let entries):
            guard key.isBasic else { throw DBusError(.invalidArgs, "dictionary key type '\(key)' is not basic") }
            for e in entries {
                guard e.key.hasType(key), e.value.hasType(value) else {
                    throw DBusError(.invalidArgs, "dictionary a{\(key)\(value)} holds an entry {\(e.key.type)\(e.value.type)}")
                }
                try e.key.validate(depth: depth + 1)
                try e.value.validate(depth: depth + 1)
            }
        case .structure(let fields):
            guard !fields.isEmpty else { throw DBusError(.invalidArgs, "empty struct") }
            for f in fields { try f.validate(depth: depth + 1) }
        case .variant(let inner):
            // A variant starts a new type signature, which must be valid on its own.
            try inner.validateSignature()
            try inner.validate(depth: depth + 1)
        default: break
        }
    }
}

// MARK: - Typed access, for method handlers

extension DBusValue {
    private func mismatch(_ wanted: String) -> DBusError {
        DBusError(.invalidArgs, "expected \(wanted), got '\(type)'")
    }
    public func asString() throws(DBusError) -> String {
        if case .string(let v) = self { return v }
        throw mismatch("a string")
    }
    public func asObjectPath() throws(DBusError) -> ObjectPath {
        if case .objectPath(let v) = self { return v }
        throw mismatch("an object path")
    }
    public func asBool() throws(DBusError) -> Bool {
        if case .boolean(let v) = self { return v }
        throw mismatch("a boolean")
    }
    public func asUInt8() throws(DBusError) -> UInt8 {
        if case .byte(let v) = self { return v }
        throw mismatch("a byte")
    }
    public func asInt32() throws(DBusError) -> Int32 {
        if case .int32(let v) = self { return v }
        throw mismatch("an int32")
    }
    public func asUInt32() throws(DBusError) -> UInt32 {
        if case .uint32(let v) = self { return v }
        throw mismatch("a uint32")
    }
    public func asInt64() throws(DBusError) -> Int64 {
        if case .int64(let v) = self { return v }
        throw mismatch("an int64")
    }
    public func asUInt64() throws(DBusError) -> UInt64 {
        if case .uint64(let v) = self { return v }
        throw mismatch("a uint64")
    }
    public func asDouble() throws(DBusError) -> Double {
        if case .double(let v) = self { return v }
        throw mismatch("a double")
    }
    /// The contents of a variant; a non-variant is returned as is.
    public var unwrappedVariant: DBusValue {
        if case .variant(let inner) = self { return inner }
        return self
    }
    public func asArray() throws(DBusError) -> [DBusValue] {
        if case .array(_, let v) = self { return v }
        throw mismatch("an array")
    }
    public func asStruct() throws(DBusError) -> [DBusValue] {
        if case .structure(let v) = self { return v }
        throw mismatch("a struct")
    }
    /// An `a{s*}` dictionary as a Swift dictionary (later duplicate keys win).
    public func asStringDictionary() throws(DBusError) -> [String: DBusValue] {
        guard case .dictionary(.string, _, let entries) = self else { throw mismatch("a dictionary with string keys") }
        var out: [String: DBusValue] = [:]
        for e in entries {
            if case .string(let k) = e.key { out[k] = e.value }
        }
        return out
    }
}

extension DBusValue: ExpressibleByStringLiteral, ExpressibleByBooleanLiteral {
    public init(stringLiteral value: String) { self = .string(value) }
    public init(booleanLiteral value: Bool) { self = .boolean(value) }
}
