import Foundation
import Testing
import TocsinClient
import TocsinClientTesting
import TocsinTesting

/// Which firings an app sees, and when: quiet hours, snoozes of repeating notifications, a post
/// that replaces a pending one, and the backends that make `fired` events. The double must
/// answer as the daemon does, or an app's tests learn the opposite of what its users get.
@Suite("TocsinClient conformance: delivery")
struct DeliveryConformanceTests {
    static func content(_ title: String, urgency: NotificationUrgency = .normal, backends: [String] = Backends.events) -> NotificationContent {
        NotificationContent(title: title, urgency: urgency, backends: backends)
    }

    @Test("in quiet hours a dbus-signal backend's firings still come, critical or not; a quiet period with an end ends by itself",
          arguments: Implementation.allCases)
    func quietHoursDeliverSignals(_ implementation: Implementation) async throws {
        try await withHarness(implementation) { h in
            let log = EventLog(try await h.center.events(.all))
            let on = try await h.center.quietOn(.duration(.seconds(2)))
            #expect(on.active && on.until != nil, "\(on)")
            try await h.center.post(Self.content("Q"), key: "q1")
            try await h.center.post(Self.content("Q!", urgency: .critical), key: "q2")
            try await log.state.wait("fired q1 and q2 during quiet hours", timeout: .seconds(15)) { events in
                Set(events.compactMap { if case .fired(let f) = $0 { f.key } else { nil } }) == ["q1", "q2"]
            }
            #expect(try await h.center.quietState().active, "still quiet")
            await h.pass(.seconds(3))
            try await waitUntil("quiet over at its end", timeout: .seconds(15)) {
                (try? await h.center.quietState()).map { !$0.active && $0.source == .none && $0.until == nil } == true
            }
        }
    }

    @Test("an occurrence due during a snooze fires on time and ends the snooze; the snoozed one is not delivered again",
          arguments: Implementation.allCases)
    func snoozeOfARepeatingOne(_ implementation: Implementation) async throws {
        try await withHarness(implementation) { h in
            let log = EventLog(try await h.center.events())
            try await h.center.add(NotificationRequest(key: "rep", content: Self.content("Rep"), trigger: .every(.seconds(3), count: 3)))
            await h.pass(.seconds(3))
            try await log.wait("first Fired rep", timeout: .seconds(15)) { $0.isFired }
            _ = try await h.center.snooze(key: "rep", for: .seconds(7))
            await h.pass(.seconds(3))
            try await log.state.wait("occurrence 2 during the snooze", timeout: .seconds(15)) { $0.filter(\.isFired).count >= 2 }
            let entry = try #require(try await h.center.pending().first { $0.key == "rep" })
            #expect(entry.state == .scheduled && entry.snoozedUntil == nil, "the snooze ended: \(entry)")
            await h.pass(.seconds(7))
            try await log.state.wait("occurrence 3", timeout: .seconds(15)) { $0.filter(\.isFired).count >= 3 }
            let fired = log.fired("rep")
            #expect(fired.map(\.occurrence) == [1, 2, 3], "\(fired)")
            #expect(fired.map(\.late) == [false, false, false], "\(fired)")
            #expect(zip(fired, fired.dropFirst()).allSatisfy { $0.fired <= $1.fired && $0.due < $1.due }, "in time order: \(fired)")
        }
    }

    @Test("post with the key of a pending notification replaces it, without a Cancelled event", arguments: Implementation.allCases)
    func postReplacesPending(_ implementation: Implementation) async throws {
        try await withHarness(implementation) { h in
            let log = EventLog(try await h.center.events())
            try await h.center.add(NotificationRequest(key: "k2", content: Self.content("Later"), trigger: .after(.seconds(3600))))
            try await h.center.add(NotificationRequest(key: "other", content: Self.content("Other"), trigger: .after(.seconds(3600))))
            #expect(try await h.center.post(Self.content("Now"), key: "k2") == "k2")
            try await log.wait("Fired k2", timeout: .seconds(15)) { if case .fired(let f) = $0 { f.key == "k2" && f.title == "Now" } else { false } }
            #expect(try await h.center.pending().map(\.key) == ["other"])
            #expect(try await h.center.removeAll() == 1)
            try await log.wait("CancelledAll", timeout: .seconds(15)) { $0 == .cancelledAll(count: 1) }
            #expect(!log.events.contains(.cancelled(key: "k2")), "\(log.events)")
        }
    }

    @Test("post with replacesExisting false keeps a pending notification of its key and posts nothing; with none pending it posts",
          arguments: Implementation.allCases)
    func postKeepsPending(_ implementation: Implementation) async throws {
        try await withHarness(implementation) { h in
            let log = EventLog(try await h.center.events())
            try await h.center.add(NotificationRequest(key: "kept", content: Self.content("Later"), trigger: .after(.seconds(3600))))
            let before = try #require(try await h.center.pending().first { $0.key == "kept" })
            #expect(try await h.center.post(Self.content("Now"), key: "kept", replacesExisting: false) == "kept",
                    "the daemon answers the key of the one it kept")
            // With no notification of the key pending, it posts as usual.
            #expect(try await h.center.post(Self.content("Fresh"), key: "fresh", replacesExisting: false) == "fresh")
            try await log.wait("Fired fresh", timeout: .seconds(15)) { if case .fired(let f) = $0 { f.key == "fresh" } else { false } }
            let after = try await h.center.pending()
            #expect(after.map(\.key) == ["kept"], "\(after)")
            #expect(after.first?.title == "Later" && after.first?.state == .scheduled && after.first?.lastFire == nil, "\(after)")
            #expect(after.first?.nextFire == before.nextFire, "the kept one's firing is unchanged: \(after)")
            try await waitUntil("fresh recorded as fired", timeout: .seconds(15)) {
                (try? await h.center.history(HistoryQuery(key: "fresh")))?.first?.kind == .fired
            }
            #expect(try await h.center.history(HistoryQuery(key: "kept")).isEmpty, "nothing was posted under the kept key")
            #expect(log.fired("kept").isEmpty, "\(log.events)")
        }
    }

    @Test("fired comes only for notifications routed to a dbus-signal backend", arguments: Implementation.allCases)
    func firedOnlyFromSignalBackends(_ implementation: Implementation) async throws {
        try await withHarness(implementation) { h in
            let log = EventLog(try await h.center.events())
            try await h.center.post(Self.content("To the log", backends: Backends.log), key: "p1")
            try await h.center.post(Self.content("To events"), key: "p2")
            try await log.wait("Fired p2", timeout: .seconds(15)) { $0.isFired }
            // p1 went out (history records its firing), and no event says so.
            try await waitUntil("p1 recorded as fired", timeout: .seconds(15)) {
                (try? await h.center.history(HistoryQuery(key: "p1")))?.first?.kind == .fired
            }
            let p1 = try #require(try await h.center.history(HistoryQuery(key: "p1")).first)
            #expect(p1.backends == ["log"], "\(p1)")
            #expect(log.fired("p1").isEmpty, "\(log.events)")
        }
    }
}
