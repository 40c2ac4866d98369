import Foundation
import Glibc
import Testing
import TocsinTesting

/// `scripts/run.sh`'s demo on a machine without a notification server, as a newcomer runs it:
/// its own bus, no display. run.sh itself only adds the dependency install and a release build.
@Suite("run.sh demo, headless")
struct DemoScriptTests {
    @Test("says once that popups are off, prints no warning or error, shows the firing, and stops cleanly on Ctrl-C")
    func headless() async throws {
        let dir = TemporaryDirectory()
        let p = try TestProcess("bash", [GatewayFixture.repositoryRoot + "/scripts/demo-session.sh", Products.executable("tocsin")],
                                environment: ["TOCSIN_DEMO_OWN_BUS": "1", "TOCSIN_DEMO_DISPLAY": "none", "TOCSIN_DEMO_DIR": dir.path])
        var stopped = false
        // On failure, the whole group: the script, its daemon and its `watch`.
        defer { if !stopped { _ = Glibc.kill(-p.pid, SIGKILL) } }
        try await p.waitForStderr(containing: "the daemon keeps running", timeout: .seconds(60))
        // Ctrl-C: the terminal signals the whole foreground process group.
        _ = Glibc.kill(-p.pid, SIGINT)
        let status: TocsinTesting.ExitStatus
        do {
            status = try await p.waitForExit(timeout: .seconds(20))
        } catch {
            // Say what was still running and what the demo and its daemon last said.
            let all = (try? runBlocking("ps", ["-e", "-o", "pgid=,pid=,stat=,wchan:20=,args="]).stdout) ?? ""
            let left = all.split(separator: "\n").filter { $0.split(separator: " ").first == "\(p.pid)" }
            // Each one's signal state: a process that outlives a SIGTERM has it blocked, ignored or caught.
            let signals = left.compactMap { line -> String? in
                guard let pid = line.split(separator: " ").dropFirst().first,
                      let proc = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
                let wanted = proc.split(separator: "\n").filter { ["State", "SigPnd", "ShdPnd", "SigBlk", "SigIgn", "SigCgt"].contains($0.split(separator: ":").first ?? "") }
                return "\(pid): " + wanted.joined(separator: " ")
            }
            let steps = (try? String(contentsOfFile: dir.path + "/stop.log", encoding: .utf8)) ?? "(no stop.log)"
            Issue.record("no exit 20 s after Ctrl-C; still running:\n\(left.joined(separator: "\n"))\nsignals:\n\(signals.joined(separator: "\n"))\nthe script's stop:\n\(steps)\nstderr:\n\(p.stderr)")
            throw error
        }
        stopped = true
        let err = p.stderr
        #expect(status == .exited(0), "exit: \(status); stderr:\n\(err)")
        let lines = err.split(separator: "\n").map(String.init)
        #expect(lines.filter { $0.contains("popups are off") }.count == 1, "stderr:\n\(err)")
        let bad = lines.filter { $0.hasPrefix("warning:") || $0.hasPrefix("error:") || $0.hasPrefix("critical:") || $0.lowercased().contains("error") }
        #expect(bad.isEmpty, "warning or error lines: \(bad)")
        let desktop = lines.filter { $0.contains("desktop") && !$0.contains("popups are off") }
        #expect(desktop.isEmpty, "the desktop backend is not used without a notification server: \(desktop)")
        #expect(p.stdout.contains("tocsin: fired key=demo"), "the log backend shows the firing on stdout:\n\(p.stdout)")
        #expect(err.contains("demo: stopped"), "stderr:\n\(err)")
    }
}
