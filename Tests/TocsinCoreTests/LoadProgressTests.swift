@testable import TocsinCore
import Testing

/// Start-up progress lines: silent under a second, then at most one a second, closed only when
/// something was shown. Driven by a hand-moved monotonic clock.
@Suite("start-up load progress")
struct LoadProgressTests {
    final class Hands {
        var now = ContinuousClock.now
    }

    @Test("a quick load logs nothing")
    func quick() {
        let hands = Hands()
        var p = LoadProgress(now: { hands.now })
        p.total = 20_000
        hands.now += .milliseconds(400)
        #expect(p.advance(by: 16_384) == nil)
        hands.now += .milliseconds(300)
        #expect(p.advance(by: 3_616) == nil)
        #expect(p.finished() == nil)
    }

    @Test("a slow load reports once a second with counts, and a closing line")
    func slow() {
        let hands = Hands()
        var p = LoadProgress(now: { hands.now })
        p.total = 50_000
        // (elapsed since the previous chunk in ms, rows, expected line or nil)
        let rows: [(Int, Int, String?)] = [
            (600, 16_384, nil),
            (600, 16_384, "loading persisted notifications: 32768 of 50000 (1.2 s)"),
            (500, 16_384, nil),
            (600, 848, "loading persisted notifications: 50000 of 50000 (2.3 s)"),
        ]
        for (i, row) in rows.enumerated() {
            hands.now += .milliseconds(row.0)
            #expect(p.advance(by: row.1) == row.2, "row \(i)")
        }
        hands.now += .milliseconds(100)
        #expect(p.finished() == "loaded 50000 persisted notifications in 2.4 s")
    }
}
