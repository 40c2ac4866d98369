import Foundation

// MARK: - Harness runs

/// One harness invocation: `test` against `side`'s daemon (nil: `daemon`, or none, for `ping`).
struct HarnessStep {
    var test: String
    var side: VersusBenchmark.Side?
    var arguments: [String]
    /// The daemon command when `side` is nil (the null gateway of the ceilings).
    var daemon: String?
    /// A Python script run instead of harness.py, printing a JSON line as the harness does.
    var script: String?
    /// The step's name in the results, when not `test` or `test/side`.
    var label: String?

    init(test: String, side: VersusBenchmark.Side?, arguments: [String], daemon: String? = nil, script: String? = nil,
         label: String? = nil) {
        self.test = test
        self.side = side
        self.arguments = arguments
        self.daemon = daemon
        self.script = script
        self.label = label
    }

    var id: String { label ?? side.map { "\(test)/\($0.rawValue)" } ?? test }
}

/// The outcome of one harness run: its JSON line, or why there is none or why it does not count.
struct HarnessRun {
    var test: String
    var json: [String: Any]?
    /// Why this run's figures cannot be trusted (harness failed, daemon died, incomplete...); nil if fine.
    var failure: String?
    var seconds: Double

    func number(_ path: [String]) -> Double? {
        var value: Any? = json
        for key in path { value = (value as? [String: Any])?[key] }
        return (value as? NSNumber)?.doubleValue
    }

    /// Schedule calls/s, for scale runs.
    var rate: Double? { number(["schedule", "calls_per_s"]) }

    var progressLine: String {
        var parts: [String] = []
        if let failure { parts.append("FAILED: \(failure)") }
        switch test {
        case "ping":
            if let x = number(["getid", "calls_per_s"]) { parts.append("GetId \(grouped(x)) calls/s") }
        case "scale", "million":
            if let x = rate { parts.append("Schedule \(grouped(x)) calls/s") }
            if let x = number(["bytes_per_pending"]) { parts.append("\(grouped(x)) B/pending") }
            if let x = number(["rss_kb"]) { parts.append("RSS \(grouped(x * 1024 / 1e6)) MB") }
        case "latency", "burst_floor":
            if let x = number(["lat_p50_ms"]), let y = number(["lat_p99_ms"]) {
                parts.append("p50 \(formatted(x, decimals: 1)) ms, p99 \(formatted(y, decimals: 1)) ms")
            }
        case "idle":
            if let x = number(["wakeups_per_min"]) { parts.append("\(formatted(x, decimals: 1)) wakeups/min") }
        default:
            break
        }
        if let x = number(["bus_ref_getid_per_s"]) { parts.append("bus ref \(grouped(x)) GetId/s") }
        if let x = number(["other_load_pct"]) { parts.append("other_load_pct \(formatted(x, decimals: 1))") }
        parts.append("\(grouped(seconds)) s")
        return parts.joined(separator: ", ")
    }
}

/// Runs harness.py from the peer directory; its stderr (and the daemon's output) streams through.
struct HarnessRunner {
    var python: String
    var harness: String
    var directory: URL
    /// A run that takes longer is interrupted (SIGINT, so the harness tears its bus and daemon down).
    var limit: Double = 1_800

