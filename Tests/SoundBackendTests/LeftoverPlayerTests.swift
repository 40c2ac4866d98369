import Foundation
import Logging
import Testing
import TocsinCore
import TocsinSoundBackend
import TocsinTesting
import TocsinTime
import TocsinModel
import TocsinSystem

private struct NoEvents: BackendEventSink {
    func send(_ event: BackendEvent) {}
}

/// The record of running players a sound backend keeps in the state directory, and what the
/// next start does with a record a `kill -9` left (review of alarms, finding 2). The crash
/// itself, with a real daemon and a looping player, is `SoundAlarmTests`' "kill -9 while a
/// looping player rings".
@Suite("Sound backend: players left by a crash")
struct LeftoverPlayerTests {
    final class Rig: Sendable {
        let w = SoundWorkspace()
        let lines = WaitableState<[String]>([])
        let events = WaitableState<[PlayerEvent]>([])
        var state: String { w.path + "/state" }
        var file: String { state + "/sound-alarm.players" }

        init() throws {
            try FileManager.default.createDirectory(atPath: w.path + "/state", withIntermediateDirectories: true)
        }

        func backend(player: String = "exec sleep 30") throws -> SoundBackend {
            let sound = try w.wav("ring.wav", seconds: 1)
            let script = try w.script("player", player)
            let events = self.events
            return SoundBackend(name: "alarm",
                                settings: SoundSettings(file: sound, length: SoundLength(format: .wav, frames: 8000, rate: 8000),
                                                        player: [script, "{file}"]),
                                environment: ["PATH": "/usr/bin:/bin"],
                                logger: RecordingLogHandler.logger(lines, logLevel: .debug),
                                observer: { e in events.update { $0.append(e) } },
                                stateDirectory: state)
        }

        func write(_ text: String) throws { try text.write(toFile: file, atomically: true, encoding: .utf8) }
        var fileExists: Bool { FileManager.default.fileExists(atPath: file) }

        /// A process in a group of its own (as every test child is), which has ignored SIGTERM
        /// once it said "ready", as a stubborn player might.
        func stubborn() async throws -> TestProcess {
            let p = try TestProcess("/bin/sh", ["-c", "trap '' TERM; echo ready; exec sleep 300"])
            try await p.waitForOutput(containing: "ready", timeout: .seconds(10))
            return p
        }

        func record(_ p: TestProcess, startOffset: Int64 = 0, key: String = "wake") throws -> String {
            let st = try #require(ProcessStat.read(p.pid))
            #expect(st.processGroup == p.pid, "a test child leads its own group")
            let boot = ProcessStat.bootID().map { "boot \($0)\n" } ?? ""
            return "tocsin-players 1\n\(boot)player \(p.pid) \(p.pid) \(Int64(st.startTime) + startOffset) \(key)\n"
        }
    }

    @Test("a running player is recorded (pid, group, start time) while it plays; the record goes when it ends")
    func recordFollowsThePlayer() async throws {
        let rig = try Rig()
        let backend = try rig.backend()
        await backend.start(events: NoEvents())
        let n = TocsinCore.Notification(key: "wake", title: "Wake up", trigger: .at(t0))
        try await backend.deliver(Firing(notification: n, occurrence: Occurrence(instant: t0, number: 1), due: t0, fired: t0, reason: .scheduled))
        let pid = try #require(rig.events.value.compactMap { if case .started(_, _, let p) = $0 { p } else { nil } }.first)
        let start = try #require(ProcessStat.read(pid)?.startTime)
        let text = try String(contentsOfFile: rig.file, encoding: .utf8)
        #expect(text.hasPrefix("tocsin-players 1\n"), "\(text)")
        #expect(text.hasSuffix("player \(pid) \(pid) \(start) wake\n"), "\(text)")
        #expect(try mode(rig.file) == 0o600)
        await backend.withdraw(key: "wake", reason: .acknowledged)
        try await rig.events.wait("end of the player", timeout: .seconds(10)) { $0.contains { if case .ended = $0 { true } else { false } } }
        #expect(!rig.fileExists, "the record of an ended player is removed")
    }

