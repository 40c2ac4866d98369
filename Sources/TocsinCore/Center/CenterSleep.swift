public import TocsinTime
public import TocsinSystem

/// Sleep and wake: the wake-alarm timer and what logind's announcements ask of the center
/// (`SleepWatch` in the gateway calls these).
extension TocsinCenter {
    /// The earliest firing that asks to wake the machine, and its key (`Status`).
    public func nextWake() -> (key: String, instant: Instant)? { machine.nextWake() }

    /// The wake alarm's availability and the instant the kernel holds; nil without a wake alarm.
    public var wakeStatus: WakeAlarmStatus? { wakeAlarm?.status }

    /// Before the machine sleeps: every batch queued now is committed, and both timers are armed
    /// for what the schedule holds then.
    public func settle() async {
        if loaded && (committing || !queued.isEmpty) {
            await withCheckedContinuation { settleWaiters.append($0) }
        }
        rearm()
    }

    /// Tells every backend the machine sleeps or resumed (`DeliveryBackend.systemSleep`).
    public func systemSleep(_ sleeping: Bool) async {
        for name in machine.backendNames { await backends[name]?.systemSleep(sleeping) }
    }

    func releaseSettleWaiters() {
        let w = settleWaiters
        settleWaiters = []
        for c in w { c.resume() }
    }
}
