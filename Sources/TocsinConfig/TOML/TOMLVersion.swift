/// The TOML specification a document is read against. 1.1 is the default because it is what
/// users write (multi-line inline tables, `07:30`); 1.0 stays available, exactly, for configs
/// that other TOML 1.0 tools must also read.
public enum TOMLVersion: String, Sendable, CaseIterable, CustomStringConvertible {
    case v1_0 = "1.0"
    case v1_1 = "1.1"

    public static let `default` = TOMLVersion.v1_1

    /// Accepts "1.0"/"1.1" and the full "1.0.0"/"1.1.0", as a command-line option would give them.
    public init?(_ text: String) {
        switch text {
        case "1.0", "1.0.0": self = .v1_0
        case "1.1", "1.1.0": self = .v1_1
        default: return nil
        }
    }

    /// "1.1": the spelling `--toml-version` takes and its help shows.
    public var description: String { rawValue }
}

extension TOMLParser {
    /// Features a 1.0 document may not use, named as a diagnostic names them.
    enum Feature {
        case multilineInlineTable, inlineTableTrailingComma, escapeE, escapeX, timeWithoutSeconds

        var message: String {
            switch self {
            case .multilineInlineTable: return "inline tables may span lines only in TOML 1.1"
            case .inlineTableTrailingComma: return "a trailing comma in an inline table is allowed only in TOML 1.1"
            case .escapeE: return "the escape '\\e' is allowed only in TOML 1.1"
            case .escapeX: return "the escape '\\xHH' is allowed only in TOML 1.1"
            case .timeWithoutSeconds: return "a time without seconds is allowed only in TOML 1.1"
            }
        }
    }

    /// In 1.0 mode, reports the 1.1 feature used at `offset`; parsing then goes on as 1.1 would,
    /// so the rest of the document is still checked and one use of a feature is one message.
    @inline(__always) mutating func require(_ feature: Feature, at offset: Int) {
        if version == .v1_0 { report(feature.message + " (reading as TOML 1.0)", at: offset) }
    }
}
