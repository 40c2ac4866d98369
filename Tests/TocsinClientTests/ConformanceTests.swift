import Foundation
import Testing
import TocsinClient
import TocsinClientTesting
import TocsinTesting

/// What an app may rely on, whichever center it holds: every test runs against the in-memory
/// double and against the real client on a real daemon (private bus, built `tocsin daemon`).
@Suite("TocsinClient conformance: the client and its double behave alike")
struct ConformanceTests {
    static func content(_ title: String, backends: [String] = Backends.events, userInfo: [String: String] = [:],
                        actions: [NotificationAction] = []) -> NotificationContent {
        NotificationContent(title: title, body: "body of \(title)", urgency: .critical, actions: actions,
                            backends: backends, userInfo: userInfo)
    }

    @Test("add lists the request in pending(); remove(keys:) cancels it with a Cancelled event", arguments: Implementation.allCases)
    func addListRemove(_ implementation: Implementation) async throws {
        try await withHarness(implementation) { h in
            let log = EventLog(try await h.center.events())
            let start = await h.now()
            try await h.center.add(NotificationRequest(key: "tea", content: Self.content("Tea", userInfo: ["cup": "2"]),
                                                       trigger: .after(.seconds(3600))))
            try await h.center.add(NotificationRequest(key: "standup", content: Self.content("Stand-up"),
                                                       trigger: .calendar("Mon..Fri 09:25")))
            let pending = try await h.center.pending()
            #expect(pending.map(\.key) == ["standup", "tea"], "key order")
            let tea = try #require(pending.last)
            #expect(tea.title == "Tea" && tea.body == "body of Tea" && tea.urgency == .critical)
            #expect(tea.userInfo == ["cup": "2"] && tea.state == .scheduled && tea.backends == ["events"])
            let next = try #require(tea.nextFire)
            #expect(abs(next.timeIntervalSince(start) - 3600) < 30, "next fire \(next) is an hour after \(start)")
            #expect(try await h.center.remove(keys: ["tea", "nothing-here"]) == ["tea"])
            try await log.wait("Cancelled tea") { $0 == .cancelled(key: "tea") }
            #expect(try await h.center.pending().map(\.key) == ["standup"])
            #expect(try await h.center.removeAll() == 1)
            try await log.wait("CancelledAll 1") { $0 == .cancelledAll(count: 1) }
            #expect(try await h.center.pending().isEmpty)
        }
    }

    @Test("an interval fires once: Fired carries the key, title, occurrence and user info; history records it",
          arguments: Implementation.allCases)
    func afterFires(_ implementation: Implementation) async throws {
        try await withHarness(implementation) { h in
            let log = EventLog(try await h.center.events())
            try await h.center.add(NotificationRequest(key: "kettle", content: Self.content("Kettle", userInfo: ["id": "7"]),
                                                       trigger: .after(.seconds(1))))
            await h.pass(.seconds(1))
            let event = try await log.wait("Fired kettle") { $0.isFired }
            guard case .fired(let f) = event else { return }
            #expect(f.key == "kettle" && f.title == "Kettle" && f.body == "body of Kettle")
            #expect(f.occurrence == 1 && f.userInfo == ["id": "7"] && f.before == nil)
            #expect(f.fired >= f.due)
            #expect(try await h.center.pending().isEmpty, "a one-shot is done once fired")
            let history = try await h.center.history(HistoryQuery(key: "kettle"))
            #expect(history.first?.kind == .fired && history.first?.key == "kettle" && history.first?.occurrence == 1, "\(history)")
            #expect(history.first?.backends == ["events"] && history.first?.late == false && history.first?.count == nil, "\(history)")
        }
    }

    @Test("a repeating interval with a count fires that many times, numbered, then is gone", arguments: Implementation.allCases)
    func everyWithCount(_ implementation: Implementation) async throws {
        try await withHarness(implementation) { h in
            let log = EventLog(try await h.center.events())
            try await h.center.add(NotificationRequest(key: "stretch", content: Self.content("Stretch"),
                                                       trigger: .after(.seconds(1), repeats: true, count: 2)))
            await h.pass(.seconds(5))
            try await log.state.wait("two firings of stretch", timeout: .seconds(30)) { events in
                events.filter(\.isFired).count == 2
            }
            #expect(log.fired("stretch").map(\.occurrence) == [1, 2])
            #expect(try await h.center.pending().isEmpty)
        }
    }

