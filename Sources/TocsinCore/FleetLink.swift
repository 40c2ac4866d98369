import TocsinModel
import TocsinSystem

/// What the center tells the `[fleet]` backend about notifications scheduled at run time, so it
/// can share those asked for with `fleet = true` with the other machines.
///
/// A hook handed over as a value by the backend itself (`DeliveryBackend.fleetLink`), so the center
/// knows nothing of MQTT and there is no global. Called after the change is durable here: a
/// machine never tells the fleet about something it could still roll back.
public protocol FleetLink: Sendable {
    /// `n` was scheduled or replaced here; `fleet`: share it (its trigger is already resolved, so
    /// `after 1h` means the same instant everywhere). With `fleet` false, a key shared before is
    /// now this machine's own.
    func scheduled(_ n: Notification, fleet: Bool) async
    /// `key` was cancelled here; shared only if it was a fleet notification.
    func cancelled(key: String) async
}

extension DeliveryBackend {
    public var fleetLink: (any FleetLink)? { nil }
}
