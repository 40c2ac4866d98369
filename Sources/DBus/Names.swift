import CDBus

/// Runs one of libdbus's `dbus_validate_*` functions on a Swift string.
///
/// libdbus aborts the whole process when it is handed an invalid name, so every name type is
/// checked here before any libdbus function sees it. Embedded NULs are rejected first because
/// the C validators would silently stop at them and accept a prefix.
func validateWithLibDBus(
    _ string: String,
    kind: String,
    _ validator: (UnsafePointer<CChar>, UnsafeMutablePointer<CDBus.DBusError>) -> dbus_bool_t
) throws(DBusError) {
    if string.utf8.contains(0) {
        throw DBusError(.invalidArgs, "\(kind) contains a NUL byte")
    }
    var cError = CDBus.DBusError()
    dbus_error_init(&cError)
    defer { dbus_error_free(&cError) }
    let ok = string.withCString { validator($0, &cError) }
    if ok == 0 {
        let reason = cError.message.map { String(cString: $0) } ?? "invalid"
        throw DBusError(.invalidArgs, "invalid \(kind) '\(string.prefix(300))': \(reason)")
    }
}

/// A syntactically valid bus name, unique (`:1.42`) or well-known (`org.example.App`).
public struct BusName: Sendable, Hashable, CustomStringConvertible, ExpressibleByStringLiteral {
    public let rawValue: String
    /// For names libdbus has already validated (taken from a received message).
    init(unchecked rawValue: String) { self.rawValue = rawValue }
    public init(_ rawValue: String) throws(DBusError) {
        try validateWithLibDBus(rawValue, kind: "bus name") { dbus_validate_bus_name($0, $1) }
        self.rawValue = rawValue
    }
    public init?(validating rawValue: String) { try? self.init(rawValue) }
    /// Literals are written by the programmer, so an invalid one is a bug worth stopping on.
    /// Note that `BusName("literal")` is literal coercion and lands here too; pass runtime
    /// strings (never literals) to the throwing initialiser.
    public init(stringLiteral value: String) {
        do { try self.init(value) } catch { preconditionFailure("invalid bus name literal \(value)") }
    }
    public var isUnique: Bool { rawValue.hasPrefix(":") }
    public var description: String { rawValue }
}

/// A syntactically valid interface name such as `org.freedesktop.DBus.Properties`.
public struct InterfaceName: Sendable, Hashable, CustomStringConvertible, ExpressibleByStringLiteral {
    public let rawValue: String
    /// For names libdbus has already validated (taken from a received message).
    init(unchecked rawValue: String) { self.rawValue = rawValue }
    public init(_ rawValue: String) throws(DBusError) {
        try validateWithLibDBus(rawValue, kind: "interface name") { dbus_validate_interface($0, $1) }
        self.rawValue = rawValue
    }
    public init?(validating rawValue: String) { try? self.init(rawValue) }
    public init(stringLiteral value: String) {
        do { try self.init(value) } catch { preconditionFailure("invalid interface name literal \(value)") }
    }
    public var description: String { rawValue }

    public static let peer: InterfaceName = "org.freedesktop.DBus.Peer"
    public static let introspectable: InterfaceName = "org.freedesktop.DBus.Introspectable"
    public static let properties: InterfaceName = "org.freedesktop.DBus.Properties"
    public static let bus: InterfaceName = "org.freedesktop.DBus"
}

/// A syntactically valid method or signal name.
public struct MemberName: Sendable, Hashable, CustomStringConvertible, ExpressibleByStringLiteral {
    public let rawValue: String
    /// For names libdbus has already validated (taken from a received message).
    init(unchecked rawValue: String) { self.rawValue = rawValue }
    public init(_ rawValue: String) throws(DBusError) {
        try validateWithLibDBus(rawValue, kind: "member name") { dbus_validate_member($0, $1) }
        self.rawValue = rawValue
    }
    public init?(validating rawValue: String) { try? self.init(rawValue) }
    public init(stringLiteral value: String) {
        do { try self.init(value) } catch { preconditionFailure("invalid member name literal \(value)") }
    }
    public var description: String { rawValue }
}

