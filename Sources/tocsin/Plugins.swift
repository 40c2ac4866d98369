import TocsinCore
import TocsinExecBackend
import TocsinLogBackend

/// The backends this binary links. The registry is a value built here and handed to whoever
/// needs it; nothing registers itself globally.
enum Plugins {
    static func registry() -> BackendRegistry {
        BackendRegistry([LogBackendFactory(), ExecBackendFactory()])
    }
}
