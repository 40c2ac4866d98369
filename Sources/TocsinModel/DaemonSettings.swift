public import TocsinTime

public enum LogLevel: String, Hashable, Sendable, CaseIterable {
    case trace, debug, info, notice, warning, error, critical
}

/// One `[daemon]` key, declared once in `DaemonKeys`: its name and type, its default, the range
/// the reader accepts and its one-line doc. The reader (`DaemonSettings.decode`), the schema's
/// key list (`DaemonSettings.keys`), `DaemonSettings`' own defaults and the engine's
/// `CenterOptions` all take them from there, so a default or a bound cannot differ between them.
public struct DaemonKey<Value: Sendable>: Sendable {
    public let name: String
    /// As the README's table names it: `string`, `integer`, `duration`.
    public let type: String
    /// What applies when the key is absent. nil for a key whose fallback is not a constant
    /// (`state_dir`: `$XDG_STATE_HOME`; `timezone`: `$TZ`; `max_message_size`: by the bus).
    public let defaultValue: Value
    /// As written, with `{default}` and `{range}` where `shownDefault` and `shownRange` go, so a
    /// number is written once.
    let docTemplate: String
    let shownDefault: String
    let shownRange: String
    /// Reads the key as written, reporting what is refused (type, range); nil when absent or refused.
    let read: @Sendable (inout any FieldReader) -> Value?

    init(name: String, type: String, defaultValue: Value, doc: String, shownDefault: String = "",
         shownRange: String = "", read: @escaping @Sendable (inout any FieldReader) -> Value?) {
        self.name = name; self.type = type; self.defaultValue = defaultValue
        docTemplate = doc; self.shownDefault = shownDefault; self.shownRange = shownRange
        self.read = read
    }

    /// Filled in when asked (the schema listing), not when the key table is built: the daemon
    /// reads its keys at every start, and String.replacing is the only code it would run from
    /// the string-processing library, whose pages it would then keep resident.
    public var doc: String {
        docTemplate.replacing("{default}", with: shownDefault).replacing("{range}", with: shownRange)
    }

    public var field: NotificationFields.Field { .init(name: name, type: type, summary: doc) }
}

extension DaemonKey where Value == String? {
    static func string(_ name: String, doc: String) -> Self {
        Self(name: name, type: "string", defaultValue: nil, doc: doc) { r in r.string(name).map { .some($0) } }
    }
}

extension DaemonKey where Value: RawRepresentable & CaseIterable, Value.RawValue == String {
    /// One of an enumeration's raw values.
    static func choice(_ name: String, default d: Value, doc: String) -> Self {
        Self(name: name, type: "string", defaultValue: d, doc: doc, shownDefault: d.rawValue) { r in
            r.choice(name, Value.allCases.map { ($0.rawValue, $0) })
        }
    }
}

extension DaemonKey where Value == Int {
    static func integer(_ name: String, default d: Int, in range: ClosedRange<Int64>, doc: String) -> Self {
        Self(name: name, type: "integer", defaultValue: d, doc: doc, shownDefault: "\(d)") { r in
            r.integer(name, in: range).map { Int($0) }
        }
    }
}

extension DaemonKey where Value == Int? {
    /// An integer whose absence means "decided elsewhere" (nil).
    static func integer(_ name: String, in range: ClosedRange<Int64>, doc: String) -> Self {
        Self(name: name, type: "integer", defaultValue: nil, doc: doc) { r in
            r.integer(name, in: range).map { .some(Int($0)) }
        }
    }
}

extension DaemonKey where Value == TimeSpan {
    /// A positive span within `range`; a span outside it is refused naming both bounds.
    static func duration(_ name: String, default d: TimeSpan, in range: ClosedRange<TimeSpan>? = nil, doc: String) -> Self {
        let shown = range.map { "\(docText($0.lowerBound)) to \(docText($0.upperBound))" } ?? ""
        return Self(name: name, type: "duration", defaultValue: d, doc: doc, shownDefault: docText(d), shownRange: shown) { r in
            guard let p = r.duration(name, positive: true) else { return nil }
            if let range, !range.contains(p) {
                r.report(name, "'\(name)' is \(p); it must be between \(range.lowerBound) and \(range.upperBound)")
                return nil
            }
            return p
        }
    }
}

extension DaemonKey where Value == Bool {
    static func boolean(_ name: String, default d: Bool, doc: String) -> Self {
        Self(name: name, type: "boolean", defaultValue: d, doc: doc, shownDefault: "\(d)") { r in r.bool(name) }
    }
}

