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
        Row(name: "snooze one that has not fired", code: .invalidRequest, field: "key", local: false) { c, _ throws(TocsinClientError) in
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
            }
            // Nothing was left half-done.
            let pending = try await h.center.pending().map(\.key)
            #expect(pending.allSatisfy { $0 == "fresh" }, "\(row.name): \(pending)")
        }
    }
}
