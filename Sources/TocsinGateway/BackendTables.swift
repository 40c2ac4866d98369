import Logging
public import TocsinConfig
public import TocsinCore
public import TocsinModel

// Reading `[backend.NAME]` tables is the daemon's job, not the engine's: the engine knows
// backends and their factories; which file declared them, and where, is config business.
extension BackendRegistry {
    /// Reads and checks every declared backend table into its factory's options, or reports
    /// every problem with its position. Constructs nothing. `source`: the file's bytes, for the
    /// position of a mistake inside a string value (`TableReader.source`).
    public func plan(for config: TocsinConfiguration, file: String, source: [UInt8]? = nil,
                     environment: BackendEnvironment) -> Result<BackendPlan, DiagnosticError> {
        var environment = environment
        environment.fleetBackend = config.fleet?.backend
        var out: [PlannedBackend] = []
        var diags: [Diagnostic] = []
        for decl in config.backends {
            guard let factory = factory(forType: decl.type) else {
                diags.append(Diagnostic(file: file, location: decl.typeLocation, message: unknownType(decl.type, in: decl.name)))
                continue
            }
            var reader = TableReader(decl.table, context: "[backend.\(decl.name)]", source: source)
            reader.accept("type")
            let options = BackendRegistry.options(of: factory, reading: &reader, environment: environment)
            reader.finish(known: ["type"] + factory.optionKeys)
            diags += reader.issues.map { Diagnostic(file: file, location: $0.location, message: $0.message) }
            if let options, reader.issues.isEmpty {
                out.append(PlannedBackend(name: decl.name, typeName: decl.type, location: decl.typeLocation, options: options))
            }
        }
        if diags.isEmpty { return .success(BackendPlan(file: file, backends: out, fleetBackend: environment.fleetBackend)) }
        return .failure(DiagnosticError(diags.sorted { $0.location < $1.location }))
    }

    /// Both steps at once, for tests and tools that build backends straight from a config.
    public func makeBackends(for config: TocsinConfiguration, file: String,
                             environment: BackendEnvironment) -> Result<[any DeliveryBackend], DiagnosticError> {
        plan(for: config, file: file, environment: environment).flatMap { make($0, environment: environment) }
    }
}
