import TocsinConfig
import TocsinTime

/// Notifications that arrive from other machines of the fleet (`fleet = true` there).
extension TocsinCenter {
    /// Schedules a notification another machine shared. It is a run-time notification here too,
    /// so a config reload (which replaces only config-defined ones) never cancels it. Backends
    /// named there but not configured here are left out; with none left, this machine's default
    /// targets deliver it (every machine still rings or pops up).
    func scheduleFromFleet(_ spec: NotificationSpec) async throws(CenterError) {
        var spec = spec
        if let names = spec.backends {
            let here = names.filter(machine.backendNames.contains)
            spec.backends = here.isEmpty ? nil : here
        }
        try await schedule(spec, client: nil, share: false)
    }

    /// A snooze given on another machine: until the same instant here, whatever the default.
    @discardableResult
    func snoozeFromFleet(_ key: String, until: Instant) async throws(CenterError) -> Instant {
        try await submit(.snoozeUntil(key, until)).instant
    }
}
