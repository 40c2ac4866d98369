import CDBus
/// What a message will weigh on the wire, computed from its values before libdbus marshals
/// anything, so a reply a bus would refuse is never built or sent.
///
/// dbus-daemon disconnects a client that sends a message above its `max_message_size` (a stock
/// daemon's built-in default is 32 MiB, the session config raises it; the protocol caps every
/// message at 128 MiB and every array at 64 MiB). libdbus does not check what it marshals, so a
/// service whose reply grows with its data would lose the bus the day the data outgrew it.
public enum DBusWireSize: Sendable {
    /// The protocol's limit on a whole message (`DBUS_MAXIMUM_MESSAGE_LENGTH`).
    public static let messageMaximum = 128 << 20
    /// The protocol's limit on the data of one array (`DBUS_MAXIMUM_ARRAY_LENGTH`).
    public static let arrayMaximum = 64 << 20
    /// An upper bound on a header: the fixed part and at most seven fields (path, interface,
    /// member, error name, destination, sender, signature) of up to 255 bytes, each padded.
    public static let headerAllowance = 2048

    /// The bytes of a body holding `values`, and the data of its largest array.
    public static func body(_ values: [DBusValue]) -> (bytes: Int, largestArray: Int) {
        var s = Sizer()
        for v in values { s.add(v) }
        return (s.offset, s.largestArray)
    }

    /// The bytes `value` adds to a body that already holds `offset` bytes (alignment included):
    /// what a page filler needs to stop before the limit.
    public static func size(of value: DBusValue, at offset: Int) -> Int {
        var s = Sizer()
        s.offset = offset
        s.add(value)
        return s.offset - offset
    }

    /// Nil when a message with this body fits `limit` (and the protocol); else why not.
    public static func problem(_ values: [DBusValue], limit: Int) -> String? {
        let (bytes, largestArray) = body(values)
        let total = bytes + headerAllowance
        if total > min(limit, messageMaximum) {
            return "the message would be \(total) bytes, more than the \(min(limit, messageMaximum)) bytes a message on this bus may have"
        }
        if largestArray > arrayMaximum {
            return "an array of the message would hold \(largestArray) bytes, more than the \(arrayMaximum) D-Bus allows"
        }
        return nil
    }

    private struct Sizer {
        var offset = 0
        var largestArray = 0

        mutating func align(_ n: Int) { offset = (offset + n - 1) / n * n }

        mutating func add(_ v: DBusValue) {
            switch v {
            case .byte: offset += 1
            case .int16, .uint16: align(2); offset += 2
            case .boolean, .int32, .uint32, .unixFD: align(4); offset += 4
            case .int64, .uint64, .double: align(8); offset += 8
            case .string(let s): align(4); offset += 4 + s.utf8.count + 1
            case .objectPath(let p): align(4); offset += 4 + p.rawValue.utf8.count + 1
            case .signature(let g): offset += 1 + g.description.utf8.count + 1
            case .array(let element, let items):
                align(4); offset += 4
                align(WireAlignment.of(element))
                let start = offset
                for i in items { add(i) }
                largestArray = max(largestArray, offset - start)
            case .dictionary(_, _, let entries):
                align(4); offset += 4
                align(8)
                let start = offset
                for e in entries {
                    align(8)
                    add(e.key)
                    add(e.value)
                }
                largestArray = max(largestArray, offset - start)
            case .structure(let fields):
                align(8)
                for f in fields { add(f) }
            case .variant(let inner):
                offset += 1 + Self.signatureLength(inner) + 1
                add(inner)
            }
        }

        /// The length of a value's type signature, without building the type for basic ones
        /// (a `List` page holds a variant per field of every notification).
        static func signatureLength(_ v: DBusValue) -> Int {
            switch v {
            case .array, .dictionary, .structure: v.type.description.utf8.count
            default: 1
            }
        }
    }
}

extension DBusError {
    /// This error with its text cut (on a character boundary) so the error reply fits `limit`:
    /// a reload's diagnostics for a huge config must not cost the daemon its bus connection.
    func fitting(_ limit: Int) -> DBusError {
        let room = max(256, min(limit, DBusWireSize.messageMaximum) - DBusWireSize.headerAllowance - 256)
        guard message.utf8.count > room else { return self }
        var cut = ""
        var used = 0
        for ch in message {
            let n = ch.utf8.count
            if used + n > room - 64 { break }
            cut.append(ch)
            used += n
        }
        return DBusError(name: name, message: cut + " ... (\(message.utf8.count - used) more bytes cut)")
    }
}

extension DBusMessage {
    /// The body length libdbus wrote into the header, from the marshalled bytes: what
    /// `DBusWireSize` must predict (tests compare the two).
    var marshalledBodyLength: Int? {
        var bytes: UnsafeMutablePointer<CChar>?
        var length: Int32 = 0
        guard dbus_message_marshal(raw, &bytes, &length) != 0, let bytes, length >= 8 else { return nil }
        defer { dbus_free(bytes) }
        let b = UnsafeRawPointer(bytes).assumingMemoryBound(to: UInt8.self)
        let fields = (4..<8).map { UInt32(b[$0]) }
        return Int(b[0] == UInt8(ascii: "l")
            ? fields[0] | fields[1] << 8 | fields[2] << 16 | fields[3] << 24
            : fields[3] | fields[2] << 8 | fields[1] << 16 | fields[0] << 24)
    }
}
