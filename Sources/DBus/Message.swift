import CDBus

/// Owns one reference to a libdbus message; the reference is dropped in `deinit`.
///
/// A message is built completely (and validated) before it is handed to the connection and
/// is not mutated afterwards, which is what makes sharing it across threads sound.
///
/// `@unchecked Sendable`: `raw` is immutable, nothing writes the message once it is built (the
/// first reading of its body locks it, which only fills in what a complete message already
/// holds), and libdbus's reference counting is atomic once `dbus_threads_init_default` has run.
public final class DBusMessage: @unchecked Sendable {
    let raw: OpaquePointer

    /// Takes over a reference the caller already owns.
    init(owning raw: OpaquePointer) { self.raw = raw }

    /// Adds a reference of our own (for messages libdbus lends to a callback).
    init(retaining raw: OpaquePointer) {
        dbus_message_ref(raw)
        self.raw = raw
    }

    deinit { dbus_message_unref(raw) }

    public enum Kind: Sendable, Hashable {
        case methodCall, methodReturn, error, signal, other
    }

    // MARK: Building

    /// A method call. All arguments are validated first: nothing invalid reaches libdbus.
    public static func methodCall(
        destination: BusName?, path: ObjectPath, interface: InterfaceName?, member: MemberName,
        arguments: [DBusValue] = []
    ) throws(DBusError) -> DBusMessage {
        try validateAll(arguments)
        guard let raw = dbus_message_new_method_call(
            destination?.rawValue, path.rawValue, interface?.rawValue, member.rawValue
        ) else { throw DBusError(.noMemory, "cannot allocate method call") }
        let message = DBusMessage(owning: raw)
        try message.appendValidated(arguments)
        return message
    }

    /// A signal, broadcast unless `destination` is given.
    public static func signal(
        path: ObjectPath, interface: InterfaceName, member: MemberName, arguments: [DBusValue] = [],
        destination: BusName? = nil
    ) throws(DBusError) -> DBusMessage {
        try validateAll(arguments)
        guard let raw = dbus_message_new_signal(path.rawValue, interface.rawValue, member.rawValue) else {
            throw DBusError(.noMemory, "cannot allocate signal")
        }
        let message = DBusMessage(owning: raw)
        if let destination, dbus_message_set_destination(raw, destination.rawValue) == 0 {
            throw DBusError(.noMemory, "cannot set destination")
        }
        try message.appendValidated(arguments)
        return message
    }

    /// A successful reply to `call`.
    public static func methodReturn(replyingTo call: DBusMessage, arguments: [DBusValue] = []) throws(DBusError) -> DBusMessage {
        try validateAll(arguments)
        guard let raw = dbus_message_new_method_return(call.raw) else {
            throw DBusError(.noMemory, "cannot allocate reply")
        }
        let message = DBusMessage(owning: raw)
        try message.appendValidated(arguments)
        return message
    }

    /// An error reply to `call`. A name or message libdbus would refuse is replaced, never sent.
    public static func error(replyingTo call: DBusMessage, _ error: DBusError) -> DBusMessage? {
        let name = (try? ErrorName(error.name))?.rawValue ?? DBusError.Code.failed.name
        var text = error.message
        if (try? validateStringForWire(text)) == nil {
            text = String(text.unicodeScalars.filter { $0 != "\0" }.map(Character.init))
            if (try? validateStringForWire(text)) == nil { text = "error message could not be encoded" }
        }
        guard let raw = dbus_message_new_error(call.raw, name, text) else { return nil }
        return DBusMessage(owning: raw)
    }

    private static func validateAll(_ arguments: [DBusValue]) throws(DBusError) {
        for a in arguments { try a.validate() }
        if arguments.reduce(0, { $0 + $1.type.signatureLength }) > 255 {
            throw DBusError(.limitsExceeded, "message signature longer than 255 bytes")
        }
    }

    private func appendValidated(_ arguments: [DBusValue]) throws(DBusError) {
        var iter = DBusMessageIter()
        dbus_message_iter_init_append(raw, &iter)
        for a in arguments {
            guard Marshal.append(a, to: &iter) else {
                throw DBusError(.noMemory, "cannot append argument of type '\(a.type)'")
            }
        }
    }

