import Logging
#if canImport(Glibc)
import Glibc
#endif

/// Log lines on stderr. Under systemd (JOURNAL_STREAM set) each line starts with its syslog
/// priority (`<3>`), which journald turns into the entry's priority; elsewhere a readable level.
struct TocsinLogHandler: LogHandler {
    var logLevel: Logger.Level
    var metadata: Logger.Metadata = [:]
    let label: String
    let journal: Bool

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var merged = metadata
        if let m = event.metadata { merged.merge(m) { _, new in new } }
        var line = journal ? "<\(Self.priority(event.level))>" : "\(event.level): "
        line += "\(event.message)"
        for (k, v) in merged.sorted(by: { $0.key < $1.key }) {
            line += " \(k)=\(Self.quote("\(v)"))"
        }
        line += "\n"
        var bytes = Array(line.utf8)
        var off = 0
        while off < bytes.count {
            let n = bytes.withUnsafeMutableBytes { write(2, $0.baseAddress! + off, $0.count - off) }
            if n <= 0 { if errno == EINTR { continue }; return }
            off += n
        }
    }

    static func priority(_ level: Logger.Level) -> Int {
        switch level {
        case .trace, .debug: return 7
        case .info: return 6
        case .notice: return 5
        case .warning: return 4
        case .error: return 3
        case .critical: return 2
        }
    }

    static func quote(_ s: String) -> String {
        if !s.isEmpty, !s.contains(where: { $0 == " " || $0 == "\"" || $0 == "=" || $0.isNewline }) { return s }
        return "\"" + s.replacingOccurrences("\\", "\\\\").replacingOccurrences("\"", "\\\"").replacingOccurrences("\n", "\\n") + "\""
    }
}

extension String {
    func replacingOccurrences(_ a: String, _ b: String) -> String {
        split(separator: Substring(a), omittingEmptySubsequences: false).joined(separator: b)
    }
}

enum Logs {
    static func make(level: Logger.Level, environment: [String: String]) -> Logger {
        let journal = environment["JOURNAL_STREAM"] != nil
        var logger = Logger(label: "tocsin") { label in
            TocsinLogHandler(logLevel: level, label: label, journal: journal)
        }
        logger.logLevel = level
        return logger
    }
}