    @Test("at start, a recorded player still running as recorded is stopped (SIGTERM, then SIGKILL when it ignores it) and the file removed")
    func leftoverIsStopped() async throws {
        let rig = try Rig()
        let orphan = try await rig.stubborn()
        try rig.write(try rig.record(orphan))
        try await rig.backend().start(events: NoEvents())
        // start returns once the group is stopped.
        #expect(try await orphan.waitForExit(timeout: .seconds(5)) == .signaled(SIGKILL))
        #expect(!rig.fileExists)
        #expect(rig.lines.value.contains("stopped a player an earlier run left playing"), "\(rig.lines.value)")
    }

    /// Regression (review of the merged change): the sweep for what a stopped leader left in its
    /// group ran only once the leader's `/proc` entry was gone, but a leader nobody has reaped yet
    /// (its adopter reaps late) is a zombie with that entry, so a child that ignored SIGTERM lived.
    @Test("a leader that ends at SIGTERM but is not reaped: the child it left in its group is killed")
    func zombieLeadersChild() async throws {
        let rig = try Rig()
        let pidFile = rig.w.path + "/leader.pid"
        // The leader (setsid: pid == group) starts a child that ignores SIGTERM; the leader's
        // parent becomes `sleep`, which never reaps it.
        let outer = try TestProcess("/bin/sh", ["-c", """
            setsid sh -c '(trap "" TERM; exec sleep 300) & echo $$ > \(pidFile).tmp; mv \(pidFile).tmp \(pidFile); wait' &
            exec sleep 300
            """])
        defer { Task { _ = try? await outer.kill() } }
        try await waitUntil("the leader's pid", timeout: .seconds(10)) { FileManager.default.fileExists(atPath: pidFile) }
        let leader = try #require(Int32(try String(contentsOfFile: pidFile, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)))
        let st = try #require(ProcessStat.read(leader))
        #expect(st.processGroup == leader)
        let record = RecordedProcessGroup(pid: leader, processGroup: leader, startTime: st.startTime)
        let outcomes = await WorkerThread.run { LeftoverProcessGroups.stop([record], grace: .seconds(2)) }
        #expect(outcomes == [.terminated])
        #expect(ProcessStat.read(leader)?.isZombie == true, "the leader is left a zombie, as the case needs")
        // Nothing of the group is left but the zombie leader.
        try await waitUntil("the group's child killed", timeout: .seconds(10)) {
            let members = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
            return !members.contains { name in
                guard let pid = Int32(name), pid != leader, let s = ProcessStat.read(pid) else { return false }
                return s.processGroup == leader && !s.isZombie
            }
        }
    }

    @Test("a recorded pid now held by a process with another start time (a reused pid) is not signalled", arguments: [1, -1])
    func reusedPidIsLeftAlone(offset: Int64) async throws {
        let rig = try Rig()
        let other = try TestProcess("/bin/sh", ["-c", "echo ready; exec sleep 300"])
        try await other.waitForOutput(containing: "ready", timeout: .seconds(10))
        try rig.write(try rig.record(other, startOffset: offset))
        try await rig.backend().start(events: NoEvents())
        #expect(other.status == nil, "signalled: \(String(describing: other.status))")
        #expect(isRunning(other.pid))
        #expect(!rig.fileExists, "the record is dropped once read")
        try await other.kill()
    }

    struct Malformed: Sendable, CustomTestStringConvertible {
        var name: String
        /// PLAYER stands for a valid line naming a running process.
        var text: String
        var testDescription: String { name }
    }

