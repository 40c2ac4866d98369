import Foundation
import TocsinTesting
import TocsinTime

/// A `tocsin daemon` child process with its own config, state and home, as a user would run it.
final class DaemonUnderTest: Sendable {
    let dir: TemporaryDirectory
    let configPath: String
    let environment: [String: String]

    init(config: String, environment extra: [String: String] = [:]) throws {
        dir = TemporaryDirectory(prefix: "tocsin-daemon")
        configPath = try dir.write("config.toml", config)
        var env = extra
        env["HOME"] = dir.path
        env["XDG_CONFIG_HOME"] = dir.path + "/config"
        env["XDG_STATE_HOME"] = dir.path + "/state-home"
        env["TZ"] = extra["TZ"] ?? "UTC"
        env["NOTIFY_SOCKET"] = env["NOTIFY_SOCKET"] ?? ""
        environment = env
    }

    var stateDirectory: String { dir.path + "/state" }

    func start(_ extraArguments: [String] = []) throws -> TestProcess {
        try TestProcess(Products.executable("tocsin"),
                        ["daemon", "--config", configPath, "--state-dir", stateDirectory] + extraArguments,
                        environment: environment)
    }

    /// Starts the daemon and waits until it reports it is running.
    func startAndWait(_ extraArguments: [String] = []) async throws -> TestProcess {
        let p = try start(extraArguments)
        try await p.waitForStderr(containing: "started", timeout: .seconds(30))
        return p
    }

    func rewrite(config: String) throws { try dir.write("config.toml", config) }

    /// Starts the daemon on `bus` and waits until it serves the API: one run of a test that kills
    /// and restarts it. `runs` keeps every run (a crash test reads them all at the end), and
    /// `teardown` kills each.
    func startServing(on bus: PrivateBus, runs: inout [TestProcess], teardown: Teardown) async throws -> TestProcess {
        let p = try start(["--bus", bus.address])
        runs.append(p)
        teardown.add { _ = try? await p.kill() }
        try await p.waitForStderr(containing: "serving the D-Bus API", timeout: .seconds(60))
        return p
    }
}

extension TestProcess {
    /// Waits until stderr (the daemon's log) contains `text`.
    @discardableResult
    func waitForStderr(containing text: String, timeout: Duration) async throws -> String {
        let state: Output
        do {
            state = try await output.wait("'\(text)' in stderr of \(command.joined(separator: " "))", timeout: timeout) {
                $0.stderrText.contains(text) || $0.status != nil
            }
        } catch {
            // A miss under load is only diagnosable with what the process said meanwhile.
            throw TestProcessError("\(error); its stderr ends: \(output.value.stderrText.suffix(3000))")
        }
        guard state.stderrText.contains(text) else {
            throw TestProcessError("\(command.first ?? "") ended (\(state.status.map(\.description) ?? "?")) without logging '\(text)'; stderr: \(state.stderrText.suffix(3000))")
        }
        return state.stderrText
    }

    /// Lines of stdout that are JSON firings of the log backend, decoded.
    var firings: [[String: Any]] {
        stdout.split(separator: "\n").compactMap { line in
            guard line.hasPrefix("{") else { return nil }
            return (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
        }
    }

    func firings(key: String) -> [[String: Any]] { firings.filter { $0["key"] as? String == key } }
}

func rfc3339(secondsFromNow s: Int) -> String {
    Timestamp.rfc3339UTC(Instant(seconds: Int64(Date().timeIntervalSince1970.rounded(.down)) + Int64(s)))
}