    // MARK: Reading

    public var kind: Kind {
        switch dbus_message_get_type(raw) {
        case CDBUS_MESSAGE_TYPE_METHOD_CALL: .methodCall
        case CDBUS_MESSAGE_TYPE_METHOD_RETURN: .methodReturn
        case CDBUS_MESSAGE_TYPE_ERROR: .error
        case CDBUS_MESSAGE_TYPE_SIGNAL: .signal
        default: .other
        }
    }

    public var path: ObjectPath? { dbus_message_get_path(raw).map { ObjectPath(unchecked: String(cString: $0)) } }
    public var interface: InterfaceName? {
        dbus_message_get_interface(raw).map { InterfaceName(unchecked: String(cString: $0)) }
    }
    public var member: MemberName? { dbus_message_get_member(raw).map { MemberName(unchecked: String(cString: $0)) } }
    public var sender: BusName? { dbus_message_get_sender(raw).map { BusName(unchecked: String(cString: $0)) } }
    public var destination: BusName? {
        dbus_message_get_destination(raw).map { BusName(unchecked: String(cString: $0)) }
    }
    public var errorName: String? { dbus_message_get_error_name(raw).map { String(cString: $0) } }
    public var serial: UInt32 { dbus_message_get_serial(raw) }
    public var replySerial: UInt32 { dbus_message_get_reply_serial(raw) }
    public var noReplyExpected: Bool { dbus_message_get_no_reply(raw) != 0 }
    public var signature: DBusSignature {
        guard let s = dbus_message_get_signature(raw) else { return .empty }
        return (try? DBusSignature(String(cString: s))) ?? .empty
    }
    var containsUnixFDs: Bool { dbus_message_contains_unix_fds(raw) != 0 }

    /// Decodes the body. libdbus has validated the wire format, so this only fails on a
    /// signature our parser rejects (it should not happen for a message libdbus accepted).
    /// The bytes are read directly (`WireReader`); the iterator is the fallback.
    public func arguments() throws(DBusError) -> [DBusValue] {
        if let values = wireArguments() { return values }
        return try iteratedArguments()
    }

    /// The body read from the wire bytes; nil where `arguments()` falls back to the iterator.
    /// For the fuzz target, which checks that this path is taken and reads what went in.
    @_spi(Fuzz) public func wireArguments() -> [DBusValue]? {
        guard !containsUnixFDs, let text = dbus_message_get_signature(raw),
              let signature = try? DBusSignature(String(cString: text)) else { return nil }
        return WireReader.arguments(of: raw, signature: signature)
    }

    /// The body read through libdbus's iterator.
    func iteratedArguments() throws(DBusError) -> [DBusValue] {
        var iter = DBusMessageIter()
        guard dbus_message_iter_init(raw, &iter) != 0 else { return [] }
        return try Marshal.readAll(&iter)
    }

    /// For an error message: the error it carries (first string argument is the message).
    var asError: DBusError {
        let text: String
        if let first = try? arguments().first, case .string(let s) = first { text = s } else { text = "" }
        return DBusError(name: errorName ?? DBusError.Code.failed.name, message: text)
    }
}

