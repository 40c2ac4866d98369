public import TocsinModel
public import TocsinTime
import TocsinSystem

/// Settings of the center that come from `[daemon]` and the command line. Each default is its
/// `[daemon]` key's (`DaemonKeys`); `CenterOptions(settings:environment:)` reads a whole section.
public struct CenterOptions: Sendable {
    public var maxPending = DaemonKeys.maxPending.defaultValue
    public var defaultMissed = DaemonKeys.missed.defaultValue
    public var defaultMaxLate = DaemonKeys.maxLate.defaultValue
    /// The zone of notifications that name none.
    public var defaultZone: TimeZoneRules
    public var zones: ZoneInfoDirectory
    public var delivery = DeliveryPolicy()
    public var defaultSnooze = DaemonKeys.snooze
    public var limits = SpecLimits()
    /// How much history is kept (`[daemon] history_max_entries`, `history_max_age`).
    public var history = HistoryRetention()
    /// How long before its instant a plain firing is claimed (`NotificationMachine.claimAhead`):
    /// its claim is durable and its signal built by then, so at the instant only the hand-off is
    /// left. Long enough to claim and prepare `TocsinCenter.aheadLimit` firings due together,
    /// which takes a two-core VM tens of milliseconds: there a burst of 1,000 reached its
    /// subscriber at 1.48-1.58x the floor with a 20 ms lead, 1.40-1.47x with 50 ms, 1.22-1.65x
    /// with 100 ms and 1.02-1.35x with 150 ms (two to four invocations each; the floor itself
    /// moves by half between runs; docs/BENCHMARKS.md, "Precision"). A claim that takes longer
    /// only makes its firings as late as they were without the lead. Zero: claim at the instant.
    public var claimAhead = TimeSpan(microseconds: 100_000)
    /// `[daemon] wake_alarms`: whether the daemon arms a wake-alarm timer for `wake = true`.
    public var wakeAlarms = DaemonKeys.wakeAlarms.defaultValue

    public init(defaultZone: TimeZoneRules, zones: ZoneInfoDirectory = ZoneInfoDirectory()) {
        self.defaultZone = defaultZone
        self.zones = zones
    }
}

extension CenterOptions {
    /// The center's options from `[daemon]`: the one place where the config's defaults become
    /// the engine's. The zone is `[daemon] timezone`, else `$TZ`, else the system's.
    public init(settings d: DaemonSettings, environment: [String: String], zones: ZoneInfoDirectory = ZoneInfoDirectory()) throws(TimeSyntaxError) {
        var zone = zones.defaultZone(tz: environment["TZ"])
        if let tz = d.timezone { zone = try ZoneCache(directory: zones).zone(named: tz, in: "[daemon] 'timezone'") }
        self.init(defaultZone: zone, zones: zones)
        maxPending = d.maxPending
        defaultMissed = d.missed
        defaultMaxLate = d.maxLate
        limits.minPeriod = d.minPeriod
        history = HistoryRetention(maxEntries: d.historyMaxEntries, maxAge: d.historyMaxAge)
        wakeAlarms = d.wakeAlarms
    }
}

