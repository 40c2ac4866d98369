import Glibc
public import Logging
import Synchronization
public import TocsinCore
public import TocsinTime
public import TocsinModel
public import TocsinSystem

/// What a sound backend instance plays and how, as read from `[backend.NAME]`.
public struct SoundSettings: Hashable, Sendable {
    /// Absolute path of the sound.
    public var file: String
    public var length: SoundLength
    /// The player's argv template; its first element an absolute path. `{file}`, `{volume}` (0–100),
    /// `{volume_pa}` (0–65536) and `{volume_fraction}` (0.00–1.00) are replaced inside elements.
    public var player: [String]
    /// Percent, 0–100; nil leaves the player at its default (100 %).
    public var volume: Int?
    public var every: TimeSpan
    public var maxRings: UInt32

    public init(file: String, length: SoundLength, player: [String], volume: Int? = nil,
                every: TimeSpan = .minutes(1), maxRings: UInt32 = 10) {
        self.file = file; self.length = length; self.player = player; self.volume = volume
        self.every = every; self.maxRings = maxRings
    }

    /// The argv of one ring.
    public var arguments: [String] {
        let v = volume ?? 100
        let fraction = "\(v / 100).\(v % 100 < 10 ? "0" : "")\(v % 100)"
        // The file last, so a path that happens to contain "{volume}" stays as it is.
        return player.map {
            $0.replacing("{volume_pa}", with: String(v * 65536 / 100))
                .replacing("{volume_fraction}", with: fraction)
                .replacing("{volume}", with: String(v))
                .replacing("{file}", with: file)
        }
    }
}

/// Timing limits of a player. Only tests shorten them.
public struct PlayerLimits: Hashable, Sendable {
    /// A player still running this long after it started is stopped: an alarm sound is short, and a
    /// player stuck on a dead server must not pile up across rings.
    public var cap: Duration = .seconds(30)
    /// Between SIGTERM and SIGKILL on withdraw; the whole stop must fit in 100 ms.
    public var termGrace: Duration = .milliseconds(50)
    /// A player that fails within this long after it started is a failed delivery (no audio server,
    /// unplayable file) rather than a logged error, so the center sees and retries it.
    public var startWindow: Duration = .milliseconds(200)
    public init() {}
}

/// What happened to players, for tests and for whoever watches the backend.
public enum PlayerEvent: Hashable, Sendable {
    case started(key: String, ring: UInt32, pid: Int32)
    case ended(key: String, ring: UInt32, pid: Int32, exit: ChildExit)
}

/// Counts since start, for the log and for tests.
public struct SoundCounters: Hashable, Sendable {
    public var started = 0
    /// Could not be spawned or failed within the start window (a failed delivery).
    public var failedStarts = 0
    /// Ended with an error later on, without being asked to stop.
    public var playerErrors = 0
    /// Stopped at the length cap.
    public var capped = 0
    /// Stopped by withdraw, a newer ring or shutdown.
    public var stopped = 0
    public init(started: Int = 0, failedStarts: Int = 0, playerErrors: Int = 0, capped: Int = 0, stopped: Int = 0) {
        self.started = started; self.failedStarts = failedStarts; self.playerErrors = playerErrors
        self.capped = capped; self.stopped = stopped
    }
}

/// `type = "sound"`: the alarm. Each delivery plays the sound once (one ring); the center repeats
/// deliveries every `every` until someone reacts, then withdraws, which stops the player at once.
///
/// One player per key: a ring that comes while the previous one still plays replaces it, so rings
/// never overlap and a stuck player never outlives the next ring.
public final class SoundBackend: DeliveryBackend, Sendable {
    private struct Playing {
        var id: UInt64
        var ring: UInt32
        var process: ChildProcess
    }
    private struct State {
        var playing: [String: Playing] = [:]
        var nextID: UInt64 = 0
        var counters = SoundCounters()
        /// Deliveries under way per key.
        var inFlight: [String: Int] = [:]
        /// Bumped by a withdraw while a delivery for the key is under way: that delivery must not
        /// start playing after it (an acknowledge racing a ring). Dropped with the last delivery.
        var withdrawals: [String: UInt64] = [:]
        var withdrawnAs: [String: WithdrawReason] = [:]
        var shutDown = false
    }

    public let name: String
    public let settings: SoundSettings
    public let limits: PlayerLimits
    private let environment: [String: String]
    private let logger: Logger
    private let observer: (@Sendable (PlayerEvent) -> Void)?
    private let state = Mutex(State())
    /// Where running players are recorded for the next run after a crash; nil without a state directory.
    private let ledger: PlayerLedger?

    /// Sound waits out quiet hours; alarms still ring unless `[quiet] alarms = false`.
    public var quietMode: QuietMode { .hold }
    public var ringPolicy: RingPolicy? { RingPolicy(every: settings.every, maxRings: settings.maxRings) }
    /// A reload that replaces this instance stops its players: an acknowledge goes to the new
    /// instance, which never started them, so they would play on to the 30 s cap. The ring goes
    /// on at its next period, on the new instance.
    public var shutsDownWhenReplaced: Bool { true }

