public import DBus
public import TocsinConfig
public import TocsinCore

/// Turns a `Schedule`/`PostNow` `a{sv}` into a `NotificationSpec` through the same field table
/// and messages as the config file: the variant values become a TOML table and the config
/// decoder reads it. Field names, syntax and limits therefore cannot drift between surfaces.
public enum SpecDecoding: Sendable {
    public static func decode(_ value: DBusValue, requireTrigger: Bool, limits: SpecLimits = SpecLimits()) throws(DBusError) -> NotificationSpec {
        let table = try toTable(value, field: nil)
        switch NotificationFields.decode(table, context: "the notification spec", limits: limits,
                                         allowReplace: true, requireTrigger: requireTrigger) {
        case .success(let spec): return spec
        case .failure(let f):
            // The decoder's messages already name the field ('title' in ..., invalid 'after': ...).
            let text = f.issues.map(\.messageWithValueColumn).joined(separator: "; ")
            throw DBusError(.invalidArgs, text)
        }
    }

    private static let origin = SourceLocation(line: 1, column: 1)

    static func toTable(_ value: DBusValue, field: String?) throws(DBusError) -> TOMLTable {
        guard case .dictionary(key: .string, value: let vt, let entries) = value else {
            throw DBusError(.invalidArgs, "\(field.map { "field '\($0)'" } ?? "the spec") must be a dictionary with string keys (a{sv}), got '\(value.type)'")
        }
        var t = TOMLTable(location: origin)
        for e in entries {
            guard case .string(let key) = e.key else { continue }
            let name = field.map { "\($0).\(key)" } ?? key
            var v = e.value
            if vt == .variant, case .variant(let inner) = v { v = inner }
            if t[key] != nil { throw DBusError(.invalidArgs, "field '\(name)' is given twice") }
            t.set(key, keyLocation: origin, node: TOMLNode(try toTOML(v, field: name), at: origin))
        }
        return t
    }

    static func toTOML(_ v: DBusValue, field: String) throws(DBusError) -> TOMLValue {
        switch v {
        case .string(let s): return .string(s)
        case .boolean(let b): return .boolean(b)
        case .byte(let x): return .integer(Int64(x))
        case .int16(let x): return .integer(Int64(x))
        case .uint16(let x): return .integer(Int64(x))
        case .int32(let x): return .integer(Int64(x))
        case .uint32(let x): return .integer(Int64(x))
        case .int64(let x): return .integer(x)
        case .uint64(let x):
            guard let i = Int64(exactly: x) else { throw DBusError(.invalidArgs, "field '\(field)': \(x) is too large") }
            return .integer(i)
        case .double(let d): return .float(d)
        case .variant(let inner): return try toTOML(inner, field: field)
        case .array(_, let items):
            var out: [TOMLNode] = []
            for item in items { out.append(TOMLNode(try toTOML(item, field: field), at: origin)) }
            return .array(out)
        case .dictionary(key: .string, _, _):
            return .table(try toTable(v, field: field))
        default:
            throw DBusError(.invalidArgs, "field '\(field)' has unsupported D-Bus type '\(v.type)'")
        }
    }
}

extension CenterError {
    /// The D-Bus error a client sees; one table for every method.
    public var dbusError: DBusError {
        let prefix = field.map { "field '\($0)': " } ?? ""
        switch code {
        case .notFound: return DBusError(name: Gateway.ErrorName.notFound, message: message)
        case .quotaExceeded: return DBusError(name: Gateway.ErrorName.quotaExceeded, message: message)
        case .invalidTrigger: return DBusError(name: Gateway.ErrorName.invalidTrigger, message: prefix + message)
        case .unknownBackend: return DBusError(name: Gateway.ErrorName.unknownBackend, message: message)
        case .invalidArguments: return DBusError(.invalidArgs, prefix + message)
        case .invalidConfig: return DBusError(name: Gateway.ErrorName.invalidConfig, message: message)
        case .storage: return DBusError(name: Gateway.ErrorName.storage, message: message)
        default: return DBusError(.failed, message)
        }
    }
}
