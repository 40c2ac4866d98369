import TocsinTime
public import TocsinModel

/// `[backend.NAME]`: an instance of a backend type. Its own keys are read by the type's factory,
/// which the core's registry owns; the config layer only knows `type`.
public struct BackendDeclaration: Sendable {
    public var name: String
    public var type: String
    public var typeLocation: SourceLocation
    /// The whole table, `type` included, so the factory can point at any key.
    public var table: TOMLTable
    public init(name: String, type: String, typeLocation: SourceLocation, table: TOMLTable) {
        self.name = name; self.type = type; self.typeLocation = typeLocation; self.table = table
    }
}

/// `[fleet]`: this daemon is one of several machines sharing answers through an MQTT broker.
public struct FleetSettings: Hashable, Sendable {
    /// The `type = "mqtt"` backend that publishes and also subscribes to the other machines.
    public var backend: String
    public init(backend: String) { self.backend = backend }

    public static let keys: [NotificationFields.Field] = [
        .init(name: "backend", type: "string", summary: "The mqtt backend ([backend.NAME]) that carries acknowledges and snoozes between machines."),
    ]
}

/// A decoded config file.
public struct TocsinConfiguration: Sendable {
    public var daemon = DaemonSettings()
    public var backends: [BackendDeclaration] = []
    public var notifications: [NotificationSpec] = []
    /// `[quiet]`: do-not-disturb hours (see `QuietSettings.swift`).
    public var quiet = QuietSettings()
    public var fleet: FleetSettings?
    public init() {}

    public static let topLevelKeys = ["daemon", "backend", "notification", "quiet", "fleet"]

    /// Decodes the document, collecting every issue of every table.
    public static func decode(_ root: TOMLTable, file: String, limits: SpecLimits = SpecLimits()) -> Result<TocsinConfiguration, DiagnosticError> {
        let (config, diags) = decodePartially(root, file: file, limits: limits)
        return diags.isEmpty ? .success(config) : .failure(DiagnosticError(diags))
    }

    /// Decodes what can be decoded and reports the rest, so later checks (backend options through
    /// the registry) still run on a file with mistakes and every problem is reported in one go.
    /// `source`: the document `root` was parsed from, for positions inside string values.
    public static func decodePartially(_ root: TOMLTable, file: String, limits: SpecLimits = SpecLimits(),
                                       source: [UInt8]? = nil) -> (TocsinConfiguration, [Diagnostic]) {
        var config = TocsinConfiguration()
        var issues: [FieldIssue] = []
        var top = TableReader(root, context: "the top level")
        config.decodeDaemon(&top, &issues, source: source)
        // [fleet] names one of the backends, so they are read first.
        config.decodeBackends(&top, &issues)
        config.decodeFleet(&top, &issues)
        // The floor of this file's notifications is this file's [daemon] min_period.
        var limits = limits
        limits.minPeriod = config.daemon.minPeriod
        config.decodeNotifications(&top, limits: limits, &issues, source: source)
        config.decodeQuiet(&top, &issues, source: source)
        top.finish(known: topLevelKeys)
        issues += top.issues
        issues += config.unknownBackendNames(root)

        let diags = issues.sorted { $0.location < $1.location }.map {
            Diagnostic(file: file, location: $0.location, message: $0.message)
        }
        return (config, diags)
    }
}

// MARK: - One section at a time
//
// Each reads its top-level key through `top` (so `top.finish` knows it was read), puts what it
// decoded into `self` and what was wrong into `issues`, and leaves the other sections alone.
extension TocsinConfiguration {
    private mutating func decodeDaemon(_ top: inout TableReader, _ issues: inout [FieldIssue], source: [UInt8]?) {
        guard let node = top.node("daemon") else { return }
        if case .table(let t) = node.value {
            daemon = DaemonSettings.decode(t, issues: &issues, source: source)
        } else {
            top.report("daemon", "'daemon' must be a table ([daemon]), found \(node.value.typeName)")
        }
    }

    /// `[backend.NAME]`: only the name and `type` here; the rest is the type's factory's.
    private mutating func decodeBackends(_ top: inout TableReader, _ issues: inout [FieldIssue]) {
        guard let node = top.node("backend") else { return }
        guard case .table(let t) = node.value else {
            top.report("backend", "'backend' must be a table of backends ([backend.NAME]), found \(node.value.typeName)")
            return
        }
        for e in t.entries {
            guard case .table(let bt) = e.node.value else {
                issues.append(FieldIssue(field: "backend.\(e.key)", location: e.node.location,
                                         message: "'backend.\(e.key)' must be a table ([backend.\(e.key)]), found \(e.node.value.typeName)"))
                continue
            }
            if let problem = BackendNames.validate(e.key) {
                issues.append(FieldIssue(field: "backend", location: bt.location, message: problem))
                continue
            }
            var r = TableReader(bt, context: "[backend.\(e.key)]")
            if let type = r.requiredString("type") {
                backends.append(BackendDeclaration(name: e.key, type: type, typeLocation: r.valueLocation(of: "type"), table: bt))
            }
            issues += r.issues
        }
    }

