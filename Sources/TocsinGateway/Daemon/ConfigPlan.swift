import Glibc
public import Logging
public import TocsinConfig
public import TocsinCore
public import TocsinTime
public import TocsinModel

/// Where a config is read from. A value, so the daemon can read it again on its own at each
/// reload: the executable decides which file, the library does the reading.
public struct ConfigSource: Sendable {
    enum Origin: Sendable {
        case file(String)
        /// The file when it exists, else the built-in texts.
        case fileOrBuiltIn(String, builtIn: [String], name: String)
        /// Texts in memory, tried in order.
        case text([String], name: String)
    }
    let origin: Origin
    let tomlVersion: TOMLVersion

    /// A file that must exist (`--config`, `tocsin check FILE`).
    public static func file(_ path: String, tomlVersion: TOMLVersion = .default) -> ConfigSource {
        ConfigSource(origin: .file(path), tomlVersion: tomlVersion)
    }

    /// The default path, looked for at every read: a config written after the daemon started
    /// is picked up by the next reload. Without it, the first of `builtIn` that passes every
    /// check is used (a built-in alarm needs a player, so the default without it is a fallback).
    public static func file(_ path: String, tomlVersion: TOMLVersion = .default, orBuiltIn builtIn: [String],
                            named name: String) -> ConfigSource {
        ConfigSource(origin: .fileOrBuiltIn(path, builtIn: builtIn, name: name), tomlVersion: tomlVersion)
    }

    /// Config text in memory (tests, built-in defaults); `name` stands for the file in diagnostics.
    public static func text(_ text: String, name: String, tomlVersion: TOMLVersion = .default) -> ConfigSource {
        ConfigSource(origin: .text([text], name: name), tomlVersion: tomlVersion)
    }
}

/// A config that passed every check, its backend tables read into typed options. Nothing is
/// constructed yet: this is where `tocsin check` stops.
public struct ValidatedConfig: Sendable {
    public let loaded: LoadedConfig
    public let backends: BackendPlan
    /// What the daemon accepts but will not do (a notification that never fires: kept, skipped
    /// and logged), found only when asked for (`tocsin check`): a load finds it anyway.
    public var warnings: [Diagnostic] = []
    public var configuration: TocsinConfiguration { loaded.configuration }
}

/// A validated config with its backends constructed, ready for the engine.
public struct BuiltConfig: Sendable {
    public let config: ValidatedConfig
    /// The backends, and which of them are instances already running (a reload's unchanged tables).
    public let running: RunningBackends
    public var backends: [any DeliveryBackend] { running.instances }

    /// The last step of a reload, and the one place a reload reaches the engine: the backends,
    /// the notifications and the `[quiet]` settings change together, in one engine transaction.
    public func apply(to center: TocsinCenter) async throws(CenterError) -> ReloadReport {
        try await center.reload(backends: backends, keeping: running.kept, specs: config.configuration.notifications,
                                quiet: config.configuration.quiet)
    }

    /// The first step at start-up, before the daemon takes its bus name (a `[quiet]` the engine
    /// refuses is the config's fault, reported before anyone can call): the quiet settings the
    /// persisted quiet state is restored against when the state loads.
    func prepare(_ center: TocsinCenter) async throws(CenterError) {
        try await center.setQuiet(config.configuration.quiet)
    }

    /// The last step at start-up: the backends and the state, then the notifications.
    func start(on center: TocsinCenter) async throws(CenterError) -> ReloadReport {
        try await center.start(backends: backends)
        return try await center.applyConfig(config.configuration.notifications)
    }
}

/// The one path a config takes, for `tocsin check`, start-up and every reload: load (read and
/// parse) → validate (backend tables into typed options, unknown types, zone names, calendar
/// expressions in their zones) → build each backend once → apply to the engine. Validation never
/// constructs a backend; `check` stops there.
public struct ConfigPlan: Sendable {
    public var source: ConfigSource
    /// The backend types linked, as the binary (or a test) gives them.
    public var registry: BackendRegistry
    /// The process environment: `$TZ`, and what backends read (`$PATH` for a player).
    public var environment: [String: String]

    public init(source: ConfigSource, registry: BackendRegistry, environment: [String: String]) {
        self.source = source; self.registry = registry; self.environment = environment
    }