extension DaemonKey where Value == TimeSpan? {
    /// A positive span with no default.
    static func duration(_ name: String, doc: String) -> Self {
        Self(name: name, type: "duration", defaultValue: nil, doc: doc) { r in
            r.duration(name, positive: true).map { .some($0) }
        }
    }
}

extension DaemonKey {
    /// A span as the docs write it: in its largest whole unit (`30d`, not `4w 2d`).
    fileprivate static func docText(_ span: TimeSpan) -> String {
        let units: [(Int64, String)] = [(86_400_000_000, "d"), (3_600_000_000, "h"), (60_000_000, "min"),
                                        (1_000_000, "s"), (1000, "ms")]
        for (unit, suffix) in units where span.microseconds % unit == 0 { return "\(span.microseconds / unit)\(suffix)" }
        return "\(span.microseconds)us"
    }
}

/// The `[daemon]` keys, in the order the README documents them: the one home of each key's
/// default, range and doc.
public enum DaemonKeys: Sendable {
    public static let stateDir = DaemonKey<String?>.string(
        "state_dir", doc: "Where the SQLite state lives (default $XDG_STATE_HOME/tocsin).")
    public static let logLevel = DaemonKey<LogLevel>.choice(
        "log_level", default: .info, doc: "trace, debug, {default} (default), notice, warning, error or critical.")
    public static let missed = DaemonKey<MissedPolicy>.choice(
        "missed", default: .fireOnce, doc: "Default missed-fire policy: skip, {default} (default) or fire-all.")
    public static let maxLate = DaemonKey<TimeSpan?>.duration(
        "max_late", doc: "Default: a missed firing later than this is skipped.")
    public static let maxPending = DaemonKey<Int>.integer(
        "max_pending", default: 1_000_000, in: 1...100_000_000,
        doc: "Limit on pending notifications (default {default}); beyond it Schedule is refused.")
    public static let maxPendingPerClient = DaemonKey<Int>.integer(
        "max_pending_per_client", default: 10_000, in: 1...100_000_000,
        doc: "Per D-Bus client (unique name): limit on pending notifications it scheduled (default {default}).")
    public static let timezone = DaemonKey<String?>.string(
        "timezone", doc: "Default IANA zone (default: $TZ, else the system zone).")
    public static let minPeriod = DaemonKey<TimeSpan>.duration(
        "min_period", default: .seconds(1), in: TimeSpan(microseconds: 1000)...TimeSpan.hours(24),
        doc: "Least distance between two firings of one notification (default {default}, {range}).")
    public static let maxMessageSize = DaemonKey<Int?>.integer(
        "max_message_size", in: (1 << 20)...(128 << 20),
        doc: "Largest D-Bus message the daemon sends, in bytes (default: \(sessionBusMessageLimit) on the session bus, else \(unconfiguredBusMessageLimit)).")
    /// `max_message_size` when unset, by the bus: the session bus's stock config allows more than
    /// the protocol's 128 MiB; a dbus-daemon whose config sets no limit (the system bus, a
    /// private test bus) takes 32 MiB.
    public static let sessionBusMessageLimit = 128 << 20
    public static let unconfiguredBusMessageLimit = 32 << 20
    public static let historyMaxEntries = DaemonKey<Int>.integer(
        "history_max_entries", default: 10_000, in: 0...10_000_000,
        doc: "History keeps the newest this many events (default {default}; 0 records none).")
    public static let historyMaxAge = DaemonKey<TimeSpan>.duration(
        "history_max_age", default: .hours(30 * 24), doc: "History drops events older than this (default {default}).")
    public static let wakeAlarms = DaemonKey<Bool>.boolean(
        "wake_alarms", default: true,
        doc: "Arm a CLOCK_REALTIME_ALARM timer so notifications with wake = true bring the machine out of suspend (default {default}).")

    /// Not a `[daemon]` key, but a default of the same engine: `Snooze` without a duration.
    public static let snooze = TimeSpan.minutes(5)
}

