import CDBus

/// Appends arguments straight to a message being built.
///
/// `DBusValue` trees are convenient but cost an allocation per container level and a walk to
/// validate them; a burst of a thousand `Fired` signals spent most of its time there. The writer
/// can only produce well-formed types (each method appends one fixed shape), so only the strings
/// need checking, which it does before libdbus sees them: libdbus refuses NUL bytes and invalid
/// UTF-8, and some builds abort on them.
public struct DBusArgumentWriter: ~Copyable {
    private var iter: DBusMessageIter
    /// The first problem met; later appends are skipped and the message is not sent.
    fileprivate(set) var failure: DBusError?

    fileprivate init(_ message: OpaquePointer) {
        iter = DBusMessageIter()
        dbus_message_iter_init_append(message, &iter)
    }

    public mutating func string(_ s: String) { Self.appendString(s, &iter, &failure) }

    public mutating func int64(_ v: Int64) { Self.basic(v, CDBUS_TYPE_INT64, &iter, &failure) }

    public mutating func uint32(_ v: UInt32) { Self.basic(v, CDBUS_TYPE_UINT32, &iter, &failure) }

    /// An `a{sv}` dictionary, its entries written by `body`.
    public mutating func vardict(_ body: (inout DBusVardictWriter) -> Void) {
        guard failure == nil else { return }
        var sub = DBusMessageIter()
        guard dbus_message_iter_open_container(&iter, CDBUS_TYPE_ARRAY, "{sv}", &sub) != 0 else {
            failure = DBusError(.noMemory, "cannot open a{sv}")
            return
        }
        var w = DBusVardictWriter(iter: sub)
        body(&w)
        if let f = w.failure {
            failure = f
            dbus_message_iter_abandon_container(&iter, &w.iter)
        } else if dbus_message_iter_close_container(&iter, &w.iter) == 0 {
            failure = DBusError(.noMemory, "cannot close a{sv}")
        }
    }

    static func appendString(_ s: String, _ iter: inout DBusMessageIter, _ failure: inout DBusError?) {
        guard failure == nil else { return }
        do { try validateStringForWire(s) } catch {
            failure = error
            return
        }
        let ok = s.withCString { p in
            var ptr: UnsafePointer<CChar>? = p
            return dbus_message_iter_append_basic(&iter, CDBUS_TYPE_STRING, &ptr) != 0
        }
        if !ok { failure = DBusError(.noMemory, "cannot append a string") }
    }

    static func basic<T: BitwiseCopyable>(_ value: T, _ type: Int32, _ iter: inout DBusMessageIter, _ failure: inout DBusError?) {
        guard failure == nil else { return }
        var v = value
        if dbus_message_iter_append_basic(&iter, type, &v) == 0 { failure = DBusError(.noMemory, "cannot append a value") }
    }
}

/// The entries of an `a{sv}` dictionary; each method writes one entry of a fixed variant type.
public struct DBusVardictWriter: ~Copyable {
    fileprivate var iter: DBusMessageIter
    fileprivate var failure: DBusError?

    fileprivate init(iter: DBusMessageIter) { self.iter = iter }

    public mutating func string(_ key: String, _ value: String) {
        entry(key, "s") { sub, failure in DBusArgumentWriter.appendString(value, &sub, &failure) }
    }

    public mutating func int64(_ key: String, _ value: Int64) {
        entry(key, "x") { sub, failure in DBusArgumentWriter.basic(value, CDBUS_TYPE_INT64, &sub, &failure) }
    }

    public mutating func uint32(_ key: String, _ value: UInt32) {
        entry(key, "u") { sub, failure in DBusArgumentWriter.basic(value, CDBUS_TYPE_UINT32, &sub, &failure) }
    }

    public mutating func boolean(_ key: String, _ value: Bool) {
        let v: dbus_bool_t = value ? 1 : 0
        entry(key, "b") { sub, failure in DBusArgumentWriter.basic(v, CDBUS_TYPE_BOOLEAN, &sub, &failure) }
    }

    public mutating func strings(_ key: String, _ values: [String]) {
        entry(key, "as") { sub, failure in
            Self.container(CDBUS_TYPE_ARRAY, "s", &sub, &failure) { arr, failure in
                for v in values { DBusArgumentWriter.appendString(v, &arr, &failure) }
            }
        }
    }

    /// An `a{ss}` value, in the order given.
    public mutating func stringPairs(_ key: String, _ pairs: [(String, String)]) {
        entry(key, "a{ss}") { sub, failure in
            Self.container(CDBUS_TYPE_ARRAY, "{ss}", &sub, &failure) { arr, failure in
                for (k, v) in pairs {
                    Self.container(CDBUS_TYPE_DICT_ENTRY, nil, &arr, &failure) { e, failure in
                        DBusArgumentWriter.appendString(k, &e, &failure)
                        DBusArgumentWriter.appendString(v, &e, &failure)
                    }
                }
            }
        }
    }

    private mutating func entry(_ key: String, _ signature: StaticString,
                                _ value: (inout DBusMessageIter, inout DBusError?) -> Void) {
        guard failure == nil else { return }
        Self.container(CDBUS_TYPE_DICT_ENTRY, nil, &iter, &failure) { e, failure in
            DBusArgumentWriter.appendString(key, &e, &failure)
            Self.container(CDBUS_TYPE_VARIANT, signature, &e, &failure, value)
        }
    }

    private static func container(_ type: Int32, _ signature: StaticString?, _ iter: inout DBusMessageIter,
                                  _ failure: inout DBusError?, _ body: (inout DBusMessageIter, inout DBusError?) -> Void) {
        guard failure == nil else { return }
        var sub = DBusMessageIter()
        let opened: dbus_bool_t
        if let signature {
            opened = signature.withUTF8Buffer { b in
                b.withMemoryRebound(to: CChar.self) { dbus_message_iter_open_container(&iter, type, $0.baseAddress, &sub) }
            }
        } else {
            opened = dbus_message_iter_open_container(&iter, type, nil, &sub)
        }
        guard opened != 0 else {
            failure = DBusError(.noMemory, "cannot open a container")
            return
        }
        body(&sub, &failure)
        if failure != nil {
            dbus_message_iter_abandon_container(&iter, &sub)
        } else if dbus_message_iter_close_container(&iter, &sub) == 0 {
            failure = DBusError(.noMemory, "cannot close a container")
        }
    }
}

/// Writers live only for the duration of one `signal(...) { }` call on one thread.
@available(*, unavailable)
extension DBusArgumentWriter: Sendable {}

@available(*, unavailable)
extension DBusVardictWriter: Sendable {}

extension DBusMessage {
    /// A signal whose arguments `write` appends directly (see `DBusArgumentWriter`).
    public static func signal(path: ObjectPath, interface: InterfaceName, member: MemberName,
                              write: (inout DBusArgumentWriter) -> Void) throws(DBusError) -> DBusMessage {
        guard let raw = dbus_message_new_signal(path.rawValue, interface.rawValue, member.rawValue) else {
            throw DBusError(.noMemory, "cannot allocate signal")
        }
        let message = DBusMessage(owning: raw)
        var w = DBusArgumentWriter(raw)
        write(&w)
        if let f = w.failure { throw f }
        return message
    }
}