    @Test("regression: reminders with an offset given twice are one reminder: listed once, zero as 0s, occurrences 1 and 2",
          arguments: Implementation.allCases)
    func equalReminderOffsets(_ implementation: Implementation) async throws {
        try await withHarness(implementation) { h in
            let log = EventLog(try await h.center.events())
            let event = (await h.now()).addingTimeInterval(4)
            try await h.center.add(NotificationRequest(key: "lot", content: Self.content("Lot"),
                                                       trigger: .reminders(before: [.seconds(2), .seconds(2), .zero], event: event)))
            let pending = try #require(try await h.center.pending().first)
            #expect(pending.triggerDescription.hasPrefix("2s, 0s before "), "\(pending.triggerDescription)")
            await h.pass(.seconds(5))
            try await log.state.wait("two firings of lot", timeout: .seconds(30)) { events in
                events.filter(\.isFired).count == 2
            }
            #expect(log.fired("lot").map(\.occurrence) == [1, 2])
        }
    }

    @Test("an action chosen on the popup arrives with its id and the notification's user info", arguments: Implementation.allCases)
    func actionInvoked(_ implementation: Implementation) async throws {
        try await withHarness(implementation) { h in
            let log = EventLog(try await h.center.events())
            try await h.center.add(NotificationRequest(
                key: "call", content: Self.content("Call", backends: Backends.withBridge, userInfo: ["room": "4"],
                                                   actions: [NotificationAction(id: "join", title: "Join call")]),
                trigger: .after(.seconds(1))))
            await h.pass(.seconds(1))
            try await log.wait("Fired call") { $0.isFired }
            try await h.click(key: "call", action: "join")
            let action = try await log.wait("ActionInvoked call") { if case .actionInvoked = $0 { true } else { false } }
            #expect(action == .actionInvoked(key: "call", action: "join", userInfo: ["room": "4"]))
        }
    }

    @Test("post delivers at once under the given key, or under a key made up for it", arguments: Implementation.allCases)
    func post(_ implementation: Implementation) async throws {
        try await withHarness(implementation) { h in
            let log = EventLog(try await h.center.events())
            #expect(try await h.center.post(Self.content("Build finished"), key: "build") == "build")
            let made = try await h.center.post(Self.content("Deploy finished"))
            #expect(made.hasPrefix("post-"), "\(made)")
            try await log.state.wait("both posts fired", timeout: .seconds(30)) { events in
                Set(events.compactMap { if case .fired(let f) = $0 { f.key } else { nil } }) == ["build", made]
            }
            #expect(try await h.center.pending().isEmpty)
        }
    }

    @Test("a snooze is announced and leaves it snoozed; acknowledge stops it once", arguments: Implementation.allCases)
    func snoozeAndAcknowledge(_ implementation: Implementation) async throws {
        try await withHarness(implementation) { h in
            let log = EventLog(try await h.center.events())
            try await h.center.add(NotificationRequest(key: "pills", content: Self.content("Pills"),
                                                       trigger: .every(.seconds(4), count: 2)))
            #expect(try await h.center.acknowledge(key: "pills") == false, "not alerting yet")
            await h.pass(.seconds(4))
            try await log.wait("first Fired pills") { $0.isFired }
            let before = await h.now()
            let until = try await h.center.snooze(key: "pills", for: .seconds(600))
            #expect(abs(until.timeIntervalSince(before) - 600) < 30)
            try await log.wait("Snoozed pills") { if case .snoozed("pills", _) = $0 { true } else { false } }
            let entry = try #require(try await h.center.pending().first)
            #expect(entry.state == .snoozed && entry.snoozedUntil.map { abs($0.timeIntervalSince(until)) < 0.001 } == true)
            #expect(try await h.center.acknowledge(key: "pills") == true)
            try await log.wait("Acknowledged pills") { $0 == .acknowledged(key: "pills") }
            #expect(try await h.center.acknowledge(key: "pills") == false)
        }
    }

