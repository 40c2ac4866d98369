import Foundation
import Testing
@testable import TocsinLogBackend
import TocsinCore
import TocsinTime

@Suite("log backend")
struct LogBackendTests {
    let f: Firing = {
        let n = Notification(key: "tea", title: "Tea \"green\"", body: "a\nb", trigger: .at(Instant(seconds: 1_800_000_000)),
                             userInfo: ["cup": "1"])
        return Firing(notification: n, occurrence: Occurrence(instant: Instant(seconds: 1_800_000_000), number: 2),
                      due: Instant(seconds: 1_800_000_000), fired: Instant(seconds: 1_800_000_005), reason: .late)
    }()

    @Test("text lines quote only what needs it and say when a firing is late")
    func text() {
        #expect(LogBackend.text(f) == "tocsin: fired key=tea title=\"Tea \\\"green\\\"\" body=\"a\\nb\" due=2027-01-15T08:00:00Z occurrence=2 reason=late late=5s")
    }

    @Test("regression: C1 and bidi controls in a title are escaped in text lines (they were written raw)")
    func textEscapesControls() {
        var g = f
        // Without a C0 character, which alone already made the title quoted (and so escaped).
        g.notification.title = "x\u{9b}31m\u{202e}y"
        #expect(LogBackend.text(g).contains(#"title="x\u009b31m\u202ey""#), "\(LogBackend.text(g))")
    }

    @Test("JSON lines parse and carry the fields")
    func json() throws {
        let obj = try #require(try JSONSerialization.jsonObject(with: Data(LogBackend.json(f).utf8)) as? [String: Any])
        #expect(obj["key"] as? String == "tea")
        #expect(obj["title"] as? String == "Tea \"green\"")
        #expect(obj["body"] as? String == "a\nb")
        #expect(obj["late"] as? Bool == true)
        #expect(obj["occurrence"] as? Int == 2)
        #expect((obj["user_info"] as? [String: String]) == ["cup": "1"])
    }
}
