@testable import DBus
import Foundation
import Testing
@testable import TocsinClient
import TocsinClientTesting
import TocsinTesting

/// The pieces that need no daemon: the calendar builder, the request encoding, the error mapping,
/// and what the double adds for tests (a clock, a call log, injected failures).
@Suite("TocsinClient without a bus")
struct ClientUnitTests {
    struct BuilderRow: Sendable, CustomStringConvertible {
        let components: CalendarComponents
        let expression: String
        var description: String { expression }
    }

    static let builderRows: [BuilderRow] = [
        .init(components: CalendarComponents(hour: 7, minute: 30), expression: "*-*-* 07:30:00"),
        .init(components: CalendarComponents(weekdays: [.monday, .tuesday, .wednesday, .thursday, .friday], hour: 9, minute: 25),
              expression: "Mon..Fri *-*-* 09:25:00"),
        .init(components: CalendarComponents(weekdays: [.saturday, .sunday]), expression: "Sat,Sun *-*-* 00:00:00"),
        .init(components: CalendarComponents(minute: 15), expression: "*-*-* *:15:00"),
        .init(components: CalendarComponents(month: 12, day: 24, hour: 18), expression: "*-12-24 18:00:00"),
        .init(components: CalendarComponents(year: 2027, month: 3), expression: "2027-03-01 00:00:00"),
        .init(components: CalendarComponents(DateComponents(hour: 8, weekday: 1)), expression: "Sun *-*-* 08:00:00"),
        .init(components: CalendarComponents(weekdays: [.monday, .wednesday, .friday], second: 5), expression: "Mon,Wed,Fri *-*-* *:*:05"),
    ]

    @Test("the calendar builder writes the systemd expression DateComponents would match", arguments: builderRows)
    func builder(_ row: BuilderRow) {
        #expect(row.components.expression == row.expression, "row \(row.expression)")
        #expect(throws: Never.self, "row \(row.expression)") { try row.components.validate() }
    }

    @Test("a builder with no field is refused before any call: it would match every instant")
    func emptyBuilder() {
        #expect(throws: TocsinClientError.self) { _ = try NotificationTrigger.calendar(CalendarComponents()) }
    }

    @Test("the builder's expressions fire where systemd says, on the double's clock (TocsinTime's calendar code)")
    func builderFiresOnTheDouble() async throws {
        // Thursday 2027-01-07 12:00 UTC.
        let center = InMemoryNotificationCenter(now: Date(timeIntervalSince1970: 1_799_323_200))
        let log = EventLog(try await center.events())
        let trigger = try NotificationTrigger.calendar(CalendarComponents(weekdays: [.monday, .tuesday, .wednesday, .thursday, .friday], hour: 9, minute: 25))
        try await center.add(NotificationRequest(key: "standup", content: NotificationContent(title: "Stand-up"), trigger: trigger))
        #expect(try await center.pending().first?.nextFire == Date(timeIntervalSince1970: 1_799_400_300), "Fri 2027-01-08 09:25 UTC")
        await center.advance(by: .seconds(86_400 * 7))
        try await log.state.wait("five firings in a week", timeout: .seconds(10)) { $0.filter(\.isFired).count == 5 }
        let days = log.fired("standup").map { Int($0.due.timeIntervalSince1970) }
        #expect(days == [1_799_400_300, 1_799_659_500, 1_799_745_900, 1_799_832_300, 1_799_918_700], "Fri, Mon..Thu")
    }