    /// `environment` is exactly what the player gets. `observer` hears every start and end.
    /// `stateDirectory`: where the running players are recorded (`sound-NAME.players`), so that
    /// the start after a crash stops what is left of them; nil records nothing.
    public init(name: String, settings: SoundSettings, environment: [String: String], logger: Logger,
                limits: PlayerLimits = PlayerLimits(), observer: (@Sendable (PlayerEvent) -> Void)? = nil,
                stateDirectory: String? = nil) {
        self.name = name
        self.ledger = stateDirectory.map { PlayerLedger.shared(path: PlayerLedger.file(directory: $0, backend: name)) }
        self.settings = settings
        self.environment = environment
        self.limits = limits
        self.observer = observer
        var l = logger
        l[metadataKey: "backend"] = "\(name)"
        self.logger = l
    }

    public var counters: SoundCounters { state.withLock { $0.counters } }

    /// Keys whose player is running now.
    public var playingKeys: [String] { state.withLock { $0.playing.keys.sorted() } }

    /// What a ring needs that can go away after the config was loaded: the sound file and the
    /// player program (`tocsin status` says so before the next ring fails). A sound server that is
    /// down shows only when a ring fails, as the player reports it then.
    public func health() async -> BackendHealth {
        if access(settings.file, R_OK) != 0 {
            return .unavailable("cannot read the sound file \(settings.file): \(String(cString: strerror(errno)))")
        }
        if let program = settings.player.first, access(program, X_OK) != 0 {
            return .unavailable("cannot run the player \(program): \(String(cString: strerror(errno)))")
        }
        return .ok
    }

    /// Stops the players an earlier run left playing (`kill -9`, a crash): its cap and its
    /// acknowledge died with it, and a looping player would play for ever. Only those whose
    /// leader is still the process recorded (pid and start time) are signalled.
    public func start(events: any BackendEventSink) async {
        guard let ledger else { return }
        let records: [PlayerRecord]
        switch ledger.takeLeftovers() {
        case .records(let r): records = r
        case .malformed(let why):
            logger.warning("ignored and removed the record of running players: \(why)", metadata: ["file": "\(ledger.path)"])
            return
        case .earlierBoot:
            logger.debug("removed the record of running players of an earlier boot", metadata: ["file": "\(ledger.path)"])
            return
        }
        guard !records.isEmpty else { return }
        let grace = limits.termGrace
        let outcomes = await WorkerThread.run { LeftoverProcessGroups.stop(records.map(\.group), grace: grace) }
        for (r, outcome) in zip(records, outcomes) {
            let metadata: Logger.Metadata = ["key": "\(r.key)", "pid": "\(r.group.pid)", "outcome": "\(outcome)"]
            if outcome.stopped {
                logger.notice("stopped a player an earlier run left playing", metadata: metadata)
            } else if case .refused = outcome {
                logger.warning("did not stop a recorded player", metadata: metadata)
            } else {
                logger.debug("a player an earlier run recorded has ended", metadata: metadata)
            }
            if let problem = ledger.forget(r.group.pid) { logger.warning("\(problem)") }
        }
    }

    public func deliver(_ firing: Firing) async throws(DeliveryError) {
        let key = firing.key
        // Checked at load, but the file may have gone since; that will not mend by retrying.
        guard access(settings.file, R_OK) == 0 else {
            count { $0.failedStarts += 1 }
            throw DeliveryError(.permanent, "cannot read sound file '\(settings.file)': \(String(cString: strerror(errno)))")
        }
        let epoch = state.withLock { s -> UInt64 in
            s.inFlight[key, default: 0] += 1
            return s.withdrawals[key] ?? 0
        }
        defer {
            state.withLock { s in
                let n = (s.inFlight[key] ?? 1) - 1
                if n > 0 {
                    s.inFlight[key] = n
                } else {
                    s.inFlight[key] = nil
                    s.withdrawals[key] = nil
                    s.withdrawnAs[key] = nil
                }
            }
        }
        if let old = take(key) {
            _ = await old.process.stop(.withdrawn(.replaced))
        }
        if let reason = state.withLock({ s in s.shutDown ? .shutdown : (s.withdrawals[key] ?? 0) != epoch ? s.withdrawnAs[key] : nil }) {
            logger.debug("ring withdrawn before it started", metadata: ["key": "\(key)", "reason": "\(reason)"])
            return
        }
        let process: ChildProcess
        do {
            process = try ChildProcess.spawn(settings.arguments, environment: environment, cap: limits.cap, grace: limits.termGrace)
        } catch {
            count { $0.failedStarts += 1 }
            throw DeliveryError(error.isTransient ? .unavailable : .permanent, error.description)
        }
        record(process, key: key)
        let (id, displaced, vetoed) = state.withLock { s -> (UInt64, Playing?, WithdrawReason?) in
            s.nextID += 1
            s.counters.started += 1
            if s.shutDown { return (s.nextID, nil, .shutdown) }
            if (s.withdrawals[key] ?? 0) != epoch { return (s.nextID, nil, s.withdrawnAs[key] ?? .cancelled) }
            let d = s.playing[key]
            s.playing[key] = Playing(id: s.nextID, ring: firing.ring, process: process)
            return (s.nextID, d, nil)
        }
        observer?(.started(key: key, ring: firing.ring, pid: process.pid))
        // Withdrawn while we were spawning: it never gets to play on.
        if let vetoed {
            let exit = await process.stop(.withdrawn(vetoed))
            ended(key: key, id: id, ring: firing.ring, process: process, exit: exit, early: false)
            return
        }
        // A concurrent delivery for the same key (a retry racing the next ring) started in between.
        if let displaced { _ = await displaced.process.stop(.withdrawn(.replaced)) }
        logger.debug("ringing", metadata: ["key": "\(key)", "ring": "\(firing.ring)", "pid": "\(process.pid)"])

        // Judged by when it ended, not by when this task got to look: a busy executor must not turn
        // a failure in the middle of the sound into a failed delivery.
        if let early = await process.waitForExit(within: limits.startWindow), early.elapsed < limits.startWindow {
            ended(key: key, id: id, ring: firing.ring, process: process, exit: early, early: true)
            if early.stoppedBy == nil, !early.status.isSuccess {
                throw DeliveryError(.unavailable, "\(process.argv[0]) failed at start (\(early.status))"
                                    + (early.stderr.isEmpty ? "" : ": \(early.stderr)"))
            }
            return
        }
        let ring = firing.ring
        Task { await self.supervise(key: key, id: id, ring: ring, process: process) }
    }

