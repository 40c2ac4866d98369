import Testing
import TocsinClient
import TocsinClientTesting

/// `wakesDevice` (the daemon's `wake = true`) goes out with the request and comes back in
/// `pending()`, from the real daemon and from the double alike.
@Suite("TocsinClient conformance: wake requests")
struct WakeConformanceTests {
    @Test("wakesDevice is kept and listed", arguments: Implementation.allCases)
    func wakesDevice(_ implementation: Implementation) async throws {
        try await withHarness(implementation) { h in
            try await h.center.add(NotificationRequest(key: "up", content: ConformanceTests.content("Up"),
                                                       trigger: .after(.seconds(3600)), wakesDevice: true))
            try await h.center.add(NotificationRequest(key: "tea", content: ConformanceTests.content("Tea"),
                                                       trigger: .after(.seconds(7200))))
            let pending = try await h.center.pending()
            #expect(pending.map { "\($0.key):\($0.wakesDevice)" } == ["tea:false", "up:true"], "key order")
            let status = try await h.center.status()
            #expect(status.wakeNextKey == "up", "the earliest wake request")
            #expect(status.nextKey == "up")
            #expect(!status.wake.isEmpty && !status.sleep.isEmpty, "\(status.wake) \(status.sleep)")
        }
    }
}