/// The `DBusMessageIter` walk in both directions.
enum Marshal {
    /// Appends one value that `DBusValue.validate()` has accepted. Returns false on OOM.
    static func append(_ value: DBusValue, to iter: inout DBusMessageIter) -> Bool {
        switch value {
        case .byte(var v): return dbus_message_iter_append_basic(&iter, CDBUS_TYPE_BYTE, &v) != 0
        case .boolean(let b):
            var v: dbus_bool_t = b ? 1 : 0
            return dbus_message_iter_append_basic(&iter, CDBUS_TYPE_BOOLEAN, &v) != 0
        case .int16(var v): return dbus_message_iter_append_basic(&iter, CDBUS_TYPE_INT16, &v) != 0
        case .uint16(var v): return dbus_message_iter_append_basic(&iter, CDBUS_TYPE_UINT16, &v) != 0
        case .int32(var v): return dbus_message_iter_append_basic(&iter, CDBUS_TYPE_INT32, &v) != 0
        case .uint32(var v): return dbus_message_iter_append_basic(&iter, CDBUS_TYPE_UINT32, &v) != 0
        case .int64(var v): return dbus_message_iter_append_basic(&iter, CDBUS_TYPE_INT64, &v) != 0
        case .uint64(var v): return dbus_message_iter_append_basic(&iter, CDBUS_TYPE_UINT64, &v) != 0
        case .double(var v): return dbus_message_iter_append_basic(&iter, CDBUS_TYPE_DOUBLE, &v) != 0
        case .unixFD(var v): return dbus_message_iter_append_basic(&iter, CDBUS_TYPE_UNIX_FD, &v) != 0
        case .string(let s): return appendString(s, type: CDBUS_TYPE_STRING, to: &iter)
        case .objectPath(let p): return appendString(p.rawValue, type: CDBUS_TYPE_OBJECT_PATH, to: &iter)
        case .signature(let g): return appendString(g.description, type: CDBUS_TYPE_SIGNATURE, to: &iter)
        case .array(let element, let values):
            return container(CDBUS_TYPE_ARRAY, element.description, &iter) { sub in
                values.allSatisfy { append($0, to: &sub) }
            }
        case .dictionary(let key, let value, let entries):
            return container(CDBUS_TYPE_ARRAY, "{\(key)\(value)}", &iter) { sub in
                entries.allSatisfy { entry in
                    container(CDBUS_TYPE_DICT_ENTRY, nil, &sub) { e in
                        append(entry.key, to: &e) && append(entry.value, to: &e)
                    }
                }
            }
        case .structure(let fields):
            return container(CDBUS_TYPE_STRUCT, nil, &iter) { sub in fields.allSatisfy { append($0, to: &sub) } }
        case .variant(let inner):
            return container(CDBUS_TYPE_VARIANT, inner.type.description, &iter) { sub in append(inner, to: &sub) }
        }
    }

    private static func appendString(_ s: String, type: Int32, to iter: inout DBusMessageIter) -> Bool {
        s.withCString { p in
            var ptr: UnsafePointer<CChar>? = p
            return dbus_message_iter_append_basic(&iter, type, &ptr) != 0
        }
    }

    private static func container(
        _ type: Int32, _ signature: String?, _ iter: inout DBusMessageIter,
        _ body: (inout DBusMessageIter) -> Bool
    ) -> Bool {
        var sub = DBusMessageIter()
        let opened: dbus_bool_t
        if let signature {
            opened = signature.withCString { dbus_message_iter_open_container(&iter, type, $0, &sub) }
        } else {
            opened = dbus_message_iter_open_container(&iter, type, nil, &sub)
        }
        guard opened != 0 else { return false }
        guard body(&sub) else {
            dbus_message_iter_abandon_container(&iter, &sub)
            return false
        }
        return dbus_message_iter_close_container(&iter, &sub) != 0
    }

    static func readAll(_ iter: inout DBusMessageIter) throws(DBusError) -> [DBusValue] {
        var out: [DBusValue] = []
        while true {
            let t = dbus_message_iter_get_arg_type(&iter)
            if t == CDBUS_TYPE_INVALID { break }
            out.append(try read(&iter, t))
            if dbus_message_iter_next(&iter) == 0 { break }
        }
        return out
    }

    private static func currentType(_ iter: inout DBusMessageIter) throws(DBusError) -> DBusType {
        guard let raw = dbus_message_iter_get_signature(&iter) else {
            throw DBusError(.noMemory, "cannot read signature")
        }
        defer { dbus_free(raw) }
        return try DBusType(String(cString: raw))
    }

    private static func string(_ iter: inout DBusMessageIter) -> String {
        var p: UnsafePointer<CChar>? = nil
        dbus_message_iter_get_basic(&iter, &p)
        return p.map { String(cString: $0) } ?? ""
    }