    public func withdraw(key: String, reason: WithdrawReason) async {
        let p = state.withLock { s -> Playing? in
            if s.inFlight[key] != nil {
                s.withdrawals[key, default: 0] += 1
                s.withdrawnAs[key] = reason
            }
            return s.playing.removeValue(forKey: key)
        }
        guard let p else { return }
        _ = await p.process.stop(.withdrawn(reason))
    }

    public func shutdown() async {
        let all = state.withLock { s -> [Playing] in
            s.shutDown = true
            let a = Array(s.playing.values)
            s.playing = [:]
            return a
        }
        await withTaskGroup(of: Void.self) { group in
            for p in all {
                group.addTask { _ = await p.process.stop(.withdrawn(.shutdown)) }
            }
        }
    }

    /// Stops the players where they are before the machine sleeps (SIGSTOP to each player's
    /// group) and lets them go on after resume (SIGCONT), so a ringing alarm neither plays into
    /// the suspend nor starts over.
    public func systemSleep(_ sleeping: Bool) async {
        let all = state.withLock { Array($0.playing.values) }
        for p in all { p.process.signal(sleeping ? SIGSTOP : SIGCONT) }
    }

    // MARK: -

    /// Into the ledger before anything can end it (`ended` drops it).
    private func record(_ process: ChildProcess, key: String) {
        guard let ledger, let start = process.startTime else { return }
        let r = PlayerRecord(group: RecordedProcessGroup(pid: process.pid, processGroup: process.pid, startTime: start), key: key)
        if let problem = ledger.add(r) {
            logger.warning("cannot record the running player; a crash now would leave it playing: \(problem)", metadata: ["key": "\(key)"])
        }
    }

    private func take(_ key: String) -> Playing? {
        state.withLock { $0.playing.removeValue(forKey: key) }
    }

    private func count(_ change: (inout SoundCounters) -> Void) {
        state.withLock { change(&$0.counters) }
    }

    /// Waits for the player to end (the process stops it at the cap by itself).
    private func supervise(key: String, id: UInt64, ring: UInt32, process: ChildProcess) async {
        guard let exit = await process.waitForExit() else { return }
        if exit.stoppedBy == .capped {
            logger.notice("sound still playing at the length cap; stopped",
                          metadata: ["key": "\(key)", "cap": "\(limits.cap)", "pid": "\(process.pid)"])
        }
        ended(key: key, id: id, ring: ring, process: process, exit: exit, early: false)
    }

    private func ended(key: String, id: UInt64, ring: UInt32, process: ChildProcess, exit: ChildExit, early: Bool) {
        if let problem = ledger?.forget(process.pid) { logger.warning("\(problem)") }
        state.withLock { s in
            if s.playing[key]?.id == id { s.playing[key] = nil }
            switch exit.stoppedBy {
            case .capped?: s.counters.capped += 1
            case .withdrawn?: s.counters.stopped += 1
            case nil:
                if !exit.status.isSuccess {
                    if early { s.counters.failedStarts += 1 } else { s.counters.playerErrors += 1 }
                }
            }
        }
        if exit.stoppedBy == nil, !exit.status.isSuccess, !early {
            logger.error("sound player failed", metadata: [
                "key": "\(key)", "ring": "\(ring)", "player": "\(process.argv[0])", "status": "\(exit.status)",
                "stderr": "\(exit.stderr)"])
        }
        observer?(.ended(key: key, ring: ring, pid: process.pid, exit: exit))
    }
}
