public import Logging
public import TocsinModel
public import TocsinTime
public import TocsinSystem

/// Why a backend failed to deliver; the center logs it and retries with backoff.
public struct DeliveryError: Error, Hashable, Sendable, CustomStringConvertible {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        /// The closed set of codes: clients match on the static members below but cannot make
        /// new ones. Raw values are the stable spellings that messages and tests show.
        private enum _Code: String, Hashable, Sendable {
            case unavailable
            case failed
            case timedOut = "timed-out"
            case permanent
        }

        private let code: _Code

        private init(_ code: _Code) { self.code = code }

        /// The stable spelling, e.g. `unavailable`.
        public var description: String { code.rawValue }

        /// Worth retrying: the server or program may come back.
        public static let unavailable = Code(.unavailable)
        public static let failed = Code(.failed)
        public static let timedOut = Code(.timedOut)
        /// Retrying cannot help (bad file, refused input).
        public static let permanent = Code(.permanent)
    }
    public var code: Code
    public var message: String
    public init(_ code: Code, _ message: String) { self.code = code; self.message = message }
    public var description: String { "\(code): \(message)" }
}

public enum WithdrawReason: String, Hashable, Sendable {
    case cancelled, acknowledged, snoozed, replaced, unanswered, shutdown
}

extension ChildStopCause {
    /// A child stopped because its notification was withdrawn, for this reason.
    public static func withdrawn(_ reason: WithdrawReason) -> Self { .withdrawn(reason: reason.rawValue) }
}

/// Something a backend hears from a person and hands back to the center: a popup button, a
/// dismissed alarm. Lets backends stay ignorant of the center's type.
public enum BackendEvent: Hashable, Sendable {
    case acknowledge(key: String)
    /// nil duration: the notification's or daemon's default snooze.
    case snooze(key: String, duration: TimeSpan?)
    case actionInvoked(key: String, action: String)
    /// A snooze given on another machine of the fleet: it lasts until the same instant here.
    case snoozeUntil(key: String, until: Instant)
    /// A `fleet = true` notification scheduled (or replaced) on another machine, its trigger in
    /// absolute form; scheduled here without being shared again.
    case fleetSchedule(NotificationSpec)
    /// A fleet notification cancelled on another machine.
    case fleetCancel(key: String)
}

/// How an alarm rings: once per `every` until acknowledged, at most `maxRings` times. The center
/// owns this timing (durable, virtual-clock tested); the backend only plays one ring per delivery.
public struct RingPolicy: Hashable, Sendable {
    public var every: TimeSpan
    public var maxRings: UInt32
    public init(every: TimeSpan, maxRings: UInt32) {
        self.every = every
        self.maxRings = maxRings
    }
}

public protocol BackendEventSink: Sendable {
    func send(_ event: BackendEvent)
    /// Whether a popup of `key` would still be up had the daemon not stopped: the center holds
    /// it pending or ringing (not snoozed, unanswered, cancelled or done). For a backend that
    /// finds what an earlier run left shown (after a crash); waits until the state is loaded,
    /// so never await it in `start`. Defaults to true (keep it).
    func stillShown(key: String) async -> Bool
}

extension BackendEventSink {
    public func stillShown(key: String) async -> Bool { true }
}