    @Test("a request encodes to the gateway's a{sv} with the config file's field names")
    func encoding() throws {
        let request = NotificationRequest(
            key: "auction", content: NotificationContent(
                title: "Auction ends", body: "lot 7", urgency: .low, icon: "bell", actions: [NotificationAction(id: "bid", title: "Bid")],
                sound: "alarm", backends: ["events"], userInfo: ["lot": "7"]),
            trigger: .reminders(before: [.seconds(86_400), .milliseconds(1500)], event: Date(timeIntervalSince1970: 1_800_000_000.25)),
            replacesExisting: false)
        let fields = try Wire.Fields(Wire.spec(request))
        #expect(fields.string("key") == "auction" && fields.string("title") == "Auction ends" && fields.string("body") == "lot 7")
        #expect(fields.string("urgency") == "low" && fields.string("icon") == "bell" && fields.string("sound") == "alarm")
        #expect(fields.string("at") == "@1800000000.250000")
        #expect(fields.strings("remind_before") == ["86400000000us", "1500000us"])
        #expect(fields.table("actions") == ["bid": "Bid"] && fields.table("user_info") == ["lot": "7"])
        #expect(fields.strings("backends") == ["events"] && fields.bool("replace") == false)
        let every = try Wire.Fields(.vardict(Wire.trigger(.every(.seconds(90), count: 3, until: Date(timeIntervalSince1970: -1.5)))))
        #expect(every.string("every") == "90000000us" && every.uint32("count") == 3 && every.string("until") == "@-2.500000")
    }

    struct FieldRow: Sendable, CustomStringConvertible {
        let message: String
        let field: String?
        var description: String { message }
    }

    static let fieldRows: [FieldRow] = [
        .init(message: "field 'at': 'at' is in the past; a past time is never delivered", field: "at"),
        .init(message: "invalid 'on_calendar': hour 25 is out of range (column 10 of the value)", field: "on_calendar"),
        .init(message: "'title' in the notification spec must be a string, found integer", field: "title"),
        .init(message: "'actions.join' must be a string, found integer", field: "actions"),
        .init(message: "unknown key 'titel' in the notification spec; did you mean 'title'?", field: "title"),
        .init(message: "something without a field", field: nil),
    ]

    @Test("the field a daemon message names is found", arguments: fieldRows)
    func fieldInMessage(_ row: FieldRow) {
        #expect(TocsinClientError.field(in: row.message) == row.field, "row \(row.message)")
    }

    static let nameRows: [(name: String, code: TocsinClientError.Code)] = [
        ("io.github.tocsin.Error.NotFound", .notFound),
        ("io.github.tocsin.Error.Storage", .storage),
        ("io.github.tocsin.Error.Stopping", .daemonUnavailable),
        ("org.freedesktop.DBus.Error.ServiceUnknown", .daemonUnavailable),
        ("org.freedesktop.DBus.Error.AccessDenied", .bus),
    ]

    @Test("a reply cut short by the task's cancellation is the cancelled code, not a bus failure")
    func cancelledName() {
        let error = TocsinClientError.fromDaemon(name: "org.tocsin.DBus.Error.Cancelled", message: "call cancelled")
        #expect(error.code == .cancelled && error.name == nil, "\(error)")
    }

    /// A daemon that is stopping refuses calls and changes nothing: to an app that is the daemon
    /// going away, which it already handles, not a disk fault.
    @Test("the daemon's error names map onto codes", arguments: nameRows.map(\.name))
    func errorNames(_ name: String) throws {
        let row = try #require(Self.nameRows.first { $0.name == name })
        let error = TocsinClientError.fromDaemon(name: name, message: "m")
        #expect(error.code == row.code && error.name == name, "row \(name): \(error)")
    }

    @Test("the double records every call in order, and throws a failure the test queued")
    func doubleRecordsAndFails() async throws {
        let center = InMemoryNotificationCenter()
        let request = NotificationRequest(key: "k", content: NotificationContent(title: "T"), trigger: .after(.seconds(60)))
        try await center.add(request)
        await center.failNextCall(with: TocsinClientError(.daemonUnavailable, "the test says so"))
        await #expect(throws: TocsinClientError.self) { _ = try await center.pending() }
        #expect(try await center.pending().count == 1, "one failure per queued error")
        #expect(await center.calls == [.add(request), .pending, .pending])
    }

