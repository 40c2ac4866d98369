import TocsinCore
import TocsinDBusServiceBackend
import TocsinDBusSignalBackend
import TocsinDesktopBackend
import TocsinExecBackend
import TocsinGateway
import TocsinLogBackend
import TocsinMQTTBackend
import TocsinSoundBackend

/// The backends this binary links. The registry is a value built here and handed to whoever
/// needs it; nothing registers itself globally.
enum Plugins {
    /// `link` is the daemon's bus connection; `check` passes none, since it only validates tables.
    static func registry(link: BusLink? = nil) -> BackendRegistry {
        let emit: DBusSignalBackend.Emit
        var prepare: DBusSignalBackend.Prepare = { _ in }
        let bus: ServiceBus
        if let link {
            emit = link.firedEmitter()
            prepare = link.firedPreparer()
            bus = ServiceBus(current: { link.current }, connections: { link.connections() })
        } else {
            emit = { firings in BatchHandOff(errors: firings.map { _ in DeliveryError(.unavailable, "not connected to a bus") }) }
            bus = .none
        }
        return BackendRegistry([
            LogBackendFactory(), ExecBackendFactory(), DBusSignalBackendFactory(emit: emit, prepare: prepare), DBusServiceBackendFactory(bus: bus),
            DesktopBackendFactory(), SoundBackendFactory(), MQTTBackendFactory(),
        ])
    }
}