/// `[daemon]`: settings of the daemon itself. Each field's default, range and doc is its key's
/// in `DaemonKeys`; `table` binds each key to its field. `timezoneLocation` is the one field that
/// is no key: where the file gives `timezone`, for the unknown-zone error found after decoding.
public struct DaemonSettings: Hashable, Sendable {
    /// nil: `$XDG_STATE_HOME/tocsin`, else `~/.local/state/tocsin`.
    public var stateDirectory = DaemonKeys.stateDir.defaultValue
    public var logLevel = DaemonKeys.logLevel.defaultValue
    public var missed = DaemonKeys.missed.defaultValue
    public var maxLate = DaemonKeys.maxLate.defaultValue
    /// Refused beyond this many pending notifications; nothing already scheduled is dropped.
    public var maxPending = DaemonKeys.maxPending.defaultValue
    /// Per D-Bus client (unique bus name): how many of the notifications it created may be pending
    /// at once, so one runaway client cannot use up `maxPending` for every other.
    public var maxPendingPerClient = DaemonKeys.maxPendingPerClient.defaultValue
    /// The zone for calendar expressions and local date-times without their own; nil: `$TZ`, else the system's.
    public var timezone = DaemonKeys.timezone.defaultValue
    /// Where the `timezone` value is written, for the unknown-zone error found after decoding.
    public var timezoneLocation = SourceLocation(line: 1, column: 1)
    /// The least distance between two firings of one notification: a trigger that would fire
    /// faster is refused (config, `tocsin check`, `Schedule`), and the machine coalesces anything
    /// that still would (a DST change, a row stored under a lower floor).
    public var minPeriod = DaemonKeys.minPeriod.defaultValue
    /// The largest message the daemon sends on the bus. dbus-daemon drops a connection that sends
    /// a message above its `max_message_size`, so replies that would be larger are refused
    /// instead. nil: by the bus (`DaemonSetup.busMessageLimit`): the stock session bus takes what
    /// the protocol allows (128 MiB), a dbus-daemon whose config sets no limit (the system bus,
    /// a private one) 32 MiB.
    public var maxMessageSize = DaemonKeys.maxMessageSize.defaultValue
    /// History (`tocsin history`, D-Bus `History`): the newest this many events are kept (0: none recorded) ...
    public var historyMaxEntries = DaemonKeys.historyMaxEntries.defaultValue
    /// ... and none older than this. Bounded so the state file does not grow without end.
    public var historyMaxAge = DaemonKeys.historyMaxAge.defaultValue
    /// Whether `wake = true` arms the wake-alarm timer; false keeps the machine asleep (the
    /// notifications still fire once it wakes).
    public var wakeAlarms = DaemonKeys.wakeAlarms.defaultValue
    public init() {}

    /// A key bound to the field it sets.
    struct Binding: Sendable {
        let name: String
        let field: @Sendable () -> NotificationFields.Field
        let apply: @Sendable (inout any FieldReader, inout DaemonSettings) -> Void
        init<V>(_ key: DaemonKey<V>, _ set: @escaping @Sendable (inout DaemonSettings, V) -> Void) {
            name = key.name
            field = { key.field }
            apply = { r, s in if let v = key.read(&r) { set(&s, v) } }
        }
    }

    /// Every key, in the order the README documents (and the reader reads) them.
    static let table: [Binding] = [
        Binding(DaemonKeys.stateDir) { $0.stateDirectory = $1 },
        Binding(DaemonKeys.logLevel) { $0.logLevel = $1 },
        Binding(DaemonKeys.missed) { $0.missed = $1 },
        Binding(DaemonKeys.maxLate) { $0.maxLate = $1 },
        Binding(DaemonKeys.maxPending) { $0.maxPending = $1 },
        Binding(DaemonKeys.maxPendingPerClient) { $0.maxPendingPerClient = $1 },
        Binding(DaemonKeys.timezone) { $0.timezone = $1 },
        Binding(DaemonKeys.minPeriod) { $0.minPeriod = $1 },
        Binding(DaemonKeys.maxMessageSize) { $0.maxMessageSize = $1 },
        Binding(DaemonKeys.historyMaxEntries) { $0.historyMaxEntries = $1 },
        Binding(DaemonKeys.historyMaxAge) { $0.historyMaxAge = $1 },
        Binding(DaemonKeys.wakeAlarms) { $0.wakeAlarms = $1 },
    ]

    public static var keys: [NotificationFields.Field] { table.map { $0.field() } }

    /// Reads `[daemon]` from any surface: every key through its table entry, then the unknown
    /// ones reported. The file's reader (TocsinConfig) hands it a TOML table's reader.
    public static func read(from r: inout any FieldReader) -> DaemonSettings {
        var settings = DaemonSettings()
        for b in table { b.apply(&r, &settings) }
        r.finish(known: table.map(\.name))
        return settings
    }
}
