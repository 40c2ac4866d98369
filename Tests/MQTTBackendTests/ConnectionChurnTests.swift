import Testing
@testable import TocsinMQTTBackend

/// When the mqtt backend names a shared client id as the likely cause of its lost connections.
@Suite("Connection churn")
struct ConnectionChurnTests {
    /// Each step: how long the connection lasted before it was lost (nil: lost before it was made).
    static let rows: [(String, [Duration?], [Bool])] = [
        ("regression: two clients with one id, each connect lasting 2.5 s", [.milliseconds(2500), .milliseconds(2500), .milliseconds(2500), .milliseconds(2500)],
         [false, false, true, false]),
        ("an outage: losses of long connections", [.seconds(600), .seconds(60), .seconds(30)], [false, false, false]),
        ("a long connection between brief ones resets the count", [.seconds(1), .seconds(1), .seconds(60), .seconds(1), .seconds(1), .seconds(1)],
         [false, false, false, false, false, true]),
        ("connects that failed count for nothing", [nil, nil, nil, .seconds(1)], [false, false, false, false]),
    ]

    @Test("warns once at the third brief connection in a row, row by row")
    func rows() {
        let start = ContinuousClock.now
        for (name, lasted, expected) in Self.rows {
            var churn = ConnectionChurn()
            var t = start
            var got: [Bool] = []
            for d in lasted {
                if let d {
                    churn.connected(at: t)
                    t += d
                }
                got.append(churn.lost(at: t))
                t += .seconds(1)
            }
            #expect(got == expected, "\(name)")
        }
    }
}
