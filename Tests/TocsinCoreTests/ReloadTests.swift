import Testing
import TocsinConfig
import TocsinCore
import TocsinTesting
import TocsinTime

@Suite("Config reload: cancel-before-schedule")
struct ReloadTests {
    @Test("unchanged entries keep state and do not re-fire; changed are replaced; removed are cancelled; runtime untouched")
    func reloadSemantics() async throws {
        let h = try await Harness()
        try await h.center.schedule(spec("runtime", at(500)))
        var r = try await h.center.applyConfig([spec("a", at(10)), spec("b", at(20)), spec("gone", at(30))])
        #expect(Set(r.added) == ["a", "b", "gone"])
        await h.advance(10)
        #expect(await h.settled().map(\.key) == ["a"])

        r = try await h.center.applyConfig([spec("a", at(10)), spec("b", at(25), title: "moved"), spec("c", at(40))])
        #expect(r.unchanged == ["a"])
        #expect(r.changed == ["b"])
        #expect(r.added == ["c"])
        #expect(r.removed == ["gone"])
        let keys = await h.center.list().map(\.notification.key)
        #expect(keys == ["b", "c", "runtime"])
        await h.advance(100)
        // Different keys are delivered by independent tasks: their order is not defined.
        #expect(await h.settled().map(\.key).sorted() == ["a", "b", "c"], "the unchanged, already fired 'a' fired again")
    }

    @Test("a config with an invalid entry changes nothing")
    func failedReloadChangesNothing() async throws {
        let h = try await Harness()
        try await h.center.applyConfig([spec("a", at(10))])
        do {
            try await h.center.applyConfig([spec("a", at(99)), spec("b", at(20), backends: ["missing"])])
            Issue.record("a config naming an unknown backend was applied")
        } catch {
            #expect(error.code == .unknownBackend)
        }
        #expect(await h.center.lookup("a")?.nextFire == t0 + .seconds(10))
        #expect(await h.center.lookup("b") == nil)
    }

    @Test("a cancelled config notification stays cancelled while its definition is unchanged")
    func cancelledConfigEntry() async throws {
        let h = try await Harness()
        try await h.center.applyConfig([spec("a", at(10))])
        #expect(try await h.center.cancel("a"))
        try await h.center.applyConfig([spec("a", at(10))])
        #expect(await h.center.lookup("a") == nil)
        try await h.restart(backends: [RecordingBackend(name: "spy")])
        try await h.center.applyConfig([spec("a", at(10))])
        #expect(await h.center.lookup("a") == nil)
        try await h.center.applyConfig([spec("a", at(15))])
        #expect(await h.center.lookup("a")?.nextFire == t0 + .seconds(15), "an edited definition must come back")
    }

    @Test("a config 'at' in the past is reported and skipped, not delivered")
    func pastConfigAt() async throws {
        let h = try await Harness()
        let r = try await h.center.applyConfig([spec("old", at(-60))])
        #expect(r.skipped == ["old"])
        await h.advance(1)
        #expect(await h.settled().isEmpty)
    }
}