/// A delivery backend: one configured instance (`[backend.NAME]`) of a backend type.
///
/// ## Implementation requirements
/// - `deliver` may suspend but must honour task cancellation promptly: the center cancels an attempt
///   at its timeout. A backend that ignores cancellation still never blocks other deliveries, because
///   each delivery runs in its own task, but it leaks that task until it returns.
/// - Throw `DeliveryError` with `.unavailable` when a retry may succeed (no server yet) and
///   `.permanent` when it cannot; the center retries with bounded backoff only the former.
/// - `deliver` is called again for the same occurrence after a crash between delivery and its record
///   (at-least-once); a backend that can replace by key (popups) should.
/// - `withdraw` is called on cancel, acknowledge and snooze for every key the backend may hold; it must
///   be cheap for keys it never saw.
/// - Never call back into the center synchronously from `deliver`; send `BackendEvent`s to the sink given at start.
public protocol DeliveryBackend: Sendable {
    /// The instance name from the config (`desktop`, `alarm`).
    var name: String { get }
    /// Non-nil for an alarm: a delivery here waits for a person, and the center delivers again
    /// (reason `.ring`) every `every` until the key is acknowledged, snoozed or `maxRings` is reached.
    var ringPolicy: RingPolicy? { get }
    /// Whether an alarm's rings come here too (reason `.ring`), when the alarm is routed here and
    /// to an alarm backend. A popup backend's do: a person who closed the popup while the sound
    /// rings on needs its buttons back, and the popup is where they acknowledge.
    var followsRings: Bool { get }
    func start(events: any BackendEventSink) async
    func deliver(_ firing: Firing) async throws(DeliveryError)
    func withdraw(key: String, reason: WithdrawReason) async
    /// As `withdraw`, with the instant a snooze lasts until (reason `.snoozed`), for backends that
    /// tell others about it (the fleet). Defaults to `withdraw(key:reason:)`.
    func withdraw(key: String, reason: WithdrawReason, snoozedUntil: Instant?) async
    /// The hook through which the center shares `fleet = true` notifications; nil for all but the
    /// backend `[fleet]` names.
    var fleetLink: (any FleetLink)? { get }
    func shutdown() async
    /// Whether a reload that replaces this instance with another of the same name shuts this one
    /// down. True where what the instance started (a playing sound) only it can stop: withdraws
    /// go to the new instance. False (the default) where the new instance reaches the same
    /// things (popups by their server's ids), so a reload does not close them.
    var shutsDownWhenReplaced: Bool { get }
    /// Whether a delivery could succeed now, for `tocsin status`: a person asking why nothing pops
    /// up needs the reason ("no notification server") without reading retry warnings in the log.
    /// Must be cheap and must not deliver anything.
    func health() async -> BackendHealth
    /// What this backend does with a firing during quiet hours unless `[quiet] backends` says
    /// otherwise: things a person sees or hears (popups, sound) hold; machine-facing ones
    /// (signals, log, programs) deliver, so subscribers still see `Fired`.
    var quietMode: QuietMode { get }
    /// The machine is about to sleep (true) or has resumed (false), as logind announces it. A
    /// backend with something running (a ringing sound) pauses it cleanly and goes on after.
    func systemSleep(_ sleeping: Bool) async
}

/// A backend's answer to "could you deliver now?". Deliberately two states: anything finer
/// (degraded, flapping) would need history the backends do not keep.
public enum BackendHealth: Hashable, Sendable, CustomStringConvertible {
    case ok
    /// Deliveries fail now, for this reason, e.g. "no notification server".
    case unavailable(String)

    public var description: String {
        switch self {
        case .ok: "ok"
        case .unavailable(let why): why
        }
    }
}

extension DeliveryBackend {
    public var ringPolicy: RingPolicy? { nil }
    public var followsRings: Bool { false }
    public var quietMode: QuietMode { .deliver }
    public var shutsDownWhenReplaced: Bool { false }
    /// Backends that cannot know (a log line, a program run per firing) count as healthy.
    public func health() async -> BackendHealth { .ok }
    public func start(events: any BackendEventSink) async {}
    public func withdraw(key: String, reason: WithdrawReason) async {}
    public func withdraw(key: String, reason: WithdrawReason, snoozedUntil: Instant?) async {
        await withdraw(key: key, reason: reason)
    }
    public func shutdown() async {}
    public func systemSleep(_ sleeping: Bool) async {}
}

/// What a factory gets besides its table.
public struct BackendEnvironment: Sendable {
    public var logger: Logger
    public var environment: [String: String]
    /// Where the daemon keeps its state, for a backend with durable state of its own (the mqtt
    /// backend's idempotency ids); nil when only validating (`tocsin check`).
    public var stateDirectory: String?
    /// The backend `[fleet]` names (it also subscribes to the other machines); set by the registry
    /// from the config, so each factory need not read the whole file.
    public var fleetBackend: String?
    public init(logger: Logger, environment: [String: String] = [:], stateDirectory: String? = nil, fleetBackend: String? = nil) {
        self.logger = logger; self.environment = environment
        self.stateDirectory = stateDirectory; self.fleetBackend = fleetBackend
    }
}

/// Builds instances of one backend type. Reading a `[backend.NAME]` table and building the
/// backend are separate steps joined by a typed `Options` value: the table's rules and messages
/// stay with the factory, while tests and other surfaces build a backend from options directly,
/// without writing TOML.
public protocol BackendFactory: Sendable {
    /// Equatable so a reload can tell an unchanged table, and keep its running instance.
    associatedtype Options: Sendable & Equatable
    /// The `type = "..."` this factory answers to.
    var typeName: String { get }
    /// The keys of its table besides `type`, for "unknown key; did you mean" diagnostics.
    var optionKeys: [String] { get }
    /// Reads and checks the options; every problem is recorded in `reader` with its position.
    /// nil when any was found.
    func options(from reader: inout some FieldReader, environment: BackendEnvironment) -> Options?
    func make(name: String, options: Options, environment: BackendEnvironment) -> any DeliveryBackend
}

