import Testing
import TocsinConfig
import TocsinCore
import TocsinTesting
import TocsinTime
import TocsinModel

/// A reload carries new backends and new notifications together: checked against each other,
/// and nothing of it takes effect unless all of it does.
@Suite("Reload: backends and notifications change together or not at all")
struct ReloadAtomicityTests {
    @Test("a reload whose notifications are refused keeps the running backends")
    func refusedReloadKeepsBackends() async throws {
        let h = try await Harness()
        try await h.center.applyConfig([spec("a", at(10))])
        let replacement = RecordingBackend(name: "other")
        await #expect(throws: CenterError.self) {
            try await h.center.reload(backends: [replacement], specs: [spec("a", at(10), backends: ["spy"])], quiet: QuietSettings())
        }
        #expect(await h.center.backendNames == ["spy"], "the refused reload must not install its backends")
        await h.advance(10)
        #expect(await h.settled().map(\.key) == ["a"], "the running schedule still fires to the running backend")
    }

    @Test("a notification may name a backend that the same reload adds")
    func newBackendInSameReload() async throws {
        let h = try await Harness()
        let added = RecordingBackend(name: "added")
        let r = try await h.center.reload(backends: [h.spy, added], specs: [spec("b", at(5), backends: ["added"])], quiet: QuietSettings())
        #expect(r.added == ["b"])
        #expect(await h.center.backendNames == ["spy", "added"])
        await h.advance(5)
        await h.center.waitForDeliveries()
        #expect(added.deliveredKeys == ["b"])
    }
}
