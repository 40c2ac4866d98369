import Foundation
import Testing
import TocsinTesting

@Suite("SIGHUP reload of a running daemon")
struct SighupReloadTests {
    static func config(_ notifications: String) -> String {
        "[backend.log]\ntype = \"log\"\nformat = \"json\"\n\n" + notifications
    }

    @Test("a broken config is logged with file:line:column and the old one keeps firing; a fixed one is picked up without re-firing")
    func reload() async throws {
        let tick = "[[notification]]\nkey = \"tick\"\ntitle = \"Tick\"\nevery = \"1s\"\n"
        let d = try DaemonUnderTest(config: Self.config(tick))
        let p = try await d.startAndWait()
        defer { p.signal(SIGKILL) }
        try await p.waitForOutput(containing: "\"key\":\"tick\"", timeout: .seconds(10))

        try d.rewrite(config: Self.config(tick + "[[notification]]\ntitel = \"oops\"\nafter = \"1s\"\n"))
        p.signal(SIGHUP)
        let log = try await p.waitForStderr(containing: "reload failed; keeping the running configuration", timeout: .seconds(10))
        #expect(log.contains("\(d.configPath):10:1: error: unknown key 'titel' in [[notification]] #2; did you mean 'title'?"), "\(log)")
        // Still firing the old schedule.
        let before = p.firings(key: "tick").count
        _ = try await p.output.wait("more ticks", timeout: .seconds(10)) { state in
            state.stdoutText.components(separatedBy: "\"key\":\"tick\"").count - 1 >= before + 2
        }

        // A fixed config: the unchanged 'tick' keeps its state, the new one is added.
        let once = "[[notification]]\nkey = \"once\"\ntitle = \"Once\"\nafter = \"1s\"\n"
        try d.rewrite(config: Self.config(tick + once))
        p.signal(SIGHUP)
        try await p.waitForStderr(containing: "reloaded added=1 changed=0 removed=0 unchanged=1 unchanged_backends=log", timeout: .seconds(10))
        try await p.waitForOutput(containing: "\"key\":\"once\"", timeout: .seconds(10))
        let ticks = p.firings(key: "tick").compactMap { $0["occurrence"] as? Int }
        #expect(ticks == Array(1...ticks.count), "a reload restarted or repeated the unchanged repeating notification: \(ticks)")
    }
}