extension BackendFactory {
    /// Both steps, for one table: nil when the table had a problem (recorded in `reader`).
    public func make(name: String, reading reader: inout some FieldReader, environment: BackendEnvironment) -> (any DeliveryBackend)? {
        let before = reader.issues.count
        guard let options = options(from: &reader, environment: environment), reader.issues.count == before else { return nil }
        return make(name: name, options: options, environment: environment)
    }

    /// The second step for options another instance of this type read: nil when they are not
    /// this type's options. Opening the existential here is what lets a plan checked with one
    /// registry be built with another of the same types.
    fileprivate func make(_ planned: PlannedBackend, environment: BackendEnvironment) -> (any DeliveryBackend)? {
        guard let options = planned.options as? Options else { return nil }
        return make(name: planned.name, options: options, environment: environment)
    }

    /// Whether two tables read into the same options (false when either is not this type's).
    fileprivate func sameOptions(_ a: PlannedBackend, _ b: PlannedBackend) -> Bool {
        guard let x = a.options as? Options, let y = b.options as? Options else { return false }
        return x == y
    }
}

/// One `[backend.NAME]` table read into its factory's typed options: checked, not built.
/// Options are plain data while the factory holds the live wiring (the daemon's bus link), so
/// `tocsin check` and the daemon's own start-up check a config with a registry that has no bus,
/// and the daemon then builds it with the registry that has one.
public struct PlannedBackend: Sendable {
    /// The instance name, `NAME` in `[backend.NAME]`.
    public let name: String
    /// The `type = "..."` the options were read for.
    public let typeName: String
    /// Where the table's type was written, for a diagnostic at build time.
    public let location: SourceLocation
    /// The factory's `Options`, type-erased so one list holds every backend type.
    let options: any Sendable

    public init(name: String, typeName: String, location: SourceLocation, options: any Sendable) {
        self.name = name; self.typeName = typeName; self.location = location; self.options = options
    }
}

/// Every backend table of a config, checked. What `BackendRegistry.make` needs besides the
/// tables: the backend `[fleet]` names, which only its factory's `make` is told.
public struct BackendPlan: Sendable {
    public let file: String
    public let backends: [PlannedBackend]
    public let fleetBackend: String?

    public init(file: String, backends: [PlannedBackend], fleetBackend: String?) {
        self.file = file; self.backends = backends; self.fleetBackend = fleetBackend
    }
}

/// The backends a config runs, with the plan they were built from: what the next reload
/// compares its tables with.
public struct RunningBackends: Sendable {
    public let plan: BackendPlan
    public let instances: [any DeliveryBackend]
    /// The instances carried over from the set running before (their table unchanged): already
    /// started, so the engine neither starts them again nor shuts them down. A reload that
    /// changes nothing of `[backend.alarm]` must not end the ring it is playing, nor an
    /// unchanged `mqtt` backend drop its broker connection.
    public let kept: Set<String>

    public init(plan: BackendPlan, instances: [any DeliveryBackend], kept: Set<String> = []) {
        self.plan = plan; self.instances = instances; self.kept = kept
    }

    /// The running instance for `planned`, when it would be built the same: same type, same
    /// options, the same part in the fleet. What else a factory is given (the logger, the
    /// process environment, the state directory) does not change while the daemon runs.
    fileprivate func instance(for planned: PlannedBackend, fleetBackend: String?, factory: any BackendFactory) -> (any DeliveryBackend)? {
        guard let was = plan.backends.first(where: { $0.name == planned.name }), was.typeName == planned.typeName,
              (plan.fleetBackend == planned.name) == (fleetBackend == planned.name),
              factory.sameOptions(was, planned) else { return nil }
        return instances.first { $0.name == planned.name }
    }
}

/// Maps backend type names to factories. A value passed to whoever builds backends, never a global:
/// tests build registries with spies, the daemon with the plugins it links.
///
/// Checking and building are separate calls (`plan`, then `make`) so that validating a config
/// (`tocsin check`, every reload before it is applied) never constructs a backend: a backend may
/// open sockets, start threads or read its state when made.
public struct BackendRegistry: Sendable {
    private var factories: [String: any BackendFactory] = [:]

    public init(_ factories: [any BackendFactory] = []) {
        for f in factories { register(f) }
    }

    public mutating func register(_ factory: any BackendFactory) {
        factories[factory.typeName] = factory
    }

    public var typeNames: [String] { factories.keys.sorted() }

    /// The factory for `type = "..."`; nil when the binary links none.
    public func factory(forType name: String) -> (any BackendFactory)? { factories[name] }

