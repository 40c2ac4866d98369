import Foundation
import Logging
import Synchronization
import Testing
import TocsinCore
@testable import TocsinDesktopBackend

/// The record of shown popups a `libnotify` backend keeps in the state directory for the start
/// after a crash (review of alarms, finding 3). Taking the popups over against a real server is
/// `FaultKillTests`' "kill -9 while a popup is up".
@Suite("Desktop backend: the record of shown popups")
struct PopupRecordsTests {
    @Test("written and read back: the server's unique name, each popup's id, key and button ids (any text, in hex)")
    func roundTrip() throws {
        let c = PopupRecords.Contents(server: ":1.42", bus: "0123456789abcdef0123456789abcdef", popups: [
            PopupRecord(id: 7, key: "wake", actions: ["dismiss", "snooze", "default"]),
            PopupRecord(id: 9, key: "tea", actions: ["open it", "ünï,cødé\n", "default"]),
            PopupRecord(id: 12, key: "plain", actions: []),
        ])
        let text = PopupRecords.render(c)
        #expect(text.hasPrefix("tocsin-popups 1\nserver :1.42\nbus 0123456789abcdef0123456789abcdef\npopup 7 wake 6469736d697373,736e6f6f7a65,64656661756c74\n"), "\(text)")
        #expect(try PopupRecords.parse(Array(text.utf8)).get() == c)
    }

    static let malformed: [String] = [
        "",
        "tocsin-popups 2\nserver :1.4\n",
        "tocsin-popups 1\n",
        "tocsin-popups 1\nserver org.freedesktop.Notifications\n",
        "tocsin-popups 1\nserver :1.4\npopup 7 wake 64\npopup 7 other 64\n",
        "tocsin-popups 1\nserver :1.4\nbus 0123\npopup 7 wake 64\n",
        "tocsin-popups 1\nserver :1.4\nbus 0123456789ABCDEF0123456789ABCDEF\npopup 7 wake 64\n",
        "tocsin-popups 1\nserver :1.4\npopup 0 wake 64\n",
        "tocsin-popups 1\nserver :1.4\npopup -7 wake 64\n",
        "tocsin-popups 1\nserver :1.4\npopup 4294967296 wake 64\n",
        "tocsin-popups 1\nserver :1.4\npopup 7 wa\u{1b}ke 64\n",
        "tocsin-popups 1\nserver :1.4\npopup 7 wake 6\n",
        "tocsin-popups 1\nserver :1.4\npopup 7 wake zz\n",
        "tocsin-popups 1\nserver :1.4\npopup 7 wake 64,\n",
        "tocsin-popups 1\nserver :1.4\npopup 7 wake 64 extra\n",
        "tocsin-popups 1\nserver :1.4\npopup 7 wake 64",
    ]

    @Test("a file not exactly in the format is refused", arguments: malformed)
    func refused(_ text: String) {
        guard case .failure = PopupRecords.parse(Array(text.utf8)) else {
            Issue.record("accepted: \(text.debugDescription)")
            return
        }
    }

    @Test("at start, a malformed record file is ignored with a warning and removed, without loading libnotify")
    func malformedAtStart() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("tocsin-popups-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let file = PopupRecords.file(directory: dir, backend: "popup")
        try Data([0xFF, 0x00, 0x41]).write(to: URL(fileURLWithPath: file))
        let lines = Lines()
        let runtime = LibNotifyRuntime()
        let backend = DesktopBackend(name: "popup", options: DesktopOptions(), logger: Logger(label: "test") { _ in lines },
                                     runtime: runtime, stateDirectory: dir)
        await backend.start(events: NoEvents())
        #expect(!FileManager.default.fileExists(atPath: file))
        #expect(lines.messages.contains { $0.hasPrefix("ignored and removed the record of the popups shown") }, "\(lines.messages)")
        #expect(runtime.linkIfStarted() == nil, "libnotify's loop was started for nothing")
    }
}

private struct NoEvents: BackendEventSink {
    func send(_ event: BackendEvent) {}
}

private final class Lines: LogHandler, @unchecked Sendable {
    private let all = Mutex<[String]>([])
    var messages: [String] { all.withLock { $0 } }
    var logLevel: Logger.Level = .debug
    var metadata: Logger.Metadata = [:]
    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }
    func log(event: LogEvent) { all.withLock { $0.append("\(event.message)") } }
}