    /// Loads and validates, reporting every problem (parse and schema errors, then what only
    /// the runtime knows) with its position. `phase` hears when reading ends and checking begins.
    /// With `skippedAt`, the notifications a load at that instant would keep but never fire are
    /// warnings too: `tocsin check` asks at the real now, the daemon not at all (its engine finds
    /// and logs them at load, and resolving every entry twice would double a reload's cost).
    public func validate(skippedAt now: Instant? = nil, phase: (String) -> Void = { _ in }) -> Result<ValidatedConfig, ConfigLoadError> {
        switch source.origin {
        case .file(let path):
            return validate(ConfigLoader.load(file: path, tomlVersion: source.tomlVersion), now: now, phase: phase)
        case .fileOrBuiltIn(let path, let builtIn, let name):
            if access(path, F_OK) == 0 {
                return validate(ConfigLoader.load(file: path, tomlVersion: source.tomlVersion), now: now, phase: phase)
            }
            // The built-in texts are ours, written for the default TOML version whatever `--toml-version` says.
            return firstValid(builtIn, name: name, tomlVersion: .default, now: now, phase: phase)
        case .text(let texts, let name):
            return firstValid(texts, name: name, tomlVersion: source.tomlVersion, now: now, phase: phase)
        }
    }

    /// Constructs each planned backend once, with this plan's registry (which may hold live
    /// wiring the one that validated did not: the daemon's bus link). A reload passes the
    /// backends running: each whose table is unchanged is kept, not constructed again.
    public func build(_ config: ValidatedConfig, logger: Logger, stateDirectory: String,
                      reusing running: RunningBackends? = nil) -> Result<BuiltConfig, ConfigLoadError> {
        let environment = BackendEnvironment(logger: logger, environment: environment, stateDirectory: stateDirectory)
        switch registry.make(config.backends, environment: environment, reusing: running) {
        case .success(let built): return .success(BuiltConfig(config: config, running: built))
        case .failure(let e):
            return .failure(ConfigLoadError(code: .invalid, file: config.loaded.file, diagnostics: e.diagnostics,
                                            source: config.loaded.source))
        }
    }

    private func firstValid(_ texts: [String], name: String, tomlVersion: TOMLVersion, now: Instant?, phase: (String) -> Void) -> Result<ValidatedConfig, ConfigLoadError> {
        var last = Result<ValidatedConfig, ConfigLoadError>.failure(
            ConfigLoadError(code: .unreadable, file: name, diagnostics: [], source: ""))
        for text in texts {
            last = validate(ConfigLoader.load(bytes: Array(text.utf8), file: name, tomlVersion: tomlVersion), now: now, phase: phase)
            if case .success = last { return last }
        }
        return last
    }

    /// A file that did not decode may still be checked further (`partial`): every problem of
    /// the file is reported at once, not one layer per run.
    private func validate(_ read: Result<LoadedConfig, ConfigLoadError>, now: Instant?, phase: (String) -> Void) -> Result<ValidatedConfig, ConfigLoadError> {
        switch read {
        case .success(let loaded):
            phase("checking backends, zones and \(loaded.configuration.notifications.count) notifications")
            return check(loaded, earlier: [], now: now)
        case .failure(let e):
            guard let partial = e.partial else { return .failure(e) }
            phase("checking backends, zones and \(partial.configuration.notifications.count) notifications")
            return check(partial, earlier: e.diagnostics, now: now)
        }
    }

    private func check(_ loaded: LoadedConfig, earlier: [Diagnostic], now: Instant?) -> Result<ValidatedConfig, ConfigLoadError> {
        var diags = earlier
        // Validation logs nothing: its findings are the diagnostics.
        let silent = Logger(label: "tocsin.check") { _ in SwiftLogNoOpLogHandler() }
        let backends: BackendPlan?
        let source = Array(loaded.source.utf8)
        switch registry.plan(for: loaded.configuration, file: loaded.file, source: source,
                             environment: BackendEnvironment(logger: silent, environment: environment)) {
        case .success(let plan): backends = plan
        case .failure(let e): backends = nil; diags += e.diagnostics
        }
        diags += ZoneCheck(file: loaded.file, source: source, environment: environment).diagnostics(for: loaded.configuration)
        let warnings = now.map { skipped(loaded, at: $0) } ?? []
        if diags.isEmpty, let backends {
            var validated = ValidatedConfig(loaded: loaded, backends: backends)
            validated.warnings = warnings
            if now != nil, loaded.configuration.backends.isEmpty {
                // Valid (a daemon kept only for its D-Bus API and history), but rarely meant; not
                // said beside errors, which are what such a file needs first.
                validated.warnings.insert(Diagnostic(file: loaded.file, location: SourceLocation(line: 1, column: 1), severity: .warning,
                                                     message: "no backend is configured ([backend.NAME]): notifications fire and are delivered nowhere"), at: 0)
            }
            return .success(validated)
        }
        return .failure(ConfigLoadError(code: .invalid, file: loaded.file, diagnostics: (diags + warnings).sorted { $0.location < $1.location },
                                        source: loaded.source))
    }

