#if canImport(Glibc)
import Glibc
public import TocsinModel
import TocsinSystem
#endif

/// Reads, parses and decodes a config file, keeping the source so diagnostics can quote it.
public struct LoadedConfig: Sendable {
    public var file: String
    public var source: String
    public var configuration: TocsinConfiguration
}

public struct ConfigLoadError: Error, Sendable, CustomStringConvertible {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        /// The closed set of codes: clients match on the static members below but cannot make
        /// new ones. Raw values are the stable spellings that messages and tests show.
        private enum _Code: String, Hashable, Sendable {
            case unreadable
            case invalid
        }

        private let code: _Code

        private init(_ code: _Code) { self.code = code }

        /// The stable spelling, e.g. `unreadable`.
        public var description: String { code.rawValue }

        public static let unreadable = Code(.unreadable)
        public static let invalid = Code(.invalid)
    }
    public var code: Code
    public var file: String
    public var diagnostics: [Diagnostic]
    /// The text of the file, for quoting lines under each diagnostic.
    public var source: String
    /// What could be decoded despite the errors, for further checks that add their own diagnostics.
    public var partial: LoadedConfig?

    public init(code: Code, file: String, diagnostics: [Diagnostic], source: String) {
        self.code = code; self.file = file; self.diagnostics = diagnostics; self.source = source
    }

    public var description: String { DiagnosticError(diagnostics).description }
    /// The diagnostics (the first `Diagnostic.reportLimit`, then how many more) with their
    /// source lines and carets.
    public var rendered: String { DiagnosticError(diagnostics).rendered(source: source) }
}

public enum ConfigLoader: Sendable {
    /// `$XDG_CONFIG_HOME/tocsin/config.toml`, else `~/.config/tocsin/config.toml`.
    public static func defaultPath(environment: [String: String]) -> String {
        if let x = environment["XDG_CONFIG_HOME"], x.hasPrefix("/") { return x + "/tocsin/config.toml" }
        return (environment["HOME"] ?? "") + "/.config/tocsin/config.toml"
    }

    /// The largest config file read: a config is a few kilobytes, and `--config /dev/zero` or a
    /// runaway generator must not take the daemon's memory.
    public static let maxFileSize = 16 << 20

    /// `tomlVersion` is the TOML specification the file is read against (default 1.1); in 1.0
    /// mode a 1.1 feature is an error that names it.
    public static func load(file: String, tomlVersion: TOMLVersion = .default) -> Result<LoadedConfig, ConfigLoadError> {
        switch readFile(file) {
        case .success(let bytes): return load(bytes: bytes, file: file, tomlVersion: tomlVersion)
        case .failure(let problem):
            return .failure(ConfigLoadError(code: .unreadable, file: file,
                                            diagnostics: [Diagnostic(file: file, location: SourceLocation(line: 1, column: 1),
                                                                     message: "cannot read config file: \(problem.message)")],
                                            source: ""))
        }
    }

    public static func load(bytes: [UInt8], file: String, limits: SpecLimits = SpecLimits(),
                            tomlVersion: TOMLVersion = .default) -> Result<LoadedConfig, ConfigLoadError> {
        let source = String(decoding: bytes, as: UTF8.self)
        let root: TOMLTable
        do {
            root = try TOML.parse(bytes, file: file, version: tomlVersion)
        } catch {
            return .failure(ConfigLoadError(code: .invalid, file: file, diagnostics: error.diagnostics, source: source))
        }
        let (config, diags) = TocsinConfiguration.decodePartially(root, file: file, limits: limits, source: bytes)
        if diags.isEmpty { return .success(LoadedConfig(file: file, source: source, configuration: config)) }
        var error = ConfigLoadError(code: .invalid, file: file, diagnostics: diags, source: source)
        error.partial = LoadedConfig(file: file, source: source, configuration: config)
        return .failure(error)
    }

    /// Reads a regular file of at most `maxFileSize` bytes without blocking (`RegularFile`).
    static func readFile(_ path: String) -> Result<[UInt8], RegularFile.Problem> {
        RegularFile.read(path, limit: maxFileSize, kind: "a config file")
    }
}
