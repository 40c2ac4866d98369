import Glibc
import Testing
import TocsinTesting

/// The process helpers the D-Bus tests stand on (and that daemon integration tests will reuse).
@Suite("TocsinTesting process helpers", .timeLimit(.minutes(1)))
struct TestSupportTests {
    @Test func runCollectsOutputAndStatus() async throws {
        let out = try await TestProcess.run("sh", ["-c", "echo out; echo err >&2; exit 3"], environment: ["X": "y"])
        #expect(out.status == .exited(3))
        #expect(out.stdoutText == "out\n")
        #expect(out.stderrText == "err\n")
        let env = try await TestProcess.run("sh", ["-c", "printf %s \"$TOCSIN_PROBE\""], environment: ["TOCSIN_PROBE": "42"])
        #expect(env.stdoutText == "42")
    }

    @Test func deadlineKillsAndReapsAHungChild() async throws {
        let error = await #expect(throws: TestTimeoutError.self) {
            try await TestProcess.run("sleep", ["30"], timeout: .milliseconds(200))
        }
        #expect(error != nil)
        let p = try TestProcess("sleep", ["30"])
        p.signal(SIGTERM)
        #expect(try await p.waitForExit(timeout: .seconds(10)) == .signaled(SIGTERM))
        #expect(kill(p.pid, 0) == -1)  // reaped, not a zombie
    }

    @Test func waitForOutputFailsClearlyWhenTheChildExits() async throws {
        let p = try TestProcess("sh", ["-c", "echo nope"])
        await #expect(throws: TestProcessError.self) {
            try await p.waitForOutput(containing: "ready", timeout: .seconds(10))
        }
    }

    @Test func childrenInheritNoStrayDescriptors() async throws {
        // Only 0, 1, 2 (and the fd ls uses to read the directory) may be open in the child.
        let out = try await TestProcess.run("sh", ["-c", "ls /proc/self/fd"])
        let fds = out.stdoutText.split(separator: "\n").compactMap { Int($0) }
        #expect(fds.filter { $0 > 3 }.isEmpty, "\(fds)")
    }

    @Test func privateBusStartsAndStops() async throws {
        let bus = try await PrivateBus.start()
        #expect(bus.address.hasPrefix("unix:path=/tmp/"))
        let ids = try await TestProcess.run(
            "dbus-send", ["--bus=\(bus.address)", "--print-reply", "--dest=org.freedesktop.DBus", "/org/freedesktop/DBus",
                          "org.freedesktop.DBus.ListActivatableNames"])
        // No service directories: nothing but the bus itself can be activated.
        #expect(ids.stdoutText.contains("string \"org.freedesktop.DBus\""))
        let names = ids.stdoutText.split(separator: "\n").filter { $0.contains("string \"") }
        #expect(names.count == 1, "\(ids.stdoutText)")
        await bus.stop()
        #expect(bus.process.status == .exited(0) || bus.process.status == .signaled(SIGTERM))
    }
}
