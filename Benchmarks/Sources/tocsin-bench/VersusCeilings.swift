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

    /// The ceilings and where each side stands against them (medians over the rounds); empty without them.
    func ceilingLines(_ r: Runs) -> (lines: [String], values: [String: Any]) {
        var lines: [String] = []
        var values: [String: Any] = [:]
        let rate: (HarnessRun) -> Double? = { $0.rate }
        let p99: (HarnessRun) -> Double? = { $0.number(["lat_p99_ms"]) }
        let peerRate = r.median("scale/peer", rate), tocsinRate = r.median("scale/tocsin", rate)
        let ping = r.runs["ping"]?.first?.number(["getid", "calls_per_s"])
        let several = r.rounds > 1 ? "; median of \(r.rounds) rounds" : ""
        if let failed = r.runs["ceiling"]?.first(where: { $0.failure != nil }) {
            lines.append("Schedule ceiling: not measured (\(failed.failure!))")
        } else if let ceiling = r.median("ceiling", rate), ceiling > 0 {
            var line = "Schedule ceiling (null gateway on Tocsin's D-Bus layer, nothing stored\(several)): \(grouped(ceiling)) calls/s"
            if let ping, ping > 0 { line += " = \(formatted(100 * ceiling / ping, decimals: 1)) % of ping" }
            if let peerRate, peerRate > 0 { line += ", \(formatted(ceiling / peerRate, decimals: 2))x the peer" }
            if let tocsinRate { line += "; Tocsin reaches \(formatted(100 * tocsinRate / ceiling, decimals: 1)) % of it (goal 60 %)" }
            lines.append(line)
            values["ceiling_calls_per_s"] = ceiling
        } else if r.runs["ceiling"] != nil {
            lines.append("Schedule ceiling: not measured (no rate)")
        }
        let peerP99 = r.median("latency/peer", p99), tocsinP99 = r.median("latency/tocsin", p99)
        if let failed = r.runs["floor"]?.first(where: { $0.failure != nil }) {
            lines.append("Burst floor: not measured (\(failed.failure!))")
        } else if let floor = r.median("floor", p99), floor > 0 {
            var line = "Burst floor (\(grouped(burst)) signals ready and written at once, bus and subscriber alone\(several)): p99 \(formatted(floor, decimals: 1)) ms"
            if let peerP99 { line += "; the peer's p99 is \(formatted(peerP99 / floor, decimals: 2))x it" }
            if let tocsinP99 { line += ", Tocsin's \(formatted(tocsinP99 / floor, decimals: 2))x (goal 1.5x)" }
            lines.append(line)
            values["floor_p99_ms"] = floor
        } else if r.runs["floor"] != nil {
            lines.append("Burst floor: not measured (no p99)")
        }
        return (lines, values)
    }
}