    @Test("a snooze of a done one says what became of it; an unknown key is merely unknown", arguments: Implementation.allCases)
    func snoozeWhatIsDone(_ implementation: Implementation) async throws {
        try await withHarness(implementation) { h in
            let log = EventLog(try await h.center.events())
            try await h.center.add(NotificationRequest(key: "tea", content: Self.content("Tea"), trigger: .after(.seconds(2))))
            try await h.center.add(NotificationRequest(key: "gone", content: Self.content("Gone"), trigger: .after(.seconds(3600))))
            #expect(try await h.center.remove(keys: ["gone"]) == ["gone"])
            await h.pass(.seconds(2))
            try await log.wait("Fired tea") { $0.isFired }
            // The daemon forgets a one-shot once its delivery has ended.
            try await waitUntil("tea forgotten", timeout: .seconds(30)) { (try? await h.center.pending().isEmpty) == true }
            let advice = ": only a pending or ringing one can be snoozed; to be reminded again, schedule it again"
            let rows: [(key: String, says: String)] = [("tea", "notification 'tea' fired at "),
                                                       ("gone", "notification 'gone' was cancelled at ")]
            for row in rows {
                do throws(TocsinClientError) {
                    _ = try await h.center.snooze(key: row.key, for: .seconds(60))
                    Issue.record("\(row.key): a snooze of a done notification succeeded")
                } catch {
                    #expect(error.code == .notFound && error.field == "key", "\(row.key)")
                    #expect(error.message.hasPrefix(row.says) && error.message.hasSuffix(advice), "\(row.key): \(error.message)")
                }
            }
            do throws(TocsinClientError) {
                _ = try await h.center.snooze(key: "never", for: .seconds(60))
                Issue.record("a snooze of an unknown key succeeded")
            } catch {
                #expect(error.code == .notFound && error.message == "no notification with key 'never'", "\(error.message)")
            }
            // Acknowledging what is done has nothing to do (a Dismiss racing another surface's
            // acknowledge); only a key never known is an error.
            #expect(try await h.center.acknowledge(key: "tea") == false)
            #expect(try await h.center.acknowledge(key: "gone") == false)
            do throws(TocsinClientError) {
                _ = try await h.center.acknowledge(key: "never")
                Issue.record("an acknowledge of an unknown key succeeded")
            } catch {
                #expect(error.code == .notFound, "\(error.message)")
            }
        }
    }

    @Test("quiet hours switch on for a while and off again", arguments: Implementation.allCases)
    func quietHours(_ implementation: Implementation) async throws {
        try await withHarness(implementation) { h in
            #expect(try await h.center.quietState().active == false)
            let start = await h.now()
            let on = try await h.center.quietOn(.duration(.seconds(3600)))
            #expect(on.active && on.source == .manual)
            #expect(on.until.map { abs($0.timeIntervalSince(start) - 3600) < 30 } == true, "\(on)")
            #expect(try await h.center.quietState().active)
            let off = try await h.center.quietOff()
            #expect(!off.active)
        }
    }

    @Test("status counts what is pending and names the next one", arguments: Implementation.allCases)
    func status(_ implementation: Implementation) async throws {
        try await withHarness(implementation) { h in
            try await h.center.add(NotificationRequest(key: "later", content: Self.content("Later"), trigger: .after(.seconds(7200))))
            try await h.center.add(NotificationRequest(key: "sooner", content: Self.content("Sooner"), trigger: .after(.seconds(3600))))
            let status = try await h.center.status()
            #expect(status.pending == 2 && status.nextKey == "sooner", "\(status)")
        }
    }

    @Test("a stream for some keys carries only theirs", arguments: Implementation.allCases)
    func scopedStream(_ implementation: Implementation) async throws {
        try await withHarness(implementation) { h in
            let only = EventLog(try await h.center.events(.keys(["b"])))
            let all = EventLog(try await h.center.events(.all))
            for key in ["a", "b"] {
                try await h.center.add(NotificationRequest(key: key, content: Self.content(key), trigger: .after(.seconds(3600))))
            }
            _ = try await h.center.remove(keys: ["a", "b"])
            try await all.state.wait("both Cancelled", timeout: .seconds(30)) { $0.contains(.cancelled(key: "a")) && $0.contains(.cancelled(key: "b")) }
            try await only.wait("Cancelled b") { $0 == .cancelled(key: "b") }
            #expect(!only.events.contains(.cancelled(key: "a")), "\(only.events)")
        }
    }

    @Test("pending() walks every page", arguments: Implementation.allCases)
    func paging(_ implementation: Implementation) async throws {
        try await withHarness(implementation, pageSize: 7) { h in
            let keys = (0..<40).map { String(format: "n%03d", $0) }
            for key in keys {
                try await h.center.add(NotificationRequest(key: key, content: Self.content(key), trigger: .after(.seconds(3600))))
            }
            #expect(try await h.center.pending().map(\.key) == keys)
        }
    }
}
