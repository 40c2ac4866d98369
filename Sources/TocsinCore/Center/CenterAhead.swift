import TocsinTime

/// Firings claimed ahead of their instant (`NotificationMachine.claimAhead`), held until it.
///
/// A firing's claim must be durable before any backend sees it (deliveries are at most once
/// across a crash), and committing it at the due instant put a disk flush between the instant
/// and the `Fired` signal. The loop therefore wakes `claimAhead` early, commits the claims of
/// what falls due by then, and at the instant only emits. Nothing is handed to a backend
/// before its instant; a crash before it leaves a claim whose instant is still to come, which
/// start-up delivers at that instant (`closeInterrupted`).
///
/// A request that reaches the daemon after a firing's claim and before its instant is still
/// applied first when it drops the claim: cancelling, replacing or reloading the notification
/// releases nothing at the instant. At most `aheadLimit` firings wait at once (two burst slices),
/// so a crash just after a burst's instant leaves as few claims in doubt as the burst window does.
extension TocsinCenter {
    static var aheadLimit: Int { 2 * sliceSize }

    /// The lead the next wake-up is armed with: none once `aheadLimit` firings wait, so the loop
    /// does not wake early for a claim it may not make.
    var claimLead: TimeSpan { staged.count < Self.aheadLimit ? options.claimAhead : .zero }

    func stage(_ d: PlannedDelivery, _ n: Notification) {
        let i = staged.firstIndex { $0.delivery.fired > d.fired } ?? staged.endIndex
        staged.insert((d, n), at: i)
    }

    /// Emits and dispatches what is due by `now`, if its claim still stands.
    func releaseStaged(now: Instant) {
        guard let first = staged.first, first.delivery.fired <= now else { return }
        let count = staged.firstIndex { $0.delivery.fired > now } ?? staged.endIndex
        var firings: [Firing] = []
        for (d, n) in staged[..<count] where machine.inDelivery[d.key]?.occurrence == d.occurrence {
            let f = firing(d, n)
            emit(.fired(f, backends: d.targets))
            firings.append(f)
        }
        staged.removeFirst(count)
        if !firings.isEmpty { dispatch(firings) }
    }

    /// Shutdown: what is claimed goes out now, at most `claimAhead` early, rather than be left to
    /// a start-up that may come after its instant and report it interrupted.
    func releaseStagedEarly() {
        guard let last = staged.last else { return }
        releaseStaged(now: last.delivery.fired)
    }
}
