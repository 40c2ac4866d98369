import Foundation
import Testing
import TocsinConfig
import TocsinCore
import TocsinMQTTBackend
import TocsinTime
import TocsinModel

/// `scheduled` and `cancelled` messages, and a snooze's `until`.
@Suite("FleetMessage: scheduled, cancelled, snooze until")
struct FleetScheduleMessageTests {
    static let due = Instant(microseconds: 1_800_000_000_000_000)

    @Test("each resolved trigger crosses in absolute form and comes back as a spec for the same instants", arguments: [
        ("at", Trigger.at(due), TriggerSpec.at(.instant(due))),
        ("every with starting and until", .every(period: .minutes(25), starting: due, count: 4, until: due + .hours(2)),
         .every(.minutes(25), count: 4, starting: .instant(due), until: .instant(due + .hours(2)))),
        ("remind_before", .remindBefore(event: due, offsets: [.hours(1), .zero]), .remindBefore(event: .instant(due), offsets: [.hours(1), .zero])),
    ] as [(String, Trigger, TriggerSpec)])
    func triggers(row: (String, Trigger, TriggerSpec)) throws {
        var n = TocsinCore.Notification(key: "tea/1", title: "Tea", body: "Green", trigger: row.1, backends: ["alarm", "fleet"],
                                        urgency: .critical, actions: [NotificationAction(id: "ok", label: "OK")],
                                        userInfo: ["room": "kitchen"], missed: .skip, maxLate: .minutes(5), timezone: "Europe/Berlin")
        n.sound = "bell"
        let m = FleetMessage(kind: .scheduled, key: n.key, occurrence: 0, due: 42, origin: "a", notification: FleetNotification(n))
        #expect(m.id == "scheduled/tea/1/42/0", "row \(row.0)")
        let back = try FleetMessage.decode(m.encoded()).get()
        let spec = try #require(try back.notification?.spec(key: back.key).get(), "row \(row.0)")
        #expect(spec.trigger == row.2, "row \(row.0)")
        #expect(spec.key == "tea/1" && spec.fleet, "row \(row.0)")
        #expect(spec.title == "Tea" && spec.body == "Green" && spec.backends == ["alarm", "fleet"], "row \(row.0)")
        #expect(spec.urgency == .critical && spec.sound == "bell" && spec.missed == .skip && spec.maxLate == .minutes(5), "row \(row.0)")
        #expect(spec.actions == [NotificationAction(id: "ok", label: "OK")] && spec.userInfo == ["room": "kitchen"], "row \(row.0)")
        #expect(spec.timezone == "Europe/Berlin", "row \(row.0)")
    }

    @Test("a calendar trigger crosses as its normalized expression with its DST policies")
    func calendar() throws {
        var c = try CalendarSpec.parse("Mon..Fri 07:00")
        c.dstGap = .shift
        let n = TocsinCore.Notification(key: "wake", title: "Wake", trigger: .calendar(c, zone: .utc), timezone: "UTC")
        let spec = try FleetNotification(n).spec(key: "wake").get()
        guard case .onCalendar(let back) = spec.trigger else { Issue.record("trigger \(spec.trigger)"); return }
        #expect(back.normalized == c.normalized)
        #expect(back.dstGap == .shift && back.dstFold == .first)
        #expect(spec.timezone == "UTC")
    }

    @Test("wake crosses when set, and a message without it (an older machine's) reads as false")
    func wake() throws {
        var n = TocsinCore.Notification(key: "up", title: "Up", trigger: .at(Self.due))
        n.wake = true
        let m = FleetMessage(kind: .scheduled, key: n.key, occurrence: 0, due: 42, origin: "a", notification: FleetNotification(n))
        #expect(try FleetMessage.decode(m.encoded()).get().notification?.spec(key: "up").get().wake == true)
        n.wake = false
        let plain = FleetMessage(kind: .scheduled, key: n.key, occurrence: 0, due: 42, origin: "a", notification: FleetNotification(n))
        #expect(!String(decoding: plain.encoded(), as: UTF8.self).contains("wake"), "not sent when false")
        #expect(try FleetMessage.decode(plain.encoded()).get().notification?.spec(key: "up").get().wake == false)
    }

    @Test("a snooze carries its until; a cancel needs nothing else")
    func snoozeAndCancel() throws {
        let s = FleetMessage(kind: .snoozed, key: "wake", occurrence: 1, due: 5, snooze: 1, origin: "a", until: 95_000_000)
        #expect(try FleetMessage.decode(s.encoded()).get().until == 95_000_000)
        let c = FleetMessage(kind: .cancelled, key: "wake", occurrence: 0, due: 7, origin: "a")
        #expect(c.id == "cancelled/wake/7/0")
        #expect(try FleetMessage.decode(c.encoded()).get() == c)
    }

