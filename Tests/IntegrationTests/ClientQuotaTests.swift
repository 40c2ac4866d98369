import Testing
@testable import TocsinGateway

/// The bookkeeping behind `[daemon] max_pending_per_client`, without a bus: slots, concurrent
/// reservations, forgetting finished keys, and the table not growing with clients that left.
@Suite("Per-client quota bookkeeping")
struct ClientQuotaTests {
    @Test("reservations count while in flight, so concurrent calls cannot overshoot the limit")
    func inFlightCounts() {
        let q = ClientQuota(limit: 2)
        #expect(q.reserve(":1.1"))
        #expect(q.reserve(":1.1"))
        #expect(!q.reserve(":1.1"), "two calls in flight already use both slots")
        #expect(q.reserve(":1.2"), "another client has its own slots")
        q.release(":1.1")
        #expect(q.reserve(":1.1"), "a failed call gives its slot back")
    }

    @Test("a finished key frees its slot once forgotten; a key committed meanwhile is kept")
    func forgetOnlyInactive() {
        let q = ClientQuota(limit: 2)
        for k in ["a", "b"] {
            #expect(q.reserve(":1.1"))
            q.commit(":1.1", key: k)
        }
        #expect(!q.reserve(":1.1"))
        q.forget(":1.1", inactive: ["a", "zzz"])
        #expect(q.keys(of: ":1.1") == ["b"])
        #expect(q.owns(":1.1", key: "b") && !q.owns(":1.1", key: "a"))
        #expect(q.reserve(":1.1"))
    }

    @Test("clients that leave do not accumulate: a sweep drops clients with nothing pending")
    func sweepDropsGoneClients() {
        let q = ClientQuota(limit: 10)
        for i in 0..<200 {
            let client = ":1.\(i)"
            #expect(q.reserve(client))
            q.commit(client, key: "k\(i)")
        }
        #expect(q.needsSweep())
        let finished = Set((0..<190).map { "k\($0)" })
        q.sweep(inactive: finished)
        #expect(q.clientCount == 10)
        #expect(!q.needsSweep(), "the next sweep waits until the table has doubled again")
    }

    @Test("a client's own set is pruned when it doubles, so it tracks what is pending")
    func pruneWhenDoubled() {
        let q = ClientQuota(limit: 10_000)
        for i in 0..<64 {
            #expect(q.reserve(":1.1"))
            q.commit(":1.1", key: "k\(i)")
        }
        #expect(!q.needsPrune(":1.1"))
        #expect(q.reserve(":1.1"))
        q.commit(":1.1", key: "k64")
        #expect(q.needsPrune(":1.1"))
        q.forget(":1.1", inactive: Set((0..<60).map { "k\($0)" }))
        #expect(q.keys(of: ":1.1").count == 5)
        #expect(!q.needsPrune(":1.1"))
    }
}
