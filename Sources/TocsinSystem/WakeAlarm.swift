import CTocsinSystem
import Synchronization
public import TocsinTime
#if canImport(Glibc)
import Glibc
#endif

/// Whether the daemon can bring the machine out of suspend, and why not.
public enum WakeAvailability: Hashable, Sendable, CustomStringConvertible {
    case available
    /// `[daemon] wake_alarms = false`.
    case off
    /// The kernel refused the `CLOCK_REALTIME_ALARM` timer; wake notifications fire once the
    /// machine is awake. The reason is what `tocsin status` and `tocsin check` print.
    case unavailable(String)

    public var description: String {
        switch self {
        case .available: return "available"
        case .off: return "off ([daemon] wake_alarms = false)"
        case .unavailable(let why): return "unavailable: \(why)"
        }
    }

    /// The reason for an errno from `timerfd_create(CLOCK_REALTIME_ALARM)`.
    public static func reason(errno e: Int32) -> String {
        switch e {
        case TOCSIN_EPERM:
            return "no CAP_WAKE_ALARM; see \"Sleep and wake\" in the README (AmbientCapabilities=CAP_WAKE_ALARM or setcap cap_wake_alarm+ep)"
        case TOCSIN_ENODEV, TOCSIN_EOPNOTSUPP, TOCSIN_EINVAL:
            return "no real-time clock that can wake this machine (\(String(cString: strerror(e))))"
        default:
            return "cannot create a CLOCK_REALTIME_ALARM timer: \(String(cString: strerror(e)))"
        }
    }

    /// Tries the timer once, as the daemon would (`tocsin check`).
    public static func probe() -> WakeAvailability {
        let fd = tocsin_timerfd_create_alarm()
        guard fd >= 0 else { return .unavailable(reason(errno: -fd)) }
        close(fd)
        return .available
    }
}

/// What `Status` says about wake alarms.
public struct WakeAlarmStatus: Hashable, Sendable {
    public var availability: WakeAvailability
    /// The instant the timer is armed for, read back from the kernel (`timerfd_gettime`); nil
    /// when it is not armed.
    public var armed: Instant?
    public init(availability: WakeAvailability, armed: Instant? = nil) {
        self.availability = availability; self.armed = armed
    }
}

/// The timer that wakes the machine for the earliest pending firing that asks to (`wake = true`).
/// Only wakes: the firing itself comes from the center's ordinary timer once the machine runs.
public protocol WakeAlarm: Sendable {
    /// Replaces any earlier arming; nil disarms.
    func arm(at instant: Instant?)
    var status: WakeAlarmStatus { get }
}

/// A `CLOCK_REALTIME_ALARM` timerfd armed with `TFD_TIMER_ABSTIME`. Nothing reads or polls it,
/// so it adds no wakeup while the machine is awake; its expiry during suspend resumes the machine.
/// When the kernel refuses the timer (no `CAP_WAKE_ALARM`, no wake-capable RTC) it does nothing
/// and says why in `status`.
///
/// Checked `Sendable`: the descriptor is immutable, the armed instant sits in a `Mutex`, and
/// `timerfd_settime` is thread-safe.
public final class AlarmTimerFD: WakeAlarm, Sendable {
    private let fd: Int32
    public let availability: WakeAvailability
    private let armedAt = Mutex<Instant?>(nil)

    /// `allowed`: `[daemon] wake_alarms`; false creates no timer at all.
    public init(allowed: Bool) {
        guard allowed else { fd = -1; availability = .off; return }
        let r = tocsin_timerfd_create_alarm()
        if r >= 0 {
            fd = r
            availability = .available
        } else {
            fd = -1
            availability = .unavailable(WakeAvailability.reason(errno: -r))
        }
    }

    deinit { if fd >= 0 { Glibc.close(fd) } }

    public func arm(at instant: Instant?) {
        guard fd >= 0 else { return }
        armedAt.withLock { current in
            guard current != instant else { return }
            current = instant
            // An instant at or before the epoch cannot be armed absolutely; 1 µs is "now".
            _ = tocsin_timerfd_arm_alarm(fd, instant.map { max(1, $0.microseconds) } ?? 0)
        }
    }

    public var status: WakeAlarmStatus {
        // Disarmed by us: the kernel's read-back is not asked, because for an alarm timer it is
        // stale after a disarm (timerfd_gettime reports the old expiry's remaining time, while
        // the timer no longer fires).
        guard fd >= 0, armedAt.withLock({ $0 }) != nil else { return WakeAlarmStatus(availability: availability) }
        let at = tocsin_timerfd_armed_usec(fd)
        return WakeAlarmStatus(availability: availability, armed: at > 0 ? Instant(microseconds: at) : nil)
    }
}