/// A syntactically valid error name such as `org.freedesktop.DBus.Error.Failed`.
public struct ErrorName: Sendable, Hashable, CustomStringConvertible, ExpressibleByStringLiteral {
    public let rawValue: String
    /// For names libdbus has already validated (taken from a received message).
    init(unchecked rawValue: String) { self.rawValue = rawValue }
    public init(_ rawValue: String) throws(DBusError) {
        try validateWithLibDBus(rawValue, kind: "error name") { dbus_validate_error_name($0, $1) }
        self.rawValue = rawValue
    }
    public init?(validating rawValue: String) { try? self.init(rawValue) }
    public init(stringLiteral value: String) {
        do { try self.init(value) } catch { preconditionFailure("invalid error name literal \(value)") }
    }
    public var description: String { rawValue }
}

/// A syntactically valid object path such as `/org/example/App`.
public struct ObjectPath: Sendable, Hashable, Comparable, CustomStringConvertible, ExpressibleByStringLiteral {
    public let rawValue: String
    /// For names libdbus has already validated (taken from a received message).
    init(unchecked rawValue: String) { self.rawValue = rawValue }
    public init(_ rawValue: String) throws(DBusError) {
        try validateWithLibDBus(rawValue, kind: "object path") { dbus_validate_path($0, $1) }
        self.rawValue = rawValue
    }
    public init?(validating rawValue: String) { try? self.init(rawValue) }
    public init(stringLiteral value: String) {
        do { try self.init(value) } catch { preconditionFailure("invalid object path literal \(value)") }
    }
    public static let root: ObjectPath = "/"
    public var description: String { rawValue }
    public static func < (a: ObjectPath, b: ObjectPath) -> Bool { a.rawValue < b.rawValue }

    /// The path elements, empty for `/`.
    public var components: [Substring] { rawValue.split(separator: "/") }

    /// Whether `self` lies strictly below `ancestor` (used to list child nodes in introspection).
    public func isDescendant(of ancestor: ObjectPath) -> Bool {
        if ancestor.rawValue == "/" { return rawValue != "/" }
        return rawValue.hasPrefix(ancestor.rawValue + "/")
    }
}

/// Checks a string argument the way libdbus will when it is appended: no NUL, valid UTF-8.
func validateStringForWire(_ string: String) throws(DBusError) {
    // Over the contiguous bytes, as in `FieldReader.refusingNUL`: not String's generic index.
    var bytes = string
    if bytes.withUTF8({ $0.contains(0) }) {
        throw DBusError(.invalidArgs, "string contains a NUL byte, which D-Bus cannot carry")
    }
    let ok = string.withCString { dbus_validate_utf8($0, nil) }
    if ok == 0 {
        throw DBusError(.invalidArgs, "string is not valid UTF-8 for D-Bus")
    }
}

/// D-Bus server addresses (`unix:path=/run/bus`, `tcp:host=h,port=1;unix:abstract=x`).
public enum DBusAddress {
    /// Checks the syntax of `address` as libdbus reads it (`dbus_parse_address`: transports,
    /// `key=value` pairs, escapes), without connecting: a caller can refuse a malformed address
    /// as a usage mistake before it tries to reach anything. An unknown transport passes here and
    /// fails when connecting.
    public static func checkSyntax(_ address: String) throws(DBusError) {
        if address.utf8.contains(0) { throw DBusError(.badAddress, "the address contains a NUL byte") }
        var cError = CDBus.DBusError()
        dbus_error_init(&cError)
        defer { dbus_error_free(&cError) }
        var entries: UnsafeMutablePointer<OpaquePointer?>?
        var count: Int32 = 0
        let ok = address.withCString { dbus_parse_address($0, &entries, &count, &cError) }
        guard ok != 0 else {
            throw DBusError(.badAddress, cError.message.map { String(cString: $0) } ?? "not a D-Bus address")
        }
        dbus_address_entries_free(entries)
    }
}
