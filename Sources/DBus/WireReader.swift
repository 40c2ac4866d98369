import CDBus
import Glibc

/// Decodes a received message's body from its wire bytes instead of through libdbus's iterator.
///
/// Why: each `dbus_message_iter_next` costs libdbus about 400 instructions, and reading a
/// `Schedule` call's `a{sv}` through the iterator took about 16,000, a tenth of the daemon's
/// whole cost of the call. libdbus validated the message when it read it from the socket (it
/// checks all data it receives, body included), so this walks bytes already known to be
/// well-formed; it still checks every bound, and answers nil on anything it does not expect, so
/// that the caller falls back to the iterator: a big-endian message (no sender on this
/// architecture writes one), a Unix file descriptor (the iterator duplicates it), a length that
/// does not add up.
enum WireReader {
    static func arguments(of message: OpaquePointer, signature: DBusSignature) -> [DBusValue]? {
        if signature.types.isEmpty { return [] }
        // `dbus_message_marshal` locks an unlocked message for the copy and unlocks it again,
        // writing to it each time; locked once here, the message is read-only from now on, as
        // `DBusMessage` promises (a message is complete before its body is read).
        dbus_message_lock(message)
        var data: UnsafeMutablePointer<CChar>?
        var length: Int32 = 0
        guard dbus_message_marshal(message, &data, &length) != 0, let data else { return nil }
        defer { dbus_free(data) }
        let bytes = UnsafeRawBufferPointer(start: data, count: Int(length))
        // The fixed header: byte order, type, flags, version, body length, serial, then the
        // header fields' array length; the body starts at the next multiple of 8.
        guard bytes.count >= 16, bytes[0] == UInt8(ascii: "l") else { return nil }
        let bodyLength = Int(bytes.loadUnaligned(fromByteOffset: 4, as: UInt32.self).littleEndian)
        let fieldsLength = Int(bytes.loadUnaligned(fromByteOffset: 12, as: UInt32.self).littleEndian)
        let bodyStart = (16 + fieldsLength + 7) & ~7
        guard bodyStart + bodyLength == bytes.count else { return nil }
        var cursor = Cursor(body: UnsafeRawBufferPointer(rebasing: bytes[bodyStart...]))
        var values: [DBusValue] = []
        values.reserveCapacity(signature.types.count)
        for t in signature.types {
            guard let v = cursor.value(t) else { return nil }
            values.append(v)
        }
        return cursor.offset == cursor.body.count ? values : nil
    }

    /// A position in a little-endian body. Alignment is relative to the body's start, which
    /// is aligned to 8 in the message, so it is the protocol's alignment.
    struct Cursor {
        let body: UnsafeRawBufferPointer
        var offset = 0

        private mutating func align(_ n: Int) -> Bool {
            offset = (offset + n - 1) & ~(n - 1)
            return offset <= body.count
        }

        private mutating func fixed<T: FixedWidthInteger>(_: T.Type) -> T? {
            guard align(MemoryLayout<T>.size), offset + MemoryLayout<T>.size <= body.count else { return nil }
            defer { offset += MemoryLayout<T>.size }
            return T(littleEndian: body.loadUnaligned(fromByteOffset: offset, as: T.self))
        }

        /// A string, object path or signature's text: `count` bytes, then a NUL.
        private mutating func text(count: Int) -> String? {
            guard count >= 0, offset + count < body.count, body[offset + count] == 0 else { return nil }
            defer { offset += count + 1 }
            return String(decoding: UnsafeRawBufferPointer(rebasing: body[offset..<offset + count]), as: UTF8.self)
        }

        private mutating func string() -> String? {
            guard let n = fixed(UInt32.self) else { return nil }
            return text(count: Int(n))
        }

        private mutating func signatureText() -> String? {
            guard let n = fixed(UInt8.self) else { return nil }
            return text(count: Int(n))
        }

        /// A variant's signature: one letter in the common case, looked up without a `String`.
        private mutating func variantType() -> DBusType? {
            if offset + 2 < body.count, body[offset] == 1, body[offset + 2] == 0,
               let t = DBusSignature.oneLetterType(body[offset + 1]) {
                offset += 3
                return t
            }
            guard let s = signatureText() else { return nil }
            return try? DBusType(s)
        }

        mutating func value(_ t: DBusType) -> DBusValue? {
            switch t {
            case .byte: return fixed(UInt8.self).map { .byte($0) }
            case .boolean: return fixed(UInt32.self).map { .boolean($0 != 0) }
            case .int16: return fixed(Int16.self).map { .int16($0) }
            case .uint16: return fixed(UInt16.self).map { .uint16($0) }
            case .int32: return fixed(Int32.self).map { .int32($0) }
            case .uint32: return fixed(UInt32.self).map { .uint32($0) }
            case .int64: return fixed(Int64.self).map { .int64($0) }
            case .uint64: return fixed(UInt64.self).map { .uint64($0) }
            case .double: return fixed(UInt64.self).map { .double(Double(bitPattern: $0)) }
            case .unixFD: return nil
            case .string: return string().map { .string($0) }
            case .objectPath: return string().map { .objectPath(ObjectPath(unchecked: $0)) }
            case .signature:
                guard let s = signatureText(), let g = try? DBusSignature(s) else { return nil }
                return .signature(g)
            case .variant:
                guard let inner = variantType(), let v = value(inner) else { return nil }
                return .variant(v)
            case .structure(let fields):
                guard align(8) else { return nil }
                var values: [DBusValue] = []
                values.reserveCapacity(fields.count)
                for f in fields {
                    guard let v = value(f) else { return nil }
                    values.append(v)
                }
                return .structure(values)
            case .array(let element):
                guard let n = fixed(UInt32.self), align(WireAlignment.of(element)) else { return nil }
                let end = offset + Int(n)
                guard end <= body.count else { return nil }
                var values: [DBusValue] = []
                while offset < end {
                    guard let v = value(element) else { return nil }
                    values.append(v)
                }
                return offset == end ? .array(element, values) : nil
            case .dictionary(let key, let valueType):
                guard let n = fixed(UInt32.self), align(8) else { return nil }
                let end = offset + Int(n)
                guard end <= body.count else { return nil }
                var entries: [DBusValue.DictEntry] = []
                // Room for an `a{sv}`'s entries (a string key and a variant take 16 bytes or more), at
                // most 256 ahead of reading them.
                entries.reserveCapacity(min(Int(n) / 16 + 1, 256))
                while offset < end {
                    guard align(8), let k = value(key), let v = value(valueType) else { return nil }
                    entries.append(.init(k, v))
                }
                return offset == end ? .dictionary(key: key, value: valueType, entries) : nil
            }
        }
    }
}

/// The protocol's alignment of each type on the wire (the D-Bus specification, "Marshaling").
enum WireAlignment {
    static func of(_ t: DBusType) -> Int {
        switch t {
        case .byte, .signature, .variant: 1
        case .int16, .uint16: 2
        case .boolean, .int32, .uint32, .unixFD, .string, .objectPath, .array, .dictionary: 4
        case .int64, .uint64, .double, .structure: 8
        }
    }
}
