import Testing
import TocsinMQTTBackend

@Suite("FleetMessage")
struct FleetMessageTests {
    @Test("a message survives encoding, and its id is kind/key/due/occurrence")
    func roundTrip() throws {
        let m = FleetMessage(kind: .acknowledged, key: "wake/up+#", occurrence: 3, due: 1_700_000_000_000_000,
                             origin: "kitchen", reason: "acknowledged")
        #expect(m.id == "acknowledged/wake/up+#/1700000000000000/3")
        let back = try FleetMessage.decode(m.encoded()).get()
        #expect(back == m)
    }

    @Test("a snooze's id carries its number within the occurrence")
    func snoozeID() throws {
        let m = FleetMessage(kind: .snoozed, key: "wake", occurrence: 1, due: 5, snooze: 2, origin: "a")
        #expect(m.id == "snoozed/wake/5/1/2")
        #expect(try FleetMessage.decode(m.encoded()).get() == m)
    }

    @Test("bad payloads are refused with the reason", arguments: [
        ("not json", "not a Tocsin fleet message"),
        (#"{"version":2,"id":"acknowledged/k/5/1","kind":"acknowledged","key":"k","occurrence":1,"due":5,"origin":"a"}"#, "unknown message version 2"),
        (#"{"version":1,"id":"acknowledged/k/5/1","kind":"rung","key":"k","occurrence":1,"due":5,"origin":"a"}"#, "not a Tocsin fleet message"),
        (#"{"version":1,"id":"acknowledged/ /5/1","kind":"acknowledged","key":" ","occurrence":1,"due":5,"origin":"a"}"#, "spaces or control"),
        (#"{"version":1,"id":"acknowledged//5/1","kind":"acknowledged","key":"","occurrence":1,"due":5,"origin":"a"}"#, "must not be empty"),
        (#"{"version":1,"id":"acknowledged/other/5/1","kind":"acknowledged","key":"k","occurrence":1,"due":5,"origin":"a"}"#, "field 'id'"),
        (#"{"version":1,"id":"snoozed/k/5/1","kind":"snoozed","key":"k","occurrence":1,"due":5,"origin":"a"}"#, "field 'snooze'"),
        (#"{"version":1,"id":"snoozed/k/5/1/0","kind":"snoozed","key":"k","occurrence":1,"due":5,"snooze":0,"origin":"a"}"#, "field 'snooze'"),
        (#"{"version":1,"id":"acknowledged/k/5/1/2","kind":"acknowledged","key":"k","occurrence":1,"due":5,"snooze":2,"origin":"a"}"#, "field 'snooze'"),
    ])
    func refused(row: (String, String)) {
        switch FleetMessage.decode(Array(row.0.utf8)) {
        case .success(let m): Issue.record("row \(row.0) decoded as \(m)")
        case .failure(let e): #expect(e.description.contains(row.1), "row \(row.0): \(e)")
        }
    }

    @Test("a payload over the limit is refused before parsing")
    func tooLarge() {
        let big = [UInt8](repeating: UInt8(ascii: " "), count: FleetMessage.maxPayload + 1)
        guard case .failure(let e) = FleetMessage.decode(big) else { Issue.record("accepted"); return }
        #expect(e.description.contains("limit"))
    }

    @Test("an answer concerns only the occurrence delivered here", arguments: [
        (Int64(100), Int64?.some(100), true),
        (100, 200, false),
        (100, nil, true),
        (0, 200, true),
    ])
    func concerns(row: (Int64, Int64?, Bool)) {
        let m = FleetMessage(kind: .acknowledged, key: "wake", occurrence: 1, due: row.0, origin: "a")
        #expect(m.concerns(localDue: row.1) == row.2, "row due=\(row.0) local=\(String(describing: row.1))")
    }
}