    static let malformed: [Malformed] = [
        Malformed(name: "empty", text: ""),
        Malformed(name: "another header", text: "tocsin-players 2\nPLAYER\n"),
        Malformed(name: "no header", text: "PLAYER\n"),
        Malformed(name: "a valid line, then garbage", text: "tocsin-players 1\nPLAYER\n\u{01}garbage\n"),
        Malformed(name: "last line cut", text: "tocsin-players 1\nPLAYER"),
        Malformed(name: "a negative pid", text: "tocsin-players 1\nplayer -5 -5 100 k\nPLAYER\n"),
        Malformed(name: "a pid with a sign", text: "tocsin-players 1\nplayer +5 5 100 k\nPLAYER\n"),
        Malformed(name: "a start time that is not a number", text: "tocsin-players 1\nplayer 5 5 x k\nPLAYER\n"),
        Malformed(name: "too many fields", text: "tocsin-players 1\nplayer 5 5 100 k extra\nPLAYER\n"),
        Malformed(name: "two spaces between fields", text: "tocsin-players 1\nplayer 5  5 100 k\nPLAYER\n"),
        Malformed(name: "a key with a control character", text: "tocsin-players 1\nplayer 5 5 100 k\u{1b}[2J\nPLAYER\n"),
        Malformed(name: "not UTF-8", text: "tocsin-players 1\nPLAYER\n"),
        Malformed(name: "a boot line not second", text: "tocsin-players 1\nPLAYER\nboot 0123-abcd\n"),
    ]

    @Test("a malformed record file is ignored with a warning and removed; nothing it names is signalled", arguments: malformed)
    func malformedFile(_ row: Malformed) async throws {
        let rig = try Rig()
        let orphan = try await rig.stubborn()
        let valid = try #require(try rig.record(orphan).split(separator: "\n").last { $0.hasPrefix("player") })
        var bytes = Array(row.text.replacingOccurrences(of: "PLAYER", with: valid).utf8)
        if row.name == "not UTF-8" { bytes.insert(0xFF, at: 17) }
        try Data(bytes).write(to: URL(fileURLWithPath: rig.file))
        try await rig.backend().start(events: NoEvents())
        #expect(orphan.status == nil, "signalled: \(String(describing: orphan.status))")
        #expect(!rig.fileExists)
        #expect(rig.lines.value.contains { $0.hasPrefix("ignored and removed the record of running players") }, "\(rig.lines.value)")
        try await orphan.kill()
    }

    @Test("a record file that is a directory or a FIFO is refused without blocking, and the start goes on")
    func notARegularFile() async throws {
        let rig = try Rig()
        #expect(mkfifo(rig.file, 0o600) == 0)
        try await rig.backend().start(events: NoEvents())
        #expect(rig.lines.value.contains { $0.hasPrefix("ignored and removed the record of running players") }, "\(rig.lines.value)")
        #expect(!rig.fileExists)
    }

    @Test("a record of an earlier boot is removed without signalling")
    func earlierBoot() async throws {
        try #require(ProcessStat.bootID() != nil)
        let rig = try Rig()
        let orphan = try await rig.stubborn()
        let text = try rig.record(orphan).replacingOccurrences(of: ProcessStat.bootID()!, with: "00000000-0000-0000-0000-000000000000")
        try rig.write(text)
        try await rig.backend().start(events: NoEvents())
        #expect(orphan.status == nil)
        #expect(!rig.fileExists)
        try await orphan.kill()
    }

    @Test("never pid 1 or below, never the daemon's own group")
    func refusedGroups() {
        let own = getpgrp()
        let outcomes = LeftoverProcessGroups.stop([
            RecordedProcessGroup(pid: 1, processGroup: 1, startTime: ProcessStat.read(1)?.startTime ?? 0),
            RecordedProcessGroup(pid: 0, processGroup: 0, startTime: 0),
            RecordedProcessGroup(pid: own, processGroup: own, startTime: ProcessStat.read(own)?.startTime ?? 0),
        ], grace: .milliseconds(10))
        for o in outcomes {
            guard case .refused = o else { Issue.record("not refused: \(o)"); continue }
        }
    }
}

private func mode(_ path: String) throws -> Int {
    let a = try FileManager.default.attributesOfItem(atPath: path)
    return (a[.posixPermissions] as? Int) ?? -1
}