    static let trigger = #""trigger":{"kind":"at","at":5}"#

    @Test("bad scheduled/cancelled/snoozed payloads are refused, naming the field", arguments: [
        ("scheduled without notification", #"{"version":1,"id":"scheduled/k/5/0","kind":"scheduled","key":"k","occurrence":0,"due":5,"origin":"a"}"#, "field 'notification'"),
        ("notification in a cancel", #"{"version":1,"id":"cancelled/k/5/0","kind":"cancelled","key":"k","occurrence":0,"due":5,"origin":"a","notification":{"title":"T",\#(trigger)}}"#, "field 'notification'"),
        ("until in an acknowledge", #"{"version":1,"id":"acknowledged/k/5/1","kind":"acknowledged","key":"k","occurrence":1,"due":5,"origin":"a","until":9}"#, "field 'until'"),
        ("empty title", #"{"version":1,"id":"scheduled/k/5/0","kind":"scheduled","key":"k","occurrence":0,"due":5,"origin":"a","notification":{"title":"",\#(trigger)}}"#, "'notification.title'"),
        ("unknown trigger kind", #"{"version":1,"id":"scheduled/k/5/0","kind":"scheduled","key":"k","occurrence":0,"due":5,"origin":"a","notification":{"title":"T","trigger":{"kind":"after"}}}"#, "'notification.trigger.kind'"),
        ("every without starting", #"{"version":1,"id":"scheduled/k/5/0","kind":"scheduled","key":"k","occurrence":0,"due":5,"origin":"a","notification":{"title":"T","trigger":{"kind":"every","every":60000000}}}"#, "'notification.trigger.starting'"),
        ("every of zero", #"{"version":1,"id":"scheduled/k/5/0","kind":"scheduled","key":"k","occurrence":0,"due":5,"origin":"a","notification":{"title":"T","trigger":{"kind":"every","every":0,"starting":5}}}"#, "'notification.trigger.every'"),
        ("bad calendar", #"{"version":1,"id":"scheduled/k/5/0","kind":"scheduled","key":"k","occurrence":0,"due":5,"origin":"a","notification":{"title":"T","trigger":{"kind":"on_calendar","on_calendar":"Mon..Fir"}}}"#, "'notification.trigger.on_calendar'"),
        ("negative offset", #"{"version":1,"id":"scheduled/k/5/0","kind":"scheduled","key":"k","occurrence":0,"due":5,"origin":"a","notification":{"title":"T","trigger":{"kind":"remind_before","at":5,"offsets":[-1]}}}"#, "'notification.trigger.offsets'"),
        ("bad urgency", #"{"version":1,"id":"scheduled/k/5/0","kind":"scheduled","key":"k","occurrence":0,"due":5,"origin":"a","notification":{"title":"T","urgency":"loud",\#(trigger)}}"#, "'notification.urgency'"),
        ("bad missed", #"{"version":1,"id":"scheduled/k/5/0","kind":"scheduled","key":"k","occurrence":0,"due":5,"origin":"a","notification":{"title":"T","missed":"never",\#(trigger)}}"#, "'notification.missed'"),
        ("path as zone", #"{"version":1,"id":"scheduled/k/5/0","kind":"scheduled","key":"k","occurrence":0,"due":5,"origin":"a","notification":{"title":"T","timezone":"/etc/passwd",\#(trigger)}}"#, "'notification.timezone'"),
        ("action not a pair", #"{"version":1,"id":"scheduled/k/5/0","kind":"scheduled","key":"k","occurrence":0,"due":5,"origin":"a","notification":{"title":"T","actions":[["ok"]],\#(trigger)}}"#, "'notification.actions'"),
        ("NUL in a user_info value", #"{"version":1,"id":"scheduled/k/5/0","kind":"scheduled","key":"k","occurrence":0,"due":5,"origin":"a","notification":{"title":"T","user_info":{"a":"x\u0000y"},\#(trigger)}}"#, "'notification.user_info' must not contain NUL"),
        ("id of another key", #"{"version":1,"id":"scheduled/x/5/0","kind":"scheduled","key":"k","occurrence":0,"due":5,"origin":"a","notification":{"title":"T",\#(trigger)}}"#, "field 'id'"),
    ])
    func refused(row: (String, String, String)) {
        switch FleetMessage.decode(Array(row.1.utf8)) {
        case .success(let m): Issue.record("row '\(row.0)' decoded as \(m)")
        case .failure(let e): #expect(e.description.contains(row.2), "row '\(row.0)': \(e)")
        }
    }
}
