import Foundation
import Logging
import Testing
@testable import TocsinExecBackend
import TocsinConfig
import TocsinModel
import TocsinCore
import TocsinTesting
import TocsinTime

private func firing(title: String, body: String = "", info: [String: String] = [:]) -> Firing {
    let n = Notification(key: "k1", title: title, body: body, trigger: .at(Instant(seconds: 1_800_000_000)), userInfo: info)
    return Firing(notification: n, occurrence: Occurrence(instant: Instant(seconds: 1_800_000_000), number: 3),
                  due: Instant(seconds: 1_800_000_000), fired: Instant(seconds: 1_800_000_001), reason: .scheduled)
}

@Suite("exec backend")
struct ExecBackendTests {
    @Test("the firing reaches the program only through TOCSIN_* variables, never as argv or through a shell")
    func environmentOnly() async throws {
        let dir = TemporaryDirectory()
        let out = dir.path + "/out"
        // The script records its argv and environment; the title looks like an option and a shell injection.
        let script = try dir.script("hook.sh", "printf '%s\\n' \"$#\" \"$@\" > \(out)\nenv | sort >> \(out)")
        let backend = ExecBackend(name: "hook", command: [script, "fixed-arg"], baseEnvironment: ["PATH": "/usr/bin:/bin"])
        let evil = "--delete-all $(touch \(dir.path)/pwned) `id`"
        try await backend.deliver(firing(title: evil, body: "line1\nline2", info: ["room": "4", "bad-key": "x"]))
        let text = try String(contentsOfFile: out, encoding: .utf8)
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        #expect(lines[0] == "1")
        #expect(lines[1] == "fixed-arg")
        #expect(text.contains("TOCSIN_TITLE=\(evil)"))
        #expect(text.contains("TOCSIN_KEY=k1"))
        #expect(text.contains("TOCSIN_OCCURRENCE=3"))
        #expect(text.contains("TOCSIN_DUE=2027-01-15T08:00:00Z"))
        #expect(text.contains("TOCSIN_INFO_ROOM=4"))
        #expect(!text.contains("bad-key"))
        #expect(!FileManager.default.fileExists(atPath: dir.path + "/pwned"), "notification text was executed")
        #expect(!text.contains("HOME=") && !text.contains("SECRET"), "the environment is not minimal")
    }

    @Test("a non-zero exit is a permanent failure; a missing program too")
    func failures() async throws {
        do {
            try await ExecBackend(name: "f", command: ["/bin/false"]).deliver(firing(title: "x"))
            Issue.record("false succeeded")
        } catch {
            #expect(error.code == .permanent)
        }
        do {
            try await ExecBackend(name: "m", command: ["/nonexistent/program"]).deliver(firing(title: "x"))
            Issue.record("a missing program succeeded")
        } catch {
            #expect(error.code == .permanent)
        }
    }

    @Test("a program still running at its timeout is stopped and reported")
    func timeout() async throws {
        let start = ContinuousClock.now
        do {
            try await ExecBackend(name: "slow", command: ["/bin/sleep", "300"], timeout: TimeSpan(microseconds: 300_000)).deliver(firing(title: "x"))
            Issue.record("sleep 300 finished within its timeout")
        } catch {
            #expect(error.code == .timedOut)
        }
        // The stop must be prompt, not the sleep's own end: 10 s (widened under a sanitizer, as
        // every latency bound is; 100 s at TSan's factor) stays far below the 300 s sleep.
        #expect(ContinuousClock.now - start < TimingBudget.scaled(.seconds(10)))
    }

