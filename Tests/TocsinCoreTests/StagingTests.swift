import Testing
@testable import TocsinCore
import TocsinTime

/// What the center holds between a claim made ahead and its instant (`TocsinCenter.stage`): in
/// instant order, claimed order among equals, one per key. A batch stages its claims in one pass,
/// so these are the rules a sequence of single stagings used to follow.
@Suite("Staging claims made ahead")
struct StagingTests {
    struct Row: CustomTestStringConvertible, Sendable {
        let name: String
        /// Batches staged in turn, each a list of (key, seconds after t0).
        let batches: [[(String, Int64)]]
        /// What is held afterwards, in order: "key@seconds".
        let held: [String]
        var testDescription: String { name }
    }

    static let rows: [Row] = [
        Row(name: "one batch, out of order", batches: [[("b", 20), ("a", 10), ("c", 30)]], held: ["a@10", "b@20", "c@30"]),
        Row(name: "equal instants keep their claimed order", batches: [[("z", 10), ("a", 10), ("m", 10)]], held: ["z@10", "a@10", "m@10"]),
        Row(name: "a later batch goes after equals held before", batches: [[("x", 10)], [("a", 10), ("b", 5)]],
            held: ["b@5", "x@10", "a@10"]),
        Row(name: "a key claimed again replaces its held firing", batches: [[("a", 10), ("b", 20)], [("a", 30)]],
            held: ["b@20", "a@30"]),
        Row(name: "twice in one batch: the later stands", batches: [[("a", 10), ("b", 20), ("a", 30)]], held: ["b@20", "a@30"]),
        Row(name: "an empty batch changes nothing", batches: [[("a", 10)], []], held: ["a@10"]),
    ]

    @Test("held firings after staging", arguments: rows)
    func staged(_ row: Row) async throws {
        let h = try await Harness()
        for batch in row.batches {
            let held = batch.map { key, s in
                let at = t0 + .seconds(s)
                let d = PlannedDelivery(key: key, occurrence: Occurrence(instant: at, number: 1), due: at, fired: at,
                                        reason: .scheduled, targets: ["spy"], isAlarm: false)
                return (delivery: d, notification: Notification(key: key, title: key, trigger: .at(at)))
            }
            await h.center.stage(held)
        }
        let held = await h.center.staged.map { "\($0.delivery.key)@\(($0.delivery.fired - t0).microseconds / 1_000_000)" }
        #expect(held == row.held, "\(row.name)")
    }
}