    private static func basic<T: FixedWidthInteger>(_ iter: inout DBusMessageIter, _: T.Type) -> T {
        var v: T = 0
        dbus_message_iter_get_basic(&iter, &v)
        return v
    }

    static func read(_ iter: inout DBusMessageIter, _ t: Int32) throws(DBusError) -> DBusValue {
        switch t {
        case CDBUS_TYPE_BYTE: return .byte(basic(&iter, UInt8.self))
        case CDBUS_TYPE_BOOLEAN: return .boolean(basic(&iter, dbus_bool_t.self) != 0)
        case CDBUS_TYPE_INT16: return .int16(basic(&iter, Int16.self))
        case CDBUS_TYPE_UINT16: return .uint16(basic(&iter, UInt16.self))
        case CDBUS_TYPE_INT32: return .int32(basic(&iter, Int32.self))
        case CDBUS_TYPE_UINT32: return .uint32(basic(&iter, UInt32.self))
        case CDBUS_TYPE_INT64: return .int64(basic(&iter, Int64.self))
        case CDBUS_TYPE_UINT64: return .uint64(basic(&iter, UInt64.self))
        case CDBUS_TYPE_UNIX_FD: return .unixFD(basic(&iter, Int32.self))
        case CDBUS_TYPE_DOUBLE:
            var v: Double = 0
            dbus_message_iter_get_basic(&iter, &v)
            return .double(v)
        case CDBUS_TYPE_STRING: return .string(string(&iter))
        case CDBUS_TYPE_OBJECT_PATH: return .objectPath(ObjectPath(unchecked: string(&iter)))
        case CDBUS_TYPE_SIGNATURE: return .signature(try DBusSignature(string(&iter)))
        case CDBUS_TYPE_ARRAY:
            let type = try currentType(&iter)
            var sub = DBusMessageIter()
            dbus_message_iter_recurse(&iter, &sub)
            switch type {
            case .dictionary(let key, let value):
                var entries: [DBusValue.DictEntry] = []
                while dbus_message_iter_get_arg_type(&sub) == CDBUS_TYPE_DICT_ENTRY {
                    var e = DBusMessageIter()
                    dbus_message_iter_recurse(&sub, &e)
                    let k = try read(&e, dbus_message_iter_get_arg_type(&e))
                    dbus_message_iter_next(&e)
                    let v = try read(&e, dbus_message_iter_get_arg_type(&e))
                    entries.append(.init(k, v))
                    if dbus_message_iter_next(&sub) == 0 { break }
                }
                return .dictionary(key: key, value: value, entries)
            case .array(.byte):
                var p: UnsafeRawPointer? = nil
                var n: Int32 = 0
                withUnsafeMutablePointer(to: &p) { pp in
                    dbus_message_iter_get_fixed_array(&sub, UnsafeMutableRawPointer(pp), &n)
                }
                guard let p, n > 0 else { return .array(.byte, []) }
                let bytes = UnsafeRawBufferPointer(start: p, count: Int(n))
                return .array(.byte, bytes.map { .byte($0) })
            case .array(let element):
                var values: [DBusValue] = []
                while true {
                    let et = dbus_message_iter_get_arg_type(&sub)
                    if et == CDBUS_TYPE_INVALID { break }
                    values.append(try read(&sub, et))
                    if dbus_message_iter_next(&sub) == 0 { break }
                }
                return .array(element, values)
            default:
                throw DBusError(.inconsistentMessage, "array with signature '\(type)'")
            }
        case CDBUS_TYPE_STRUCT:
            var sub = DBusMessageIter()
            dbus_message_iter_recurse(&iter, &sub)
            return .structure(try readAll(&sub))
        case CDBUS_TYPE_VARIANT:
            var sub = DBusMessageIter()
            dbus_message_iter_recurse(&iter, &sub)
            return .variant(try read(&sub, dbus_message_iter_get_arg_type(&sub)))
        default:
            throw DBusError(.inconsistentMessage, "unsupported type code \(t)")
        }
    }
}
