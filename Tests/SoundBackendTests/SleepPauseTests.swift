import Glibc
import Testing
import TocsinCore
import TocsinSoundBackend
import TocsinTesting
import TocsinSystem

/// Blocks (on a thread of its own) until the child `pid` stops or continues, as `waitid` reports
/// it; `WNOWAIT` leaves the state for the backend's own reaping.
private func waitForChild(_ pid: Int32, _ flag: Int32, _ what: String) async throws {
    let reported = try await withTimeout(.seconds(20), what) {
        await WorkerThread.run { () -> Bool in
            var info = siginfo_t()
            return waitid(P_PID, id_t(pid), &info, flag | WNOWAIT) == 0
        }
    }
    #expect(reported, "waitid failed while waiting for \(what): errno \(errno)")
}

@Suite("Sound backend: sleep pauses a ringing alarm")
struct SleepPauseTests {
    @Test("before sleep the ringing player is stopped where it is, after resume it goes on, and acknowledge still ends it")
    func pausesAndResumes() async throws {
        let rig = try await AlarmRig(player: "\(PlayerLifecycleTests.ready) exec sleep 30")
        try await rig.schedule("wake", at: 10)
        await rig.advance(10)
        let pid = try #require(rig.started("wake").first?.pid)
        #expect(waitForFile(rig.w.path + "/ready", timeoutMilliseconds: 20_000), "the player never got ready")

        await rig.center.systemSleep(true)
        try await waitForChild(pid, WSTOPPED, "the player to stop before sleep")
        await rig.center.systemSleep(false)
        try await waitForChild(pid, WCONTINUED, "the player to go on after resume")
        #expect(isRunning(pid) && rig.backend.playingKeys == ["wake"], "the same player, not a new one")
        #expect(rig.started("wake").count == 1)

        #expect(try await rig.center.acknowledge("wake"))
        let exit = try await rig.ended(pid: pid)
        #expect(exit.stoppedBy == .withdrawn(.acknowledged))
    }
}
