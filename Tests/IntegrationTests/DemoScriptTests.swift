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
        // On failure, everything the demo started, its own-session helpers included.
        defer { if !stopped { Self.reap(p, runDirectory: dir.path) } }
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

    @Test("a demo killed part-way (a failed test's cleanup) leaves none of its helpers running")
    func killedDemoLeavesNoHelper() async throws {
        let dir = TemporaryDirectory()
        let p = try TestProcess("bash", [GatewayFixture.repositoryRoot + "/scripts/demo-session.sh", Products.executable("tocsin")],
                                environment: ["TOCSIN_DEMO_OWN_BUS": "1", "TOCSIN_DEMO_DISPLAY": "none", "TOCSIN_DEMO_DIR": dir.path])
        var reaped = false
        defer { if !reaped { Self.reap(p, runDirectory: dir.path) } }
        try await p.waitForStderr(containing: "the daemon keeps running", timeout: .seconds(60))
        // The private bus at least runs in a session of its own, out of reach of the group kill.
        let leaders = Self.helperPIDs(dir.path).filter { Self.session(of: $0) == $0 }
        try #require(!leaders.isEmpty, "no own-session helper recorded in helpers.pids: \(Self.helperPIDs(dir.path))")
        Self.reap(p, runDirectory: dir.path)
        reaped = true
        _ = try await p.waitForExit(timeout: .seconds(20))
        // Not our children: init reaps them once the signal lands, so this waits for that.
        do {
            try await waitUntil("the demo's helpers to be gone", timeout: .seconds(10)) {
                leaders.allSatisfy { Self.session(of: $0) == nil }
            }
        } catch {
            Issue.record("still running after the cleanup: \(leaders.filter { Self.session(of: $0) != nil })")
        }
    }

    /// Kills everything the demo started: the script's process group (the script, its daemon,
    /// its `watch`), then the group of each helper it recorded that still leads its own session
    /// (the bus, Xvfb, dunst), which a kill of the script's group does not reach. The group goes
    /// first, so the script starts no helper after the list is read.
    static func reap(_ p: TestProcess, runDirectory: String) {
        _ = Glibc.kill(-p.pid, SIGKILL)
        // Only a process still leading the session the helper made: a PID reused by anything
        // else is left alone.
        for pid in helperPIDs(runDirectory) where session(of: pid) == pid {
            _ = Glibc.kill(-pid, SIGKILL)
        }
    }

    /// The PIDs the script wrote to `helpers.pids`, one a line, as each helper started.
    static func helperPIDs(_ runDirectory: String) -> [Int32] {
        let text = (try? String(contentsOfFile: runDirectory + "/helpers.pids", encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { Int32($0.trimmingCharacters(in: .whitespaces)) }
    }

    /// The session ID of a running process; nil when it is gone or a zombie.
    static func session(of pid: Int32) -> Int32? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return nil }
        // After "pid (comm)": state, ppid, pgrp, session.
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 3, fields[0] != "Z" else { return nil }
        return Int32(fields[3])
    }
}
