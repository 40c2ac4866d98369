import TocsinModel
import TocsinTime
import TocsinSystem

/// `fleet = true`: what the center tells the `[fleet]` backend (`FleetLink`), and what arrives
/// from the other machines of the fleet.
extension TocsinCenter {
    /// Schedules, then tells the fleet backend (once durable: nothing is shared that could still
    /// roll back). `share`: false for a notification that came from the fleet, which already has it.
    func schedule(_ spec: NotificationSpec, client: NotificationMachine.Client?, share: Bool,
                  fromBackend: Bool = false) async throws(CenterError) -> String {
        // Whether one is configured, not whether it is up: a fleet schedule relayed as the fleet
        // backend shuts down is still applied (that backend has already counted it as handled).
        if spec.fleet && fleetBackend == nil {
            throw CenterError(.invalidArguments, "'fleet' needs a [fleet] section in the daemon's config (an mqtt backend shared by the machines)", field: "fleet")
        }
        // The backends' names only when the spec names backends: building the list copied the
        // whole machine struct (two dozen references retained and released) on every Schedule.
        let n = try resolver.resolve(spec, source: .runtime, now: clock.now(),
                                     backendNames: spec.backends == nil ? [] : machine.backendNames)
        let reply: Reply
        do throws(CenterError) {
            reply = try await submit(.schedule(n, replace: spec.replace, client: client), fromBackend: fromBackend)
        } catch {
            throw error.naming(spec.trigger)
        }
        // `replace = false` that kept an existing one changed nothing: nothing to tell the fleet.
        // The batch says so, as it applied the request, not a look before it.
        if share, case .scheduled(_, changed: true) = reply, let fleet { await fleet.scheduled(n, fleet: spec.fleet) }
        return reply.key
    }

    /// Schedules a notification another machine shared. It is a run-time notification here too,
    /// so a config reload (which replaces only config-defined ones) never cancels it. Backends
    /// named there but not configured here are left out; with none left, this machine's default
    /// targets deliver it (every machine still rings or pops up).
    func scheduleFromFleet(_ spec: NotificationSpec) async throws(CenterError) {
        // This machine's floor, which the sender's need not be: a `Schedule` here decodes against
        // it, and a message another machine (or anything on the broker) sends must not get past it.
        if let v = NotificationFields.floorViolation(spec.trigger, limits: options.limits) {
            throw CenterError(.invalidArguments, v.message, field: v.field)
        }
        var spec = spec
        if let names = spec.backends {
            let here = names.filter(machine.backendNames.contains)
            spec.backends = here.isEmpty ? nil : here
        }
        _ = try await schedule(spec, client: nil, share: false, fromBackend: true)
    }

    /// A snooze given on another machine: until the same instant here, whatever the default.
    @discardableResult
    func snoozeFromFleet(_ key: String, until: Instant) async throws(CenterError) -> Instant {
        if let refusal = TimeLimit.refusal(of: until, field: "until", value: "@\(until.microseconds)us") {
            throw CenterError(.invalidArguments, refusal, field: "until")
        }
        return try await submit(.snoozeUntil(key, until), fromBackend: true).instant
    }
}
