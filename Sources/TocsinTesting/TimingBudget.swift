import Foundation

/// Latency limits in tests, widened by `TOCSIN_TIMING_SCALE` when the code runs under a sanitizer.
///
/// The limits (a Fired signal within 50 ms of due, a player reaped within 100 ms of acknowledge)
/// are product promises on a normal build. ASan makes every allocation and memory access dearer
/// and TSan much more so, so the same margins there would measure the sanitizer, not Tocsin; the
/// sanitizer runs in `scripts/test.sh` set the factor instead of skipping the tests, which keeps
/// every ordering and "it happens at all" assertion in force. Unset, empty or invalid means 1.
public enum TimingBudget: Sendable {
    public static let scale: Double = {
        guard let text = ProcessInfo.processInfo.environment["TOCSIN_TIMING_SCALE"],
              let value = Double(text), value.isFinite, value >= 1 else { return 1 }
        return value
    }()

    /// `limit` times the scale.
    public static func scaled(_ limit: Duration) -> Duration { limit * scale }

    /// A limit in seconds (or any unit) times the scale.
    public static func scaled(_ limit: Double) -> Double { limit * scale }

    /// A limit in integer units (microseconds) times the scale.
    public static func scaled(_ limit: Int) -> Int { Int((Double(limit) * scale).rounded(.up)) }
}
