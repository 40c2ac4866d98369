/// Shared timing for the subcommands. Best-of-N after warm-up: the minimum is the run least
/// disturbed by other processes on a shared machine, which is what a comparison needs.
struct Measurement {
    var best: Duration
    var runs: Int

    var bestSeconds: Double {
        let c = best.components
        return Double(c.seconds) + Double(c.attoseconds) * 1e-18
    }
}

func measure(warmup: Int, runs: Int, _ body: () throws -> Void) rethrows -> Measurement {
    let clock = ContinuousClock()
    for _ in 0..<warmup { try body() }
    var best = Duration.seconds(1_000_000)
    for _ in 0..<max(1, runs) {
        let elapsed = try clock.measure(body)
        if elapsed < best { best = elapsed }
    }
    return Measurement(best: best, runs: runs)
}

func formatted(_ x: Double, decimals: Int = 1) -> String {
    var scale = 1.0
    for _ in 0..<decimals { scale *= 10 }
    let rounded = (x * scale).rounded() / scale
    var s = String(rounded)
    if let dot = s.firstIndex(of: ".") {
        let have = s.distance(from: dot, to: s.endIndex) - 1
        if have < decimals { s += String(repeating: "0", count: decimals - have) }
    }
    return s
}

/// Times several bodies in alternation (A, B, A, B, ...) so a burst of load from other processes
/// hits them alike; returns the best time of each.
func measureInterleaved(warmup: Int, runs: Int, _ bodies: [() throws -> Void]) throws -> [Measurement] {
    let clock = ContinuousClock()
    for body in bodies {
        for _ in 0..<warmup { try body() }
    }
    var best = Array(repeating: Duration.seconds(1_000_000), count: bodies.count)
    for _ in 0..<max(1, runs) {
        for (i, body) in bodies.enumerated() {
            let elapsed = try clock.measure(body)
            if elapsed < best[i] { best[i] = elapsed }
        }
    }
    return best.map { Measurement(best: $0, runs: runs) }
}