    func run(_ step: HarnessStep, tocsin: String) throws -> HarnessRun {
        var arguments = [python, step.script ?? harness]
        var tempDir: URL?
        switch step.side {
        case .peer?:
            arguments += ["--daemon", "\(python) peer_gateway.py"]
        case .tocsin?:
            let dir = FileManager.default.temporaryDirectory.appendingPathComponent("tocsin-versus-\(UUID().uuidString)")
            let state = dir.appendingPathComponent("state")
            try FileManager.default.createDirectory(at: state, withIntermediateDirectories: true)
            let config = dir.appendingPathComponent("perf.toml")
            try Data("""
                # Written by `tocsin-bench versus`: lift the quotas one harness client would hit.
                [daemon]
                max_pending = 2000000
                max_pending_per_client = 2000000

                [backend.events]
                type = "dbus-signal"

                """.utf8).write(to: config)
            tempDir = dir
            arguments += ["--daemon", [tocsin, "daemon", "--config", config.path, "--state-dir", state.path].map(shellQuoted).joined(separator: " ")]
        case nil:
            if let daemon = step.daemon { arguments += ["--daemon", daemon] }
        }
        defer { if let tempDir { try? FileManager.default.removeItem(at: tempDir) } }
        arguments += step.arguments

        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = arguments
        process.currentDirectoryURL = directory
        let out = Pipe()
        process.standardOutput = out  // stderr is inherited: the harness's and the daemon's messages show as they come
        let start = Date()
        try process.run()
        let watchdog = Watchdog(process: process)
        DispatchQueue.global().asyncAfter(deadline: .now() + limit) { watchdog.fire() }
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        watchdog.cancel()
        let seconds = Date().timeIntervalSince(start)

        let line = String(decoding: data, as: UTF8.self).split(separator: "\n").last.map(String.init)
        let json = line.flatMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        var run = HarnessRun(test: step.test, json: json, failure: nil, seconds: seconds)
        run.failure = diagnose(run, process: process, interrupted: watchdog.fired, step: step)
        return run
    }

    /// Why a run does not count, or nil. Checked in order of how much it explains.
    private func diagnose(_ run: HarnessRun, process: Process, interrupted: Bool, step: HarnessStep) -> String? {
        if interrupted { return "interrupted after \(Int(limit)) s" }
        guard let json = run.json else {
            let how = process.terminationReason == .uncaughtSignal ? "killed by signal" : "exited with status"
            return "harness \(how) \(process.terminationStatus) without a result (see its stderr above)"
        }
        if let error = json["error"] { return "error: \(error)" }
        if let code = json["daemon_exit_code"], !(code is NSNull) { return "the daemon exited (code \(code)) during the run" }
        switch run.test {
        case "scale", "million":
            let want = Double(step.arguments[step.arguments.firstIndex(of: "--pending")! + 1]) ?? 0
            let done = run.number(["schedule", "calls"]) ?? 0
            if done < want {
                return "only \(grouped(done)) of \(grouped(want)) scheduled in \(grouped(run.number(["schedule", "s"]) ?? 0)) s"
            }
        case "latency", "burst_floor":
            let received = run.number(["received"]) ?? 0, burst = run.number(["burst"]) ?? 0
            if received < burst { return "received \(grouped(received)) of \(grouped(burst)) Fired signals" }
            if let left = run.number(["pending_left"]), let pending = run.number(["pending"]), left != pending {
                return "\(grouped(left)) left pending after the burst, expected \(grouped(pending))"
            }
        case "check":
            if (json["ok"] as? NSNumber)?.boolValue != true {
                let failures = (json["failures"] as? [Any])?.map { "\($0)" }.joined(separator: "; ") ?? "?"
                return "check failed: \(failures)"
            }
        default:
            break
        }
        return nil
    }
}

/// Interrupts a harness that overran; SIGINT lets it clean up, SIGTERM 20 s later if it did not.
private final class Watchdog: @unchecked Sendable {
    private let lock = NSLock()
    private let process: Process
    private var done = false
    private(set) var fired = false

    init(process: Process) { self.process = process }

    func fire() {
        lock.lock()
        defer { lock.unlock() }
        guard !done else { return }
        fired = true
        FileHandle.standardError.write(Data("tocsin-bench versus: harness overran, interrupting it\n".utf8))
        process.interrupt()
        DispatchQueue.global().asyncAfter(deadline: .now() + 20) { [self] in
            lock.lock()
            defer { lock.unlock() }
            if !done { process.terminate() }
        }
    }

    func cancel() {
        lock.lock()
        done = true
        lock.unlock()
    }
}