    @Test("fire(key:) delivers a notification's next firing now; invokeAction answers with its user info")
    func doubleFiresOnDemand() async throws {
        let center = InMemoryNotificationCenter()
        let log = EventLog(try await center.events())
        try await center.add(NotificationRequest(key: "alarm", content: NotificationContent(title: "Wake", userInfo: ["note": "7"]),
                                                 trigger: .every(.seconds(3600), count: 2)))
        try await center.fire(key: "alarm")
        try await center.invokeAction(key: "alarm", action: "snooze")
        try await log.wait("the action") { if case .actionInvoked = $0 { true } else { false } }
        #expect(log.events.count == 2)
        #expect(log.fired("alarm").map(\.occurrence) == [1])
        #expect(log.events.last == .actionInvoked(key: "alarm", action: "snooze", userInfo: ["note": "7"]))
        #expect(try await center.pending().first?.nextFire == (await center.now).addingTimeInterval(7200), "the second of two, on its time")
        await #expect(throws: TocsinClientError.self) { try await center.fire(key: "nobody") }
    }
}

/// Each gateway signal decodes to its event; one of another shape is dropped, not guessed at.
@Suite("TocsinClient signal decoding")
struct SignalDecodingTests {
    struct Row: Sendable, CustomStringConvertible {
        let member: MemberName
        let arguments: [DBusValue]
        let event: NotificationEvent?
        var description: String { "\(member) \(arguments.map(\.type))" }
    }

    static let t = Date(timeIntervalSince1970: 1_800_000_000.5)
    static let rows: [Row] = [
        Row(member: "Fired", arguments: [.string("k"), .vardict([
                ("title", .string("T")), ("body", .string("B")), ("due", .int64(1_800_000_000_500_000)),
                ("fired", .int64(1_800_000_001_000_000)), ("occurrence", .uint32(3)), ("late", .boolean(true)),
                ("user_info", Wire.stringTable([("a", "1")])), ("before", .int64(3_600_000_000)), ("reason", .string("due")),
            ])],
            event: .fired(FiredNotification(key: "k", title: "T", body: "B", due: t, fired: t.addingTimeInterval(0.5), occurrence: 3,
                                            late: true, userInfo: ["a": "1"], before: .seconds(3600)))),
        Row(member: "ActionInvoked", arguments: [.string("k"), .string("join"), Wire.stringTable([("room", "4")])],
            event: .actionInvoked(key: "k", action: "join", userInfo: ["room": "4"])),
        Row(member: "Acknowledged", arguments: [.string("k")], event: .acknowledged(key: "k")),
        Row(member: "Snoozed", arguments: [.string("k"), .int64(1_800_000_000_500_000)], event: .snoozed(key: "k", until: t)),
        Row(member: "Cancelled", arguments: [.string("k")], event: .cancelled(key: "k")),
        Row(member: "Missed", arguments: [.string("k"), .int64(1_800_000_000_500_000)], event: .missed(key: "k", due: t)),
        Row(member: "Unanswered", arguments: [.string("k"), .uint32(10)], event: .unanswered(key: "k", rings: 10)),
        Row(member: "CancelledAll", arguments: [.uint32(20_000)], event: .cancelledAll(count: 20_000)),
        Row(member: "Interrupted", arguments: [.string("k"), .int64(1_800_000_000_500_000), .uint32(2), .array(.string, [.string("log")])],
            event: .interrupted(key: "k", due: t, occurrence: 2, backends: ["log"])),
        Row(member: "CancelledAll", arguments: [.string("k")], event: nil),
        Row(member: "Snoozed", arguments: [.string("k"), .string("soon")], event: nil),
        Row(member: "Fired", arguments: [.uint32(1)], event: nil),
        Row(member: "QuietChanged", arguments: [.boolean(true), .vardict([])], event: nil),
    ]

    @Test("a gateway signal becomes its event", arguments: rows)
    func decode(_ row: Row) {
        let signal = DBusSignal(sender: nil, destination: nil, path: TocsinNotificationCenter.objectPath,
                                interface: TocsinNotificationCenter.interface, member: row.member, arguments: row.arguments)
        #expect(Wire.event(signal) == row.event, "row \(row)")
    }
}

/// History entries as the daemon sends them, built by hand: the kinds and fields of DBUS-API.md,
/// and a kind this client does not know, which is kept rather than dropped.
@Suite("TocsinClient history decoding")
struct HistoryDecodingTests {
    struct Row: Sendable, CustomStringConvertible {
        let name: String
        let fields: [(String, DBusValue)]
        let entry: HistoryEntry?
        var description: String { name }
    }