    @Test("a hook stopped at its timeout takes what it started with it (its own process group)")
    func timeoutStopsGroup() async throws {
        let dir = TemporaryDirectory()
        let pidFile = dir.path + "/grandchild"
        let script = try dir.script("hook.sh", "sleep 30 &\necho $! > \(pidFile).tmp\nmv \(pidFile).tmp \(pidFile)\nwait")
        // The timeout must not come before the hook has started its child and said so: 2 s, not
        // the 300 ms above, which a loaded machine (a sanitizer run) can spend starting `sh`.
        do {
            try await ExecBackend(name: "slow", command: [script], timeout: .seconds(2),
                                  baseEnvironment: ["PATH": "/usr/bin:/bin"]).deliver(firing(title: "x"))
            Issue.record("the hook finished within its timeout")
        } catch {
            #expect(error.code == .timedOut)
        }
        let text = try String(contentsOfFile: pidFile, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        let pid = try #require(pid_t(text))
        #expect(waitForExit(ofAnyProcess: pid, timeoutMilliseconds: 2000), "the hook's own child \(pid) outlived the timeout")
    }

    @Test("a program named without a slash is found on the hook's PATH, at each firing")
    func lookedUpOnPath() async throws {
        let dir = TemporaryDirectory()
        let out = dir.path + "/ran"
        try await ExecBackend(name: "t", command: ["touch", out], baseEnvironment: ["PATH": "/nonexistent:/usr/bin:/bin"]).deliver(firing(title: "x"))
        #expect(FileManager.default.fileExists(atPath: out))
        do {
            try await ExecBackend(name: "t", command: ["touch", out], baseEnvironment: ["PATH": "/nonexistent"]).deliver(firing(title: "x"))
            Issue.record("a program absent from PATH ran")
        } catch {
            #expect(error.code == .permanent)
            #expect(error.message.contains("not found on PATH"))
        }
    }

    @Test("a hook held open for writing (being saved or installed) is a retryable error; once closed it runs")
    func busyHookIsRetried() async throws {
        let dir = TemporaryDirectory()
        let out = dir.path + "/ran"
        let script = try dir.script("hook.sh", "touch \(out)")
        let writer = open(script, O_WRONLY | O_CLOEXEC)
        try #require(writer >= 0)
        let hook = ExecBackend(name: "t", command: [script], baseEnvironment: ["PATH": "/usr/bin:/bin"])
        do {
            try await hook.deliver(firing(title: "x"))
            Issue.record("a file open for writing was executed")
        } catch {
            #expect(error.code == .unavailable, "retried by the center, not dropped: \(error)")
            #expect(error.message == "cannot run \(script): Text file busy")
        }
        close(writer)
        // Tests in this process fork children at any moment, and a child holds a copy of every
        // descriptor until its exec (O_CLOEXEC only closes it there), so "Text file busy" can
        // outlast our close by the time another test takes to exec: the center retries it, and
        // so does this test, until a deadline.
        let deadline = ContinuousClock.now + .seconds(10)
        func attempt() async -> DeliveryError? {
            do { try await hook.deliver(firing(title: "x")); return nil } catch { return error }
        }
        while let error = await attempt() {
            #expect(error.code == .unavailable, "\(error)")
            guard error.code == .unavailable, ContinuousClock.now < deadline else { break }
            await Task.yield()
        }
        #expect(FileManager.default.fileExists(atPath: out))
    }

    @Test("config: command is required and must be an argv list")
    func factory() {
        func issues(_ toml: String) -> [String] {
            guard case .success(let t) = Result(catching: { try TOML.parse(toml, file: "c.toml") }) else { return ["parse"] }
            var r = TableReader(t, context: "[backend.hook]")
            _ = ExecBackendFactory().make(name: "hook", reading: &r, environment: BackendEnvironment(logger: .init(label: "t")))
            return r.issues.map(\.message)
        }
        #expect(issues("") == ["missing required key 'command' in [backend.hook] (an argv list, e.g. [\"notify-hook\", \"--quiet\"])"])
        #expect(issues("command = \"/bin/true --x\"") == ["'command' in [backend.hook] must be an array of strings, found string"])
        #expect(issues("command = []") == ["'command' must name a program as its first element"])
        #expect(issues("command = [\"/bin/true\"]\ntimeout = \"0\"") == ["invalid 'timeout': the interval must be longer than zero"])
    }

    struct ConfigRow: Sendable, CustomTestStringConvertible {
        let name: String
        let toml: String
        let expected: [String]
        var testDescription: String { name }
    }

    /// A key the factory leaves unread is reported as unknown by `finish`, as the daemon's
    /// backend tables do, with the key itself as the suggestion.
    @Test("config: a bad or missing command leaves 'timeout' read; each mistake once, at its place", arguments: [
        ConfigRow(name: "missing command, valid timeout", toml: "timeout = \"5s\"",
                  expected: ["1:1: missing required key 'command' in [backend.hook] (an argv list, e.g. [\"notify-hook\", \"--quiet\"])"]),
        ConfigRow(name: "command a string, valid timeout", toml: "command = \"notify-send\"\ntimeout = \"5s\"",
                  expected: ["1:11: 'command' in [backend.hook] must be an array of strings, found string"]),
        ConfigRow(name: "command without a program, valid timeout", toml: "timeout = \"5s\"\ncommand = [\"\"]",
                  expected: ["2:11: 'command' must name a program as its first element"]),
        ConfigRow(name: "command and timeout both bad", toml: "command = []\ntimeout = \"0\"",
                  expected: ["1:11: 'command' must name a program as its first element",
                             "2:12: invalid 'timeout': the interval must be longer than zero"]),
        ConfigRow(name: "a valid table", toml: "command = [\"/bin/true\"]\ntimeout = \"5s\"", expected: []),
    ])
    func factoryReadsEveryKey(_ row: ConfigRow) throws {
        let t = try TOML.parse(row.toml, file: "c.toml")
        var r = TableReader(t, context: "[backend.hook]")
        let factory = ExecBackendFactory()
        let made = factory.make(name: "hook", reading: &r, environment: BackendEnvironment(logger: .init(label: "t")))
        r.finish(known: ["type"] + factory.optionKeys)
        #expect(r.issues.map { "\($0.location): \($0.message)" } == row.expected, "row '\(row.name)'")
        #expect((made != nil) == row.expected.isEmpty, "row '\(row.name)'")
    }

    /// The kernel ends each argv string at its first NUL, so the program would get a cut argument.
    @Test("regression: config: a NUL in a command argument is refused at that argument")
    func nulInCommand() throws {
        let t = try TOML.parse("command = [\"/x/hook.sh\", \"arg\\u0000tail\"]", file: "c.toml")
        var r = TableReader(t, context: "[backend.hook]")
        let made = ExecBackendFactory().make(name: "hook", reading: &r, environment: BackendEnvironment(logger: .init(label: "t")))
        #expect(made == nil)
        #expect(r.issues.map { "\($0.location): \($0.message)" } == ["1:26: 'command' must not contain a NUL character"])
    }
}
