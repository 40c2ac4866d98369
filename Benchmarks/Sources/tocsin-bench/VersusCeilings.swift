import Foundation

/// What no daemon can beat on this machine with the harness's client and bus, measured in the
/// same run as the figures, so a goal can be read against what is reachable:
///
/// - **Schedule ceiling**: the harness's `scale` against `tocsin-bench null-gateway`, which
///   answers each `Schedule` at once and stores nothing, on Tocsin's own D-Bus layer and
///   executor loop. The engine's cost is the distance from it to Tocsin.
/// - **Burst floor**: `floor/burst_floor.py`, 1,000 `Fired` signals marshalled beforehand and
///   written in one send, received by the harness's own subscriber code. A daemon with
///   everything ready at the due instant would still show this p99.
extension VersusBenchmark {
    static var floorScript: String { packageDirectory.appendingPathComponent("floor/burst_floor.py").path }

    /// This executable, which serves `null-gateway`.
    static var benchExecutable: String { URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().path }

    /// The null gateway's `scale`, run right after the two sides' own.
    var scheduleCeilingStep: HarnessStep {
        HarnessStep(test: "scale", side: nil, arguments: ["scale", "--pending", "\(pending)"],
                    daemon: shellQuoted(Self.benchExecutable) + " null-gateway", label: "ceiling")
    }

    /// The burst floor, run right after the two sides' `latency`.
    var burstFloorStep: HarnessStep {
        HarnessStep(test: "burst_floor", side: nil, arguments: ["--burst", "\(burst)"], script: Self.floorScript, label: "floor")
    }

    /// The ceilings and where each goal and each side stands against them; empty without them.
    func ceilingLines(_ r: [String: HarnessRun]) -> (lines: [String], values: [String: Any]) {
        var lines: [String] = []
        var values: [String: Any] = [:]
        let peerRate = r["scale/peer"]?.rate, tocsinRate = r["scale/tocsin"]?.rate
        let ping = r["ping"]?.number(["getid", "calls_per_s"])
        if let c = r["ceiling"], c.failure == nil, let ceiling = c.rate, ceiling > 0 {
            var line = "Schedule ceiling (null gateway on Tocsin's D-Bus layer, nothing stored): \(grouped(ceiling)) calls/s"
            if let ping, ping > 0 { line += " = \(formatted(100 * ceiling / ping, decimals: 1)) % of ping (goal 50 %)" }
            if let peerRate, peerRate > 0 { line += ", \(formatted(ceiling / peerRate, decimals: 2))x the peer (goal 3x)" }
            if let tocsinRate { line += "; Tocsin reaches \(formatted(100 * tocsinRate / ceiling, decimals: 1)) % of it" }
            lines.append(line)
            values["ceiling_calls_per_s"] = ceiling
        } else if let c = r["ceiling"] {
            lines.append("Schedule ceiling: not measured (\(c.failure ?? "no rate"))")
        }
        let peerP99 = r["latency/peer"]?.number(["lat_p99_ms"]), tocsinP99 = r["latency/tocsin"]?.number(["lat_p99_ms"])
        if let f = r["floor"], f.failure == nil, let floor = f.number(["lat_p99_ms"]), floor > 0 {
            var line = "Burst floor (\(grouped(burst)) signals ready and written at once, bus and subscriber alone): p99 \(formatted(floor, decimals: 1)) ms"
            if let peerP99 { line += " = the peer's p99 / \(formatted(peerP99 / floor, decimals: 2)) (goal: / 10)" }
            if let tocsinP99 { line += "; Tocsin's p99 is \(formatted(tocsinP99 / floor, decimals: 2))x the floor" }
            lines.append(line)
            values["floor_p99_ms"] = floor
        } else if let f = r["floor"] {
            lines.append("Burst floor: not measured (\(f.failure ?? "no p99"))")
        }
        return (lines, values)
    }
}
