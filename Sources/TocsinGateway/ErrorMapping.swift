public import DBus
public import TocsinCore

// How an engine error reaches a D-Bus client: the gateway's one table from `CenterError.Code`
// to the `io.github.tocsin.Gateway1.Error.*` names (GatewayNames.swift), and the cap on the
// text a reply carries. Every method answers through `dbusError`.

extension CenterError {
    /// The D-Bus error a client sees; one table for every method.
    public var dbusError: DBusError {
        let prefix = field.map { isArgument ? "argument '\($0)': " : "field '\($0)': " } ?? ""
        let message = Self.bounded(self.message)
        switch code {
        case .notFound: return DBusError(name: Gateway.ErrorName.notFound, message: message)
        case .quotaExceeded: return DBusError(name: Gateway.ErrorName.quotaExceeded, message: message)
        case .invalidTrigger: return DBusError(name: Gateway.ErrorName.invalidTrigger, message: prefix + message)
        case .unknownBackend: return DBusError(name: Gateway.ErrorName.unknownBackend, message: message)
        case .invalidArguments: return DBusError(.invalidArgs, prefix + message)
        case .invalidConfig: return DBusError(name: Gateway.ErrorName.invalidConfig, message: message)
        case .storage: return DBusError(name: Gateway.ErrorName.storage, message: message)
        case .stopping: return DBusError(name: Gateway.ErrorName.stopping, message: message)
        default: return DBusError(.failed, message)
        }
    }

    /// The last line of defence for input echoed in an error (each site quotes client text
    /// through `Echo.capped`): no error text passes 64 KiB, cut on a character boundary. 100
    /// config diagnostics fit well within it.
    static let maxMessageBytes = 65_536

    static func bounded(_ text: String) -> String {
        guard text.utf8.count > maxMessageBytes else { return text }
        var end = text.utf8.index(text.utf8.startIndex, offsetBy: maxMessageBytes)
        while end > text.utf8.startIndex, UTF8.isContinuation(text.utf8[end]) { end = text.utf8.index(before: end) }
        return String(text[..<end]) + "… (\(text.utf8.count - text.utf8.distance(from: text.utf8.startIndex, to: end)) more bytes)"
    }
}