    /// `[fleet]`: its backend must be one of the declared mqtt backends.
    private mutating func decodeFleet(_ top: inout TableReader, _ issues: inout [FieldIssue]) {
        guard let node = top.node("fleet") else { return }
        guard case .table(let t) = node.value else {
            top.report("fleet", "'fleet' must be a table ([fleet]), found \(node.value.typeName)")
            return
        }
        var r = TableReader(t, context: "[fleet]")
        if let name = r.requiredString("backend") {
            if let decl = backends.first(where: { $0.name == name }) {
                if decl.type == "mqtt" { fleet = FleetSettings(backend: name) } else {
                    r.report("backend", "[fleet] backend '\(name)' is of type '\(decl.type)'; it must be an mqtt backend")
                }
            } else {
                let mqtt = backends.filter { $0.type == "mqtt" }.map(\.name)
                r.report("backend", BackendNames.unknown(name, in: "[fleet]", among: mqtt,
                                                   otherwise: mqtt.isEmpty ? "declare one with [backend.NAME] type = \"mqtt\"" : nil))
            }
        }
        r.finish(known: FleetSettings.keys.map(\.name))
        issues += r.issues
    }

    /// `[[notification]]`: each decoded alone, then given its key and checked against the others' keys.
    private mutating func decodeNotifications(_ top: inout TableReader, limits: SpecLimits, _ issues: inout [FieldIssue], source: [UInt8]?) {
        guard let node = top.node("notification") else { return }
        guard case .array(let items) = node.value else {
            var message = "'notification' must be an array of tables ([[notification]]), found \(node.value.typeName)"
            // `[notification.standup]` is how other tools name entries: say how this one does,
            // for a name the suggestion can quote as written (a bare key).
            if case .table(let t) = node.value,
               let named = t.entries.first(where: { if case .table = $0.node.value { true } else { false } })?.key,
               named.utf8.count <= 64, !named.isEmpty,
               named.utf8.allSatisfy({ $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: "-") || (48...57).contains($0) || (65...90).contains($0) || (97...122).contains($0) }) {
                message += "; write [[notification]] with key = \"\(named)\" instead of [notification.\(named)]"
            }
            top.report("notification", message)
            return
        }
        var seenKeys: [String: SourceLocation] = [:]
        for (i, item) in items.enumerated() {
            guard case .table(let nt) = item.value else {
                issues.append(FieldIssue(field: "notification", location: item.location,
                                         message: "'notification' must be an array of tables ([[notification]]), found an element of type \(item.value.typeName)"))
                continue
            }
            let decoded = NotificationFields.decode(nt, context: "[[notification]] #\(i + 1)", limits: limits, source: source)
            let key: String?
            switch decoded {
            case .success(let spec):
                // Config notifications need stable keys across reloads: derive one from the position
                // only as a last resort, and say so in the docs.
                key = spec.key ?? "config-\(i + 1)"
            case .failure(let f):
                issues += f.issues
                // An entry with another mistake still holds its key: a second entry with the same
                // key is reported now, not on the run after that mistake is fixed.
                if case .string(let written)? = nt["key"]?.value { key = written } else { key = nil }
            }
            guard let key else { continue }
            let location = nt["key"]?.location ?? nt.location
            if let first = seenKeys[key] {
                issues.append(FieldIssue(field: "key", location: location, message: "duplicate notification key '\(key)' (first defined at \(first))"))
                continue
            }
            seenKeys[key] = location
            if case .success(var spec) = decoded {
                spec.key = key
                notifications.append(spec)
            }
        }
    }

    private mutating func decodeQuiet(_ top: inout TableReader, _ issues: inout [FieldIssue], source: [UInt8]?) {
        guard let node = top.node("quiet") else { return }
        if case .table(let t) = node.value {
            quiet = QuietSettings.decode(t, issues: &issues, source: source)
        } else {
            top.report("quiet", "'quiet' must be a table ([quiet]), found \(node.value.typeName)")
        }
    }

    /// Backend names used by notifications and `[quiet]` that no `[backend.NAME]` declares.
    /// Checked on the raw tables, so a notification with other mistakes still gets this one
    /// reported too.
    private func unknownBackendNames(_ root: TOMLTable) -> [FieldIssue] {
        var issues: [FieldIssue] = []
        let names = Set(backends.map(\.name))
        if case .array(let items)? = root["notification"]?.value {
            for (i, item) in items.enumerated() {
                guard case .table(let nt) = item.value, case .array(let list)? = nt["backends"]?.value else { continue }
                for b in list {
                    guard case .string(let name) = b.value, !names.contains(name) else { continue }
                    let message = BackendNames.unknown(name, in: "[[notification]] #\(i + 1)", among: Array(names),
                                                 otherwise: names.isEmpty ? "no [backend.NAME] is configured" : nil)
                    issues.append(FieldIssue(field: "backends", location: b.location, message: message))
                }
            }
        }
        for (name, location) in quiet.backendLocations where !names.contains(name) {
            let message = BackendNames.unknown(name, in: "[quiet] backends", among: Array(names))
            issues.append(FieldIssue(field: "backends", location: location, message: message))
        }
        return issues
    }
}
