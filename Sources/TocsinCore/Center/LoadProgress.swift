import TocsinSystem
/// Progress lines for a start-up that loads many persisted notifications: silent for the first
/// second (a normal start-up logs nothing extra), then at most one line a second, and a closing
/// line only when some progress was shown. Measured on the monotonic clock, not the center's
/// clock, which tests make virtual.
struct LoadProgress {
    var total = 0
    private(set) var loaded = 0
    private let began: ContinuousClock.Instant
    private var lastReport: ContinuousClock.Instant?
    private let now: () -> ContinuousClock.Instant

    init(now: @escaping () -> ContinuousClock.Instant = { ContinuousClock.now }) {
        self.now = now
        self.began = now()
    }

    /// Counts `rows` more; a line to log when it is time to report.
    mutating func advance(by rows: Int) -> String? {
        loaded += rows
        let t = now()
        guard t - began >= .seconds(1), lastReport.map({ t - $0 >= .seconds(1) }) ?? true else { return nil }
        lastReport = t
        let of = total > 0 ? " of \(total)" : ""
        return "loading persisted notifications: \(loaded)\(of) (\(Self.seconds(t - began)) s)"
    }

    /// The closing line, when progress lines were shown.
    func finished() -> String? {
        guard lastReport != nil else { return nil }
        return "loaded \(loaded) persisted notifications in \(Self.seconds(now() - began)) s"
    }

    private static func seconds(_ d: Duration) -> String {
        let ms = d.components.seconds * 1000 + d.components.attoseconds / 1_000_000_000_000_000
        return "\(ms / 1000).\(ms % 1000 / 100)"
    }
}