    static let t = Date(timeIntervalSince1970: 1_800_000_000.5)
    static let base: [(String, DBusValue)] = [("time", .int64(1_800_000_000_500_000)), ("key", .string("k")), ("title", .string("T"))]
    static let rows: [Row] = [
        Row(name: "fired", fields: base + [("event", .string("fired")), ("due", .int64(1_800_000_000_500_000)), ("occurrence", .uint32(2)),
                                           ("late", .boolean(true)), ("backends", .array(.string, [.string("events"), .string("log")]))],
            entry: HistoryEntry(time: t, kind: .fired, key: "k", title: "T", due: t, occurrence: 2, late: true, backends: ["events", "log"])),
        Row(name: "interrupted", fields: base + [("event", .string("interrupted")), ("due", .int64(1_800_000_000_500_000)),
                                                 ("occurrence", .uint32(1)), ("backends", .array(.string, [.string("hook")]))],
            entry: HistoryEntry(time: t, kind: .interrupted, key: "k", title: "T", due: t, occurrence: 1, backends: ["hook"])),
        Row(name: "missed", fields: base + [("event", .string("missed")), ("due", .int64(1_800_000_000_500_000)), ("count", .uint32(3)),
                                            ("backends", .array(.string, []))],
            entry: HistoryEntry(time: t, kind: .missed, key: "k", title: "T", due: t, count: 3)),
        Row(name: "unanswered", fields: base + [("event", .string("unanswered")), ("count", .uint32(10))],
            entry: HistoryEntry(time: t, kind: .unanswered, key: "k", title: "T", count: 10)),
        Row(name: "a newer daemon's kind", fields: base + [("event", .string("escalated"))],
            entry: HistoryEntry(time: t, kind: .other("escalated"), key: "k", title: "T")),
        Row(name: "no time", fields: [("event", .string("fired")), ("key", .string("k"))], entry: nil),
        Row(name: "no event", fields: base, entry: nil),
    ]

    @Test("a History entry decodes with its kind and fields; one without its kind or time is an unexpected reply", arguments: rows)
    func decode(_ row: Row) {
        do throws(TocsinClientError) {
            let entry = try Wire.history(.vardict(row.fields))
            #expect(entry == row.entry, "row \(row.name)")
        } catch {
            #expect(row.entry == nil && error.code == .unexpectedReply, "row \(row.name): \(error)")
        }
    }

    @Test("a kind's word makes the same value whichever way it is built")
    func kindWords() {
        #expect(HistoryEntry.Kind(rawValue: "interrupted") == .interrupted)
        #expect(HistoryEntry.Kind(rawValue: "escalated") == .other("escalated"))
        #expect(HistoryEntry.Kind.other("escalated").rawValue == "escalated")
    }
}

/// The double's routing where the daemon needs a desktop or a sound card to show it: popups
/// are held in quiet hours, signals are not, an alarm passes.
@Suite("TocsinClient double: quiet hours per backend")
struct DoubleQuietTests {
    @Test("a libnotify backend holds a firing in quiet hours, a dbus-signal one delivers it; a replaced one is no longer held")
    func holdsPerBackend() async throws {
        let center = InMemoryNotificationCenter(backends: ["desktop": .libnotify, "events": .dbusSignal, "alarm": .sound])
        let log = EventLog(try await center.events(.all))
        _ = try await center.quietOn(.indefinitely)
        _ = try await center.post(NotificationContent(title: "Popup", backends: ["desktop"]), key: "p")
        _ = try await center.post(NotificationContent(title: "Alarm", backends: ["desktop", "alarm", "events"]), key: "a")
        _ = try await center.post(NotificationContent(title: "Both", backends: ["desktop", "events"]), key: "b")
        #expect(try await center.quietState().held == 2, "p and b held for the popup backend; the alarm passes")
        _ = try await center.post(NotificationContent(title: "Signal", backends: ["events"]), key: "p")
        #expect(try await center.quietState().held == 1, "a post of p replaces what was held of it")
        try await log.state.wait("three fired", timeout: .seconds(10)) { $0.filter(\.isFired).count == 3 }
        #expect(Set(log.events.compactMap(\.key)) == ["a", "b", "p"])
        #expect(try await center.quietOff().held == 0)
    }
}
