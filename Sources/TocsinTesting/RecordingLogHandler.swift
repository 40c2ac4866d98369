public import Logging

/// A swift-log handler that keeps each message where a test can wait for it
/// (`lines.wait(...) { $0.contains(...) }`): a warning the engine logs is part of its behaviour,
/// and asserting it needs the line, not stderr.
public struct RecordingLogHandler: LogHandler {
    public let lines: WaitableState<[String]>
    public var logLevel: Logger.Level
    public var metadata: Logger.Metadata = [:]

    public init(_ lines: WaitableState<[String]>, logLevel: Logger.Level = .info) {
        self.lines = lines
        self.logLevel = logLevel
    }

    /// A logger whose every handler records into `lines`.
    public static func logger(label: String = "test", _ lines: WaitableState<[String]>, logLevel: Logger.Level = .info) -> Logger {
        Logger(label: label) { _ in RecordingLogHandler(lines, logLevel: logLevel) }
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) { lines.update { $0.append("\(event.message)") } }
}
