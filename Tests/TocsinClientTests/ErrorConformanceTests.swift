import Foundation
import Testing
import TocsinClient
import TocsinClientTesting
import TocsinTesting

/// Bad requests answer one typed error on both implementations: refused by the client before
/// any call where it can tell, else by the daemon (or the double, playing it) naming the field.
@Suite("TocsinClient conformance: errors")
struct ErrorConformanceTests {
    struct Row: Sendable, CustomStringConvertible {
        let name: String
        let code: TocsinClientError.Code
        let field: String?
        /// Refused by the client itself: no daemon error name.
        let local: Bool
        /// Words the message holds, as the daemon writes them, where the double or the client's
        /// own check must reproduce them.
        var says: String? = nil
        /// Words the message must not hold (a field named twice).
        var never: String? = nil
        let run: @Sendable (any TocsinNotifying, Date) async throws(TocsinClientError) -> Void
        var description: String { name }
    }

    static func request(_ trigger: NotificationTrigger, key: String = "k", title: String = "T",
                        backends: [String]? = Backends.events) -> NotificationRequest {
        NotificationRequest(key: key, content: NotificationContent(title: title, backends: backends), trigger: trigger)
    }

    static let rows: [Row] = [
        Row(name: "empty key", code: .invalidRequest, field: "key", local: true) { c, _ throws(TocsinClientError) in
            try await c.add(request(.after(.seconds(60)), key: ""))
        },
        Row(name: "key with a space", code: .invalidRequest, field: "key", local: true) { c, _ throws(TocsinClientError) in
            try await c.add(request(.after(.seconds(60)), key: "a b"))
        },
        Row(name: "empty title", code: .invalidRequest, field: "title", local: true) { c, _ throws(TocsinClientError) in
            try await c.add(request(.after(.seconds(60)), title: ""))
        },
        Row(name: "interval of zero", code: .invalidRequest, field: "after", local: true) { c, _ throws(TocsinClientError) in
            try await c.add(request(.after(.zero)))
        },
        Row(name: "interval under a microsecond", code: .invalidRequest, field: "after", local: true) { c, _ throws(TocsinClientError) in
            try await c.add(request(.after(.nanoseconds(999))))
        },
        Row(name: "remove a key with a space", code: .invalidRequest, field: "key", local: true) { c, _ throws(TocsinClientError) in
            _ = try await c.remove(keys: ["ok", "not ok"])
        },
        Row(name: "repeating interval of zero", code: .invalidRequest, field: "every", local: true) { c, _ throws(TocsinClientError) in
            try await c.add(request(.every(.zero)))
        },
        Row(name: "count on a one-shot interval", code: .invalidRequest, field: "count", local: true) { c, _ throws(TocsinClientError) in
            try await c.add(request(.after(.seconds(60), repeats: false, count: 3)))
        },
        Row(name: "count of zero", code: .invalidRequest, field: "count", local: true) { c, _ throws(TocsinClientError) in
            try await c.add(request(.every(.seconds(60), count: 0)))
        },
        Row(name: "calendar builder hour 24", code: .invalidRequest, field: "on_calendar", local: true) { c, _ throws(TocsinClientError) in
            try await c.add(request(try .calendar(CalendarComponents(hour: 24))))
        },
        Row(name: "no reminders", code: .invalidRequest, field: "remind_before", local: true) { c, now throws(TocsinClientError) in
            try await c.add(request(.reminders(before: [], event: now + 3600)))
        },
        Row(name: "NUL in the body", code: .invalidRequest, field: "body", local: true) { c, _ throws(TocsinClientError) in
            try await c.add(NotificationRequest(key: "k", content: NotificationContent(title: "T", body: "a\u{0}b"), trigger: .after(.seconds(9))))
        },
        Row(name: "NUL in an action id", code: .invalidRequest, field: "actions", local: true) { c, _ throws(TocsinClientError) in
            let content = NotificationContent(title: "T", actions: [NotificationAction(id: "a\u{0}b", title: "Label")])
            try await c.add(NotificationRequest(key: "k", content: content, trigger: .after(.seconds(9))))
        },
        Row(name: "NUL in a user_info key", code: .invalidRequest, field: "user_info", local: true) { c, _ throws(TocsinClientError) in
            try await c.add(NotificationRequest(key: "k", content: NotificationContent(title: "T", userInfo: ["k\u{0}j": "v"]), trigger: .after(.seconds(9))))
        },
        Row(name: "an empty backends list", code: .invalidRequest, field: "backends", local: true) { c, _ throws(TocsinClientError) in
            try await c.add(request(.after(.seconds(60)), backends: []))
        },
        Row(name: "snooze for zero", code: .invalidRequest, field: "duration", local: true) { c, _ throws(TocsinClientError) in
            _ = try await c.snooze(key: "k", for: .zero)
        },
        Row(name: "key with a no-break space (U+00A0)", code: .invalidRequest, field: "key", local: true, says: "'key' must not contain spaces or control characters: U+00A0 at character 2 is a space or separator") { c, _ throws(TocsinClientError) in
            try await c.add(request(.after(.seconds(60)), key: "a\u{00A0}b"))
        },
        Row(name: "key with a line separator (U+2028)", code: .invalidRequest, field: "key", local: true, says: "U+2028 at character 2 is a space or separator") { c, _ throws(TocsinClientError) in
            try await c.add(request(.after(.seconds(60)), key: "a\u{2028}b"))
        },
        Row(name: "key with a zero-width space (U+200B)", code: .invalidRequest, field: "key", local: true, says: "U+200B at character 2 is an invisible character (zero-width space, word joiner or byte-order mark)") { c, _ throws(TocsinClientError) in
            try await c.add(request(.after(.seconds(60)), key: "a\u{200B}b"))
        },
        Row(name: "key with a right-to-left override (U+202E)", code: .invalidRequest, field: "key", local: true, says: "U+202E at character 2 is a bidi control") { c, _ throws(TocsinClientError) in
            try await c.add(request(.after(.seconds(60)), key: "a\u{202E}b"))
        },
        Row(name: "acknowledge a key with a zero-width space", code: .invalidRequest, field: "key", local: true) { c, _ throws(TocsinClientError) in
            _ = try await c.acknowledge(key: "\u{200B}k")
        },
        Row(name: "an empty user_info key", code: .invalidRequest, field: "user_info", local: true, says: "a key in 'user_info' must not be empty") { c, _ throws(TocsinClientError) in
            try await c.add(NotificationRequest(key: "k", content: NotificationContent(title: "T", backends: Backends.events, userInfo: ["": "x"]),
                                                trigger: .after(.seconds(60))))
        },
        Row(name: "an at past 9999-12-31", code: .invalidRequest, field: "at", local: true, says: "'at' @253402387200.000000 reaches past 9999-12-31T23:59:59Z, the latest instant Tocsin schedules") { c, _ throws(TocsinClientError) in
            try await c.add(request(.at(Date(timeIntervalSince1970: 253_402_387_200))))
        },
        Row(name: "an after reaching past 9999-12-31", code: .invalidRequest, field: "after", local: true, says: "'after' 9223372036854775807us reaches past 9999-12-31T23:59:59Z, the latest instant Tocsin schedules") { c, _ throws(TocsinClientError) in
            try await c.add(request(.after(.seconds(300_000 * 365 * 86_400))))
        },
        Row(name: "history limit over 10000", code: .invalidRequest, field: "limit", local: true) { c, _ throws(TocsinClientError) in
            _ = try await c.history(HistoryQuery(limit: 20_000))
        },
        Row(name: "snooze for a nanosecond", code: .invalidRequest, field: "duration", local: true) { c, _ throws(TocsinClientError) in
            _ = try await c.snooze(key: "k", for: .nanoseconds(1))
        },
        Row(name: "quiet on for a nanosecond", code: .invalidRequest, field: "for", local: true) { c, _ throws(TocsinClientError) in
            _ = try await c.quietOn(.duration(.nanoseconds(1)))
        },
        Row(name: "snooze shorter than min_period", code: .invalidRequest, field: "duration", local: false, says: "argument 'duration': 500ms is below [daemon] min_period (1s); a notification may fire at most once per min_period") { c, _ throws(TocsinClientError) in
            _ = try await c.snooze(key: "k", for: .milliseconds(500))
        },
        Row(name: "every below min_period", code: .invalidRequest, field: "every", local: false, says: "'every' is 500ms, closer than [daemon] min_period (1s); a notification may fire at most once per min_period") { c, _ throws(TocsinClientError) in
            try await c.add(request(.every(.milliseconds(500))))
        },
        Row(name: "reminders closer than min_period", code: .invalidRequest, field: "remind_before", local: false, says: "are 500ms apart, closer than [daemon] min_period (1s)") { c, now throws(TocsinClientError) in
            try await c.add(request(.reminders(before: [.milliseconds(500), .zero], event: now + 3600)))
        },
        Row(name: "calendar elapsing closer than min_period", code: .invalidRequest, field: "on_calendar", local: false, says: "can elapse 500ms after the elapse before, closer than [daemon] min_period (1s)") { c, _ throws(TocsinClientError) in
            try await c.add(request(.calendar("*:*:00/0.5")))
        },
        Row(name: "quiet on until a time past", code: .invalidRequest, field: "until", local: false, says: "field 'until': @", never: "invalid 'until'") { c, now throws(TocsinClientError) in
            _ = try await c.quietOn(.until(now - 60))
        },
        Row(name: "calendar that never elapses again", code: .invalidTrigger, field: "on_calendar", local: false, says: "field 'on_calendar': 'on_calendar' expression '2020-01-01 00:00:00' never elapses again") { c, _ throws(TocsinClientError) in
            try await c.add(request(.calendar("2020-01-01 00:00:00")))
        },
        Row(name: "every with until before its first firing", code: .invalidTrigger, field: "every", local: false, says: "field 'every': 'every' never fires: 'until' is before the next firing") { c, now throws(TocsinClientError) in
            try await c.add(request(.every(.seconds(60), until: now + 30)))
        },
        Row(name: "every with until in the past", code: .invalidTrigger, field: "every", local: false, says: "field 'every': 'every' never fires: 'until' is before the next firing") { c, now throws(TocsinClientError) in
            try await c.add(request(.every(.seconds(60), until: now - 60)))
        },
        Row(name: "a date in the past", code: .invalidTrigger, field: "at", local: false) { c, now throws(TocsinClientError) in
            try await c.add(request(.at(now - 60)))
        },
        Row(name: "every reminder in the past", code: .invalidTrigger, field: "remind_before", local: false) { c, now throws(TocsinClientError) in
            try await c.add(request(.reminders(before: [.seconds(3600), .seconds(120)], event: now + 60)))
        },
        Row(name: "calendar expression with hour 25", code: .invalidRequest, field: "on_calendar", local: false) { c, _ throws(TocsinClientError) in
            try await c.add(request(.calendar("Mon..Fri 25:00")))
        },
        Row(name: "unknown zone", code: .invalidTrigger, field: "timezone", local: false) { c, _ throws(TocsinClientError) in
            try await c.add(request(.calendar("daily", timeZone: "Mars/Olympus")))
        },
        Row(name: "unknown backend", code: .unknownBackend, field: "backends", local: false) { c, _ throws(TocsinClientError) in
            try await c.add(request(.after(.seconds(60)), backends: ["pager"]))
        },
        Row(name: "acknowledge an unknown key", code: .notFound, field: "key", local: false) { c, _ throws(TocsinClientError) in
            _ = try await c.acknowledge(key: "nobody")
        },
        Row(name: "snooze one that has not fired", code: .invalidRequest, field: "key", local: false,
            says: "argument 'key': notification 'fresh' has not fired yet; there is nothing to snooze") { c, _ throws(TocsinClientError) in
            try await c.add(request(.after(.seconds(3600)), key: "fresh"))
            _ = try await c.snooze(key: "fresh", for: .seconds(60))
        },
    ]

    @Test("a bad request is a TocsinClientError with the code, field and origin of its row",
          arguments: Implementation.allCases, rows)
    func badRequest(_ implementation: Implementation, _ row: Row) async throws {
        try await withHarness(implementation) { h in
            let now = await h.now()
            do throws(TocsinClientError) {
                try await row.run(h.center, now)
                Issue.record("\(row.name): no error on \(implementation)")
            } catch {
                #expect(error.code == row.code, "\(row.name): \(error)")
                #expect(error.field == row.field, "\(row.name): \(error)")
                #expect((error.name == nil) == row.local, "\(row.name): refused by \(error.name ?? "the client"): \(error)")
                #expect(!error.message.isEmpty, "\(row.name)")
                if let says = row.says { #expect(error.message.contains(says), "\(row.name): \(error.message)") }
                if let never = row.never { #expect(!error.message.contains(never), "\(row.name): \(error.message)") }
            }
            // Nothing was left half-done.
            let pending = try await h.center.pending().map(\.key)
            #expect(pending.allSatisfy { $0 == "fresh" }, "\(row.name): \(pending)")
        }
    }
}
