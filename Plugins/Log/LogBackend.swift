import Logging
public import TocsinCore
import TocsinTime
#if canImport(Glibc)
import Glibc
public import TocsinModel
#endif

/// `type = "log"`: one line per firing on standard output (the journal, under systemd), so a
/// headless machine shows what fired without any desktop.
public struct LogBackend: DeliveryBackend {
    public enum Format: String, Sendable { case text, json }
    public let name: String
    public let format: Format

    public init(name: String, format: Format = .text) {
        self.name = name
        self.format = format
    }

    public func deliver(_ firing: Firing) async throws(DeliveryError) {
        let line = format == .json ? Self.json(firing) : Self.text(firing)
        // One write(2) per line, so concurrent deliveries never interleave within a line.
        var bytes = Array((line + "\n").utf8)
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeMutableBytes { write(1, $0.baseAddress! + offset, $0.count - offset) }
            if n < 0 {
                if errno == EINTR { continue }
                throw DeliveryError(.failed, "cannot write to standard output: \(String(cString: strerror(errno)))")
            }
            offset += n
        }
    }

    static func text(_ f: Firing) -> String {
        var s = "tocsin: fired key=\(quote(f.key)) title=\(quote(f.notification.title))"
        if !f.notification.body.isEmpty { s += " body=\(quote(f.notification.body))" }
        s += " due=\(Timestamp.rfc3339UTC(f.due)) occurrence=\(f.occurrence.number)"
        if let o = f.occurrence.offset { s += " before=\(o)" }
        if f.reason != .scheduled { s += " reason=\(f.reason.rawValue)" }
        if f.late { s += " late=\(f.lateness)" }
        return s
    }

    static func json(_ f: Firing) -> String {
        var fields = [
            "\"key\":\(jsonString(f.key))", "\"title\":\(jsonString(f.notification.title))",
            "\"body\":\(jsonString(f.notification.body))", "\"due\":\(jsonString(Timestamp.rfc3339UTC(f.due)))",
            "\"fired\":\(jsonString(Timestamp.rfc3339UTC(f.fired)))", "\"occurrence\":\(f.occurrence.number)",
            "\"late\":\(f.late)", "\"reason\":\(jsonString(f.reason.rawValue))",
        ]
        let info = f.notification.userInfo.sorted { $0.key < $1.key }.map { "\(jsonString($0.key)):\(jsonString($0.value))" }
        fields.append("\"user_info\":{\(info.joined(separator: ","))}")
        return "{" + fields.joined(separator: ",") + "}"
    }

    /// Quotes only when needed, escaping what would break the line or drive a terminal that
    /// shows it (C1 and bidi controls too: `JSONText.isControl`).
    static func quote(_ s: String) -> String {
        let plain = !s.isEmpty && s.unicodeScalars.allSatisfy { $0.value > 0x20 && $0 != "\"" && $0 != "\\" && !JSONText.isControl($0) }
        return plain ? s : jsonString(s)
    }

    static func jsonString(_ s: String) -> String { JSONText.quote(s) }
}

public struct LogBackendFactory: BackendFactory {
    public init() {}
    public var typeName: String { "log" }
    public var optionKeys: [String] { ["format"] }
    public func options(from reader: inout some FieldReader, environment: BackendEnvironment) -> LogBackend.Format? {
        reader.choice("format", [("text", LogBackend.Format.text), ("json", .json)]) ?? .text
    }
    public func make(name: String, options format: LogBackend.Format, environment: BackendEnvironment) -> any DeliveryBackend {
        LogBackend(name: name, format: format)
    }
}