    /// The daemon keeps a notification that never fires and skips it (docs/CONFIG.md); here it is
    /// a warning at its trigger's value, for the same entries and with the same reason, both from
    /// `CenterOptions.neverFiring`. Options the `[daemon]` table cannot give are an error found
    /// elsewhere (its zone), and then nothing is judged.
    private func skipped(_ loaded: LoadedConfig, at now: Instant) -> [Diagnostic] {
        let config = loaded.configuration
        guard let options = try? CenterOptions(settings: config.daemon, environment: environment) else { return [] }
        return options.neverFiring(config.notifications, backendNames: config.backends.map(\.name), now: now).map { entry in
            Diagnostic(file: loaded.file, location: entry.spec.triggerValueLocation, severity: .warning,
                       message: "notification '\(entry.spec.key ?? "")' never fires, so the daemon skips it: \(entry.reason.message)")
        }
    }
}

/// Zone names and calendar expressions checked at load, with positions: the engine checks them
/// again when it resolves (it serves D-Bus requests too), but without the file's lines.
/// Every name is looked up through `ZoneCache`, the one home of zone-name rules.
private struct ZoneCheck {
    let file: String
    let source: [UInt8]
    let environment: [String: String]
    let zones = ZoneCache()

    func diagnostics(for config: TocsinConfiguration) -> [Diagnostic] {
        var diags: [Diagnostic] = []
        let daemonZone = config.daemon.timezone
        // The zone a notification or window runs in: its own, else [daemon]'s, else $TZ or the system's.
        func local(_ own: String?) -> TimeZoneRules {
            (own ?? daemonZone).flatMap { try? zones.rules($0) } ?? zones.directory.defaultZone(tz: environment["TZ"])
        }
        func known(_ name: String?, in place: String, at location: SourceLocation) -> Bool {
            guard let name else { return true }
            do { _ = try zones.zone(named: name, in: place) } catch {
                diags.append(Diagnostic(file: file, location: location, message: error.message))
                return false
            }
            return true
        }
        _ = known(daemonZone, in: "[daemon] 'timezone'", at: config.daemon.timezoneLocation)
        for n in config.notifications {
            _ = known(n.timezone, in: "'timezone' of notification '\(n.key ?? "")'", at: n.timezoneLocation)
            if case .onCalendar(let c) = n.trigger {
                do { _ = try c.resolvingZone(local: local(n.timezone), rules: zones.rules) } catch {
                    // Worded and placed as a zone word the parser refuses: at the word, in the string.
                    diags.append(Diagnostic(file: file, location: inString(n.triggerValueLocation, column: error.column),
                                            message: "invalid 'on_calendar': \(error.message)"))
                }
            }
        }
        for (i, w) in config.quiet.windows.enumerated() {
            guard known(w.timezone, in: "[[quiet.window]] #\(i + 1) 'timezone'", at: w.timezoneLocation) else { continue }
            do { _ = try w.onCalendar.resolvingZone(local: local(w.timezone), rules: zones.rules) } catch {
                diags.append(Diagnostic(file: file, location: inString(w.calendarLocation, column: error.column),
                                        message: "\(error.message) in [[quiet.window]] #\(i + 1) 'on_calendar'"))
            }
        }
        return diags
    }

    /// The position of `column` (1-based, in the value's text) of a string value starting at
    /// `value`, its opening quote, as `TableReader.parse` places it.
    func inString(_ value: SourceLocation, column: Int) -> SourceLocation {
        TOMLStringPositions.place(ofCharacter: column, inStringAt: value, source: source)
    }
}
