import Logging
import TocsinConfig
#if canImport(Glibc)
import Glibc
import TocsinModel
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
        // Line by line, as CommandFailure: a start-up failure logs the config's diagnostics.
        line += "\(event.message)".split(separator: "\n", omittingEmptySubsequences: false)
            .map { JSONText.visible(String($0)) }.joined(separator: "\n")
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

    /// A metadata value as it is, or quoted with every control character escaped (a value can
    /// carry client text, and the log is often read in a terminal).
    static func quote(_ s: String) -> String {
        if !s.isEmpty, !s.contains(where: { $0 == " " || $0 == "\"" || $0 == "=" }),
           !s.unicodeScalars.contains(where: JSONText.isControl) {
            return s
        }
        return JSONText.quote(s)
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
