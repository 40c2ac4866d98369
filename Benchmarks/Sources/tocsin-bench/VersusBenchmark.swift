import ArgumentParser
import Foundation

/// `tocsin-bench versus`: Tocsin against the peer gateway (`shared/peer/peer_gateway.py`, APScheduler +
/// dbus-fast), both measured by `shared/peer/harness.py` on private buses. Runs are interleaved per figure
/// (peer, Tocsin, then the ceiling) so drift of the shared machine hits both alike; each figure is printed
/// as a ratio with its goal and a PASS/FAIL mark, on the median of `--rounds` such rounds. A figure that could not be measured (the harness failed, the daemon
/// died, the run was incomplete) is a FAIL with the reason, never a pass. Exit status 1 if any goal failed.
struct VersusBenchmark: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "versus",
        abstract: "Tocsin against the Python peer gateway through shared/peer/harness.py; ratios against the goals.",
        discussion: """
            Needs dbus-daemon and, for the python3 used, `pip install dbus-fast apscheduler==3.11.3`.
            Takes several minutes with the default sizes (idle alone is 2 x --idle-seconds).
            """
    )

    enum Side: String, ExpressibleByArgument, CaseIterable {
        case peer, tocsin
    }

    @Option(help: "The tocsin binary (default: ../.build/release/tocsin relative to the Benchmarks package).")
    var tocsin: String?

    @Option(help: "Directory with peer_gateway.py and harness.py (default: ../../shared/peer relative to the Benchmarks package).")
    var peerDir: String?

    @Option(help: "Notifications pending for the scale and latency figures.")
    var pending = 100_000

    @Option(help: "Notifications due at the same instant in the latency figure.")
    var burst = 1_000

    @Option(help: "Length of each idle measurement, in seconds.")
    var idleSeconds = 60

    @Option(help: "Notifications pending during the idle measurement.")
    var idlePending = 10_000

    @Option(help: "Rounds of the scale and latency figures (peer, Tocsin, ceiling each); judged on the median of the rounds' ratios.")
    var rounds = 1

    @Option(help: "Run only one side (ratios to the other are then not evaluated).")
    var only: Side?

    @Flag(help: "Also schedule 1,000,000 with Tocsin alone (RSS < 300 MB, scheduled in < 60 s).")
    var million = false

    @Flag(help: "Skip the ceilings (the null gateway's Schedule rate and the burst floor; see VersusCeilings.swift).")
    var noCeilings = false

    @Flag(help: "Also print the collected figures and raw harness results as one JSON object.")
    var json = false

    @Option(help: "Python interpreter for the harness and the peer.")
    var python = "python3"

    /// The Benchmarks package directory, from this file's path at build time.
    static var packageDirectory: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    }

    func validate() throws {
        guard pending > 0, burst > 0, idleSeconds > 0, idlePending > 0, rounds > 0 else {
            throw ValidationError("--pending, --burst, --idle-seconds, --idle-pending and --rounds must be positive")
        }
    }

    func run() throws {
        let sides = only.map { [$0] } ?? Side.allCases
        let peerDir = URL(fileURLWithPath: self.peerDir ?? Self.packageDirectory.appendingPathComponent("../../shared/peer").path)
            .standardizedFileURL
        let harness = peerDir.appendingPathComponent("harness.py").path
        guard FileManager.default.fileExists(atPath: harness),
              !sides.contains(.peer) || FileManager.default.fileExists(atPath: peerDir.appendingPathComponent("peer_gateway.py").path)
        else {
            throw VersusError("no harness.py/peer_gateway.py in \(peerDir.path); pass --peer-dir DIR (the repository's sibling shared/peer)")
        }
        let tocsinPath = URL(fileURLWithPath: tocsin ?? Self.packageDirectory.appendingPathComponent("../.build/release/tocsin").path)
            .standardizedFileURL.path
        if sides.contains(.tocsin), !FileManager.default.isExecutableFile(atPath: tocsinPath) {
            throw VersusError("""
                no tocsin binary at \(tocsinPath).
                Build it in the repository root with `swift build -c release --product tocsin`, or pass --tocsin PATH.
                """)
        }
        try checkTools(peerDir: peerDir, needPeer: sides.contains(.peer))

        let runner = HarnessRunner(python: python, harness: harness, directory: peerDir)
        let plan = makePlan(sides: sides)
        print("versus: \(plan.count) harness runs; tocsin \(sides.contains(.tocsin) ? tocsinPath : "(not run)"); peer \(sides.contains(.peer) ? peerDir.path : "(not run)")")
        print("machine: \(ProcessInfo.processInfo.activeProcessorCount) cores, load average \(loadAverage())")
        var results = Runs()
        for (i, step) in plan.enumerated() {
            fflush(nil)  // progress lines interleave with the harness's stderr even when stdout is a file or pipe
            let run = try runner.run(step, tocsin: tocsinPath)
            results.add(run, for: step.id)
            print("[\(i + 1)/\(plan.count)] \(step.id): \(run.progressLine)")
        }
        let figures = evaluate(results, sides: sides)
        print("")
        printTable(figures)
        let ceilings = ceilingLines(results)
        if !ceilings.lines.isEmpty {
            print("")
            print("Ceilings measured in this run (no daemon beats them with this client, bus and machine):")
            for line in ceilings.lines { print("  " + line) }
        }
        if json {
            printJSON(figures, results: results, ceilings: ceilings.values, tocsinPath: tocsinPath, peerDir: peerDir.path)
        }
        if figures.contains(where: { $0.mark == .fail }) {
            throw ExitCode(1)
        }
    }

    // MARK: Plan

    /// Interleaved per figure: the bus reference, then each round of peer, Tocsin and the ceiling
    /// back to back for each test.
    private func makePlan(sides: [Side]) -> [HarnessStep] {
        var plan: [HarnessStep] = []
        if sides.contains(.tocsin) {
            plan.append(HarnessStep(test: "ping", side: nil, arguments: ["ping", "--calls", "\(max(50_000, min(pending, 100_000)))"]))
        }
        let ceilings = sides.contains(.tocsin) && !noCeilings
        for _ in 0..<rounds {
            for side in sides {
                plan.append(HarnessStep(test: "scale", side: side, arguments: ["scale", "--pending", "\(pending)"]))
            }
            if ceilings { plan.append(scheduleCeilingStep) }
        }
        for _ in 0..<rounds {
            for side in sides {
                plan.append(HarnessStep(test: "latency", side: side, arguments: ["latency", "--pending", "\(pending)", "--burst", "\(burst)"]))
            }
            if ceilings { plan.append(burstFloorStep) }
        }
        for side in sides {
            plan.append(HarnessStep(test: "idle", side: side, arguments: ["idle", "--pending", "\(idlePending)", "--seconds", "\(idleSeconds)"]))
        }
        for side in sides {
            plan.append(HarnessStep(test: "check", side: side, arguments: ["check"]))
        }
        if million, sides.contains(.tocsin) {
            // Past 90 s the goal (< 60 s) has failed anyway: stop there rather than wait for the whole million.
            plan.append(HarnessStep(test: "million", side: .tocsin, arguments: ["scale", "--pending", "1000000", "--timeout", "90"]))
        }
        return plan
    }

    /// Fails early, with the install command, when the harness's Python modules or dbus-daemon are missing.
    private func checkTools(peerDir: URL, needPeer: Bool) throws {
        guard findExecutable("dbus-daemon") != nil else {
            throw VersusError("dbus-daemon is not on PATH (Debian/Ubuntu: apt-get install dbus-daemon)")
        }
        let modules = needPeer ? ["dbus_fast", "apscheduler"] : ["dbus_fast"]
        let probe = """
            import importlib.util, sys
            missing = [m for m in sys.argv[1:] if importlib.util.find_spec(m) is None]
            print(sys.executable)
            print(" ".join(missing))
            if "apscheduler" in sys.argv[1:] and not missing:
                import importlib.metadata as md
                print(md.version("apscheduler"))
            """
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = [python, "-c", probe] + modules
        let out = Pipe()
        p.standardOutput = out
        do {
            try p.run()
        } catch {
            throw VersusError("cannot run \(python): \(error)")
        }
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        guard p.terminationStatus == 0, lines.count >= 2 else {
            throw VersusError("`\(python)` did not run (status \(p.terminationStatus)); pass --python PATH")
        }
        let missing = lines[1].split(separator: " ").map(String.init)
        if !missing.isEmpty {
            let packages = missing.map { $0 == "dbus_fast" ? "dbus-fast" : "apscheduler==3.11.3" }
            throw VersusError("""
                Python modules missing for \(lines[0]): \(missing.joined(separator: ", ")).
                Install them with: \(lines[0]) -m pip install \(packages.joined(separator: " "))
                """)
        }
        if needPeer, lines.count >= 3, !lines[2].isEmpty, lines[2] != "3.11.3" {
            print("warning: apscheduler \(lines[2]) installed; the peer's reference figures are for 3.11.3 (pip install apscheduler==3.11.3)")
        }
    }

    // MARK: Output

    private func printTable(_ figures: [Figure]) {
        let header = ["figure", "peer", "tocsin", "result", "goal", "", "other load %"]
        let rows = [header] + figures.map { [$0.name, $0.peer, $0.tocsin, $0.result, $0.goal, $0.mark.rawValue, $0.load] }
        var widths = Array(repeating: 0, count: header.count)
        for row in rows {
            for (i, cell) in row.enumerated() { widths[i] = max(widths[i], cell.count) }
        }
        let numeric: Set<Int> = [1, 2, 3]
        for (n, row) in rows.enumerated() {
            let cells = row.enumerated().map { i, cell in
                let pad = String(repeating: " ", count: widths[i] - cell.count)
                return numeric.contains(i) && n > 0 ? pad + cell : cell + pad
            }
            print(cells.joined(separator: "  ").trimmingTrailingSpaces())
        }
        let notes = figures.filter { $0.reason != nil }
        if !notes.isEmpty { print("") }
        for f in notes {
            print("\(f.mark.rawValue) \(f.name): \(f.reason!)")
        }
        let failed = figures.filter { $0.mark == .fail }.count, passed = figures.filter { $0.mark == .pass }.count
        print("\(passed) passed, \(failed) failed, \(figures.count - passed - failed) skipped")
    }

    private func printJSON(_ figures: [Figure], results: Runs, ceilings: [String: Any], tocsinPath: String,
                           peerDir: String) {
        var runs: [String: Any] = [:]
        for (id, list) in results.runs {
            runs[id] = list.map { run in
                ["result": run.json ?? NSNull(), "failure": run.failure ?? NSNull(), "wall_s": run.seconds] as [String: Any]
            }
        }
        let object: [String: Any] = [
            "date": ISO8601DateFormatter().string(from: Date()),
            "tocsin": tocsinPath, "peer_dir": peerDir,
            "options": ["pending": pending, "burst": burst, "idle_seconds": idleSeconds, "idle_pending": idlePending,
                        "only": only?.rawValue ?? NSNull(), "million": million, "rounds": rounds] as [String: Any],
            "figures": figures.map { f -> [String: Any] in
                var o: [String: Any] = ["figure": f.name, "goal": f.goal, "peer": f.peer, "tocsin": f.tocsin, "result": f.result,
                                        "mark": f.mark.rawValue, "reason": f.reason ?? NSNull()]
                for (k, v) in f.values { o[k] = (v as? Double).map { $0 as Any } ?? NSNull() }
                if !f.ratios.isEmpty { o["ratio_per_round"] = f.ratios }
                return o
            },
            "runs": runs,
            "ceilings": ceilings,
        ]
        guard let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]) else {
            print("{\"error\": \"figures not serialisable\"}")
            return
        }
        print(String(decoding: data, as: UTF8.self))
    }
}

// MARK: - Helpers

/// A set-up problem (missing binary, module or directory); printed without the usage text.
struct VersusError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

func grouped(_ x: Double) -> String {
    let n = Int(x.rounded())
    let digits = String(n.magnitude)
    var out = ""
    for (i, c) in digits.enumerated() {
        if i > 0, (digits.count - i) % 3 == 0 { out.append(",") }
        out.append(c)
    }
    return n < 0 ? "-" + out : out
}

func grouped(_ n: Int) -> String { grouped(Double(n)) }

func shellQuoted(_ s: String) -> String {
    "'" + s.replacingOccurrences(of: "'", with: "'\\''") + "'"
}

private func findExecutable(_ name: String) -> String? {
    let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
    return path.split(separator: ":").map { "\($0)/\(name)" }.first { FileManager.default.isExecutableFile(atPath: $0) }
}

private func loadAverage() -> String {
    guard let s = try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8) else { return "?" }
    return s.split(separator: " ").prefix(3).joined(separator: " ")
}

private extension String {
    func trimmingTrailingSpaces() -> String {
        var s = self
        while s.last == " " { s.removeLast() }
        return s
    }
}