    /// Builds each planned backend once, with this registry's factories. Fails only for a plan
    /// checked with a registry that links other types, or other implementations of a type.
    public func make(_ plan: BackendPlan, environment: BackendEnvironment) -> Result<[any DeliveryBackend], DiagnosticError> {
        make(plan, environment: environment, reusing: nil).map(\.instances)
    }

    /// As `make`, keeping each instance of `running` whose table is unchanged instead of
    /// building it again (a reload).
    public func make(_ plan: BackendPlan, environment: BackendEnvironment, reusing running: RunningBackends?) -> Result<RunningBackends, DiagnosticError> {
        var environment = environment
        environment.fleetBackend = plan.fleetBackend
        var out: [any DeliveryBackend] = []
        var kept: Set<String> = []
        var diags: [Diagnostic] = []
        for planned in plan.backends {
            guard let factory = factories[planned.typeName] else {
                diags.append(Diagnostic(file: plan.file, location: planned.location,
                                        message: unknownType(planned.typeName, in: planned.name)))
                continue
            }
            if let running, let same = running.instance(for: planned, fleetBackend: plan.fleetBackend, factory: factory) {
                out.append(same)
                kept.insert(planned.name)
                continue
            }
            guard let backend = factory.make(planned, environment: environment) else {
                diags.append(Diagnostic(file: plan.file, location: planned.location, message:
                    "backend type '\(planned.typeName)' in [backend.\(planned.name)] was checked by another implementation of the type"))
                continue
            }
            out.append(backend)
        }
        if diags.isEmpty { return .success(RunningBackends(plan: plan, instances: out, kept: kept)) }
        return .failure(DiagnosticError(diags))
    }

    /// The first step for one table, type-erased: the factory's options, or nil when the table
    /// had a problem (recorded in `reader`). The daemon layer calls it for each `[backend.NAME]`.
    public static func options<F: BackendFactory>(of factory: F, reading reader: inout some FieldReader,
                                                   environment: BackendEnvironment) -> (any Sendable)? {
        let before = reader.issues.count
        guard let options = factory.options(from: &reader, environment: environment), reader.issues.count == before else { return nil }
        return options
    }

    /// "unknown backend type", with the closest known type or the list of them.
    public func unknownType(_ type: String, in name: String) -> String {
        var message = "unknown backend type '\(Echo.capped(type))' in [backend.\(name)]"
        if let s = Suggestion.closest(to: type, among: typeNames) {
            message += "; did you mean '\(s)'?"
        } else {
            message += "; known types: \(typeNames.joined(separator: ", "))"
        }
        return message
    }
}

/// A backend whose delivery is a non-blocking hand-off (a signal queued on the bus, a log line).
/// The center hands it every firing of a batch in one synchronous call, with no task, timeout or
/// actor hop per firing; a firing it reports as failed with a retryable error goes the ordinary,
/// retrying way.
public protocol BatchDeliveryBackend: DeliveryBackend {
    /// Hands the batch over: one result per firing, and when what was handed over is out.
    func deliver(batch: [Firing]) -> BatchHandOff

    /// Firings claimed ahead of their instant, handed over once their claims are durable, so that
    /// the costly part of a delivery (building a thousand signals took a burst 13-27 ms) is done
    /// before the instant and only the hand-off happens at it. `deliver(batch:)` usually follows
    /// with equal firings, but not always: a request may drop a claim in between, a firing that
    /// goes out late has its own `fired` and `reason`, and quiet hours may route it to other
    /// backends. So a backend uses what it prepared only for an identical firing. Nothing may
    /// reach the outside here, and what was prepared for a firing never delivered must not
    /// accumulate.
    func prepare(batch: [Firing])
}

extension BatchDeliveryBackend {
    public func prepare(batch: [Firing]) {}
}

/// What a batch backend did with a batch.
///
/// A hand-off may still be inside the process when `deliver(batch:)` returns: a signal queued on
/// the bus connection is written only as the bus reads. The center records a delivery (after
/// which a crash no longer reports its firing as interrupted) only once it is out, or a `kill -9`
/// in between would lose the firing and report nothing. Only the batch path waits: a single
/// delivery (`deliver(_:)`: a retry, or one queued behind its key) runs under the delivery
/// timeout, and a timeout would repeat a hand-off that is only slow to leave.
public struct BatchHandOff: Sendable {
    /// One per firing, in order: nil for handed over.
    public var errors: [DeliveryError?]
    /// Returns once what was handed over has left the process: nil when it went out, the error
    /// the firings' deliveries end with when it was dropped (a bus connection lost first). Nil:
    /// it has left already.
    public var departure: (@Sendable () async -> DeliveryError?)?

    public init(errors: [DeliveryError?], departure: (@Sendable () async -> DeliveryError?)? = nil) {
        self.errors = errors
        self.departure = departure
    }
}
