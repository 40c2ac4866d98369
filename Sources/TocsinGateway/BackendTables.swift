import Logging
public import TocsinConfig
public import TocsinCore
import TocsinModel

// Reading `[backend.NAME]` tables is the daemon's job, not the engine's: the engine knows
// backends and their factories; which file declared them, and where, is config business.
extension BackendRegistry {
    /// Builds every declared backend, or reports every problem with its position.
    public func makeBackends(for config: TocsinConfiguration, file: String,
                             environment: BackendEnvironment) -> Result<[any DeliveryBackend], DiagnosticError> {
        var out: [any DeliveryBackend] = []
        var diags: [Diagnostic] = []
        var environment = environment
        environment.fleetBackend = config.fleet?.backend
        for decl in config.backends {
            guard let factory = factory(forType: decl.type) else {
                var message = "unknown backend type '\(Echo.capped(decl.type))' in [backend.\(decl.name)]"
                if let s = Suggestion.closest(to: decl.type, among: typeNames) {
                    message += "; did you mean '\(s)'?"
                } else {
                    message += "; known types: \(typeNames.joined(separator: ", "))"
                }
                diags.append(Diagnostic(file: file, location: decl.typeLocation, message: message))
                continue
            }
            var reader = TableReader(decl.table, context: "[backend.\(decl.name)]")
            reader.accept("type")
            let backend = factory.make(name: decl.name, reading: &reader, environment: environment)
            reader.finish(known: ["type"] + factory.optionKeys)
            diags += reader.issues.map { Diagnostic(file: file, location: $0.location, message: $0.message) }
            if let backend, reader.issues.isEmpty { out.append(backend) }
        }
        if diags.isEmpty { return .success(out) }
        return .failure(DiagnosticError(diags.sorted { $0.location < $1.location }))
    }
}
