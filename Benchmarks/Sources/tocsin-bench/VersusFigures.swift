import Foundation

// The figures of `tocsin-bench versus`: what each harness result is compared with and against
// which goal. Kept apart from the runs and the output (VersusBenchmark.swift) so a goal can be
// read, and changed, in one place. The goals are the engine's gates (docs/BENCHMARKS.md): a
// change may not fall below them.
//
// A figure compares runs made back to back in one round (the peer, Tocsin, then the ceiling);
// with `--rounds N` it is judged on the median of the N rounds' comparisons, so one disturbed
// run does not decide it: the same binary's ratios have ranged by a third between invocations
// on this machine.
extension VersusBenchmark {
    /// The summary's rows, in order, each judged from the runs it needs.
    func evaluate(_ r: Runs, sides: [Side]) -> [Figure] {
        [scheduleRate(r, sides), scheduleAgainstCeiling(r, sides), memoryPerPending(r, sides), millionPending(r, sides),
         burstAgainstFloor(r, sides), idleWakeups(r, sides), apiCheck(r, sides)]
    }

    /// Schedule rate: Tocsin >= 2x the peer.
    private func scheduleRate(_ r: Runs, _ sides: [Side]) -> Figure {
        let both = sides.count == 2
        var f = Figure(name: "Schedule calls/s (\(grouped(pending)) pending, 64 in flight)", goal: ">= 2x the peer",
                       load: r.loads("scale/peer", "scale/tocsin"))
        f.peer = r.shown("scale/peer") { $0.rate.map { grouped($0) } }
        f.tocsin = r.shown("scale/tocsin") { $0.rate.map { grouped($0) } }
        f.judge(r, needs: both ? ["scale/peer", "scale/tocsin"] : [], skip: both ? nil : "needs both sides",
                ratio: { runs in ratio(runs["scale/tocsin"]?.rate, over: runs["scale/peer"]?.rate) },
                shown: { "\(formatted($0, decimals: 2))x" }, pass: { $0 >= 2 }, missing: "no Schedule rate")
        f.values = ["peer_calls_per_s": r.median("scale/peer") { $0.rate } as Any,
                    "tocsin_calls_per_s": r.median("scale/tocsin") { $0.rate } as Any]
        return f
    }

    /// Schedule rate against the null gateway's in the same round: Tocsin >= 60 %.
    private func scheduleAgainstCeiling(_ r: Runs, _ sides: [Side]) -> Figure {
        let skip = !sides.contains(.tocsin) ? "tocsin not run" : noCeilings ? "--no-ceilings" : nil
        var f = Figure(name: "Schedule / null gateway (\(r.shown("ceiling") { $0.rate.map { grouped($0) } }) calls/s)",
                       goal: "tocsin >= 60 %", load: r.loads(nil, "ceiling", label: "null"))
        f.tocsin = r.shown("scale/tocsin") { $0.rate.map { grouped($0) } }
        f.judge(r, needs: ["scale/tocsin", "ceiling"], skip: skip,
                ratio: { runs in ratio(runs["scale/tocsin"]?.rate, over: runs["ceiling"]?.rate) },
                shown: { "\(formatted(100 * $0, decimals: 1)) %" }, pass: { $0 >= 0.6 }, missing: "no Schedule rate")
        f.values = ["ceiling_calls_per_s": r.median("ceiling") { $0.rate } as Any]
        return f
    }

    /// Memory: Tocsin <= 1/4 of the peer's bytes per pending notification.
    private func memoryPerPending(_ r: Runs, _ sides: [Side]) -> Figure {
        let both = sides.count == 2
        let perPending: (HarnessRun) -> Double? = { $0.number(["bytes_per_pending"]) }
        var f = Figure(name: "RSS bytes per pending (\(grouped(pending)) pending)", goal: "<= 0.25x the peer",
                       load: r.loads("scale/peer", "scale/tocsin"))
        f.peer = r.shown("scale/peer") { perPending($0).map { grouped($0) } }
        f.tocsin = r.shown("scale/tocsin") { perPending($0).map { grouped($0) } }
        f.judge(r, needs: both ? ["scale/peer", "scale/tocsin"] : [], skip: both ? nil : "needs both sides",
                ratio: { runs in ratio(runs["scale/tocsin"].flatMap(perPending), over: runs["scale/peer"].flatMap(perPending)) },
                shown: { "\(formatted($0, decimals: 2))x" }, pass: { $0 <= 0.25 },
                missing: "no RSS figure, or the peer's RSS did not grow")
        f.values = ["peer_bytes_per_pending": r.median("scale/peer", perPending) as Any,
                    "tocsin_bytes_per_pending": r.median("scale/tocsin", perPending) as Any]
        return f
    }

    /// A million pending, Tocsin only, once.
    private func millionPending(_ r: Runs, _ sides: [Side]) -> Figure {
        let hasTocsin = sides.contains(.tocsin)
        let m = r.runs["million/tocsin"]?.first
        var f = Figure(name: "1,000,000 pending: RSS, time to schedule", goal: "< 300 MB, < 60 s", load: r.loads(nil, "million/tocsin"))
        f.peer = "-"
        let rssMB = m?.number(["rss_kb"]).map { $0 * 1024 / 1e6 }, secs = m?.number(["schedule", "s"])
        var shown = "-"
        if let m {
            shown = "\(rssMB.map { grouped($0) } ?? "-") MB, \(secs.map { formatted($0, decimals: 1) } ?? "-") s"
            if let done = m.number(["schedule", "calls"]), done < 1_000_000 {
                shown += " (\(grouped(done)) done)"
            }
            f.tocsin = shown
        }
        f.judge(needs: [m], skip: million ? (hasTocsin ? nil : "tocsin not run") : "pass --million") {
            guard let mb = rssMB, let s = secs else { return (nil, false, "no RSS or time") }
            return (shown, mb < 300 && s < 60, nil)
        }
        f.values = ["tocsin_rss_mb": rssMB as Any, "tocsin_seconds": secs as Any]
        return f
    }

    /// Burst latency: Tocsin's p99 <= 1.5x the floor measured right after it (the peer's is shown for reference).
    private func burstAgainstFloor(_ r: Runs, _ sides: [Side]) -> Figure {
        let skip = !sides.contains(.tocsin) ? "tocsin not run" : noCeilings ? "--no-ceilings" : nil
        let p99: (HarnessRun) -> Double? = { $0.number(["lat_p99_ms"]) }
        var f = Figure(name: "due -> Fired p99 ms (\(grouped(burst)) due at once, \(grouped(pending)) pending; floor \(r.shown("floor") { p99($0).map { formatted($0, decimals: 1) } }) ms)",
                       goal: "<= 1.5x the floor", load: r.loads("latency/peer", "latency/tocsin"))
        f.peer = r.shown("latency/peer") { p99($0).map { formatted($0, decimals: 1) } }
        f.tocsin = r.shown("latency/tocsin") { p99($0).map { formatted($0, decimals: 1) } }
        f.judge(r, needs: ["latency/tocsin", "floor"], skip: skip,
                ratio: { runs in ratio(runs["latency/tocsin"].flatMap(p99), over: runs["floor"].flatMap(p99)) },
                shown: { "\(formatted($0, decimals: 2))x the floor" }, pass: { $0 <= 1.5 }, missing: "no p99")
        f.values = ["peer_p99_ms": r.median("latency/peer", p99) as Any, "tocsin_p99_ms": r.median("latency/tocsin", p99) as Any,
                    "floor_p99_ms": r.median("floor", p99) as Any]
        return f
    }

    /// Idle wakeups: none for Tocsin (the peer's figure is shown for reference).
    private func idleWakeups(_ r: Runs, _ sides: [Side]) -> Figure {
        let hasTocsin = sides.contains(.tocsin)
        let ip = r.runs["idle/peer"]?.first, it = r.runs["idle/tocsin"]?.first
        let wp = ip?.number(["wakeups_per_min"]), wt = it?.number(["wakeups_per_min"])
        var f = Figure(name: "idle wakeups/min (\(grouped(idlePending)) pending, \(idleSeconds) s)", goal: "tocsin 0",
                       load: r.loads("idle/peer", "idle/tocsin"))
        f.peer = ip.map { _ in wp.map { formatted($0, decimals: 1) } ?? "-" } ?? "not run"
        f.tocsin = it.map { _ in wt.map { formatted($0, decimals: 1) } ?? "-" } ?? "not run"
        f.judge(needs: [it], skip: hasTocsin ? nil : "tocsin not run") {
            guard let t = wt else { return (nil, false, "no wakeup count") }
            return (formatted(t, decimals: 1), t == 0, nil)
        }
        f.values = ["peer_wakeups_per_min": wp as Any, "tocsin_wakeups_per_min": wt as Any]
        return f
    }

    /// API smoke test: ok for both (for the side run, with --only).
    private func apiCheck(_ r: Runs, _ sides: [Side]) -> Figure {
        let cp = r.runs["check/peer"]?.first, ct = r.runs["check/tocsin"]?.first
        var f = Figure(name: "check (API smoke test)", goal: "ok for both", load: r.loads("check/peer", "check/tocsin"))
        f.peer = cp.map { $0.failure == nil ? "ok" : "FAILED" } ?? "not run"
        f.tocsin = ct.map { $0.failure == nil ? "ok" : "FAILED" } ?? "not run"
        f.judge(needs: [cp, ct].filter { $0 != nil }, skip: nil) {
            (sides.count == 2 ? "ok, ok" : "ok (\(sides[0].rawValue) only)", true, nil)
        }
        return f
    }
}

/// `a / b` when both are there and `b` is positive.
func ratio(_ a: Double?, over b: Double?) -> Double? {
    guard let a, let b, b > 0 else { return nil }
    return a / b
}

func median(_ xs: [Double]) -> Double? {
    guard !xs.isEmpty else { return nil }
    let s = xs.sorted()
    return s.count % 2 == 1 ? s[s.count / 2] : (s[s.count / 2 - 1] + s[s.count / 2]) / 2
}

// MARK: - Runs

/// Every step's runs by id, one per round in round order (a step run once has one).
struct Runs {
    var runs: [String: [HarnessRun]] = [:]

    mutating func add(_ run: HarnessRun, for id: String) { runs[id, default: []].append(run) }

    var rounds: Int { runs.values.map(\.count).max() ?? 0 }

    /// The rounds in which every run of `ids` is there: each round's runs by id.
    func rounds(of ids: [String]) -> [[String: HarnessRun]] {
        let n = ids.map { runs[$0]?.count ?? 0 }.min() ?? 0
        return (0..<n).map { i in Dictionary(uniqueKeysWithValues: ids.map { ($0, runs[$0]![i]) }) }
    }

    /// The median over the rounds of `value` of `id`'s runs.
    func median(_ id: String, _ value: (HarnessRun) -> Double?) -> Double? {
        tocsin_bench.median((runs[id] ?? []).compactMap(value))
    }

    /// A column's cell: the one run's value, or each round's, in order.
    func shown(_ id: String, _ text: (HarnessRun) -> String?) -> String {
        guard let list = runs[id], !list.isEmpty else { return "not run" }
        if list.count == 1 { return text(list[0]) ?? "-" }
        let cells = list.compactMap(text)
        guard cells.count == list.count else { return "-" }
        return cells.joined(separator: " / ")
    }

    /// `other_load_pct` of the runs behind a figure: the rest of the machine's CPU use meanwhile.
    func loads(_ peer: String?, _ tocsin: String?, label: String? = nil) -> String {
        func pct(_ id: String?) -> String? {
            guard let id, let list = runs[id], !list.isEmpty else { return nil }
            return list.map { $0.number(["other_load_pct"]).map { grouped($0) } ?? "-" }.joined(separator: "/")
        }
        if let label { return "\(label) \(pct(tocsin) ?? "-")" }
        switch (pct(peer), pct(tocsin)) {
        case (nil, nil): return "-"
        case (let p?, nil): return "p \(p)"
        case (nil, let t?): return "t \(t)"
        case (let p?, let t?): return "p \(p) / t \(t)"
        }
    }
}

// MARK: - Figures

enum Mark: String {
    case pass = "PASS", fail = "FAIL", skip = "SKIP"
}

/// One row of the summary: both sides' values, the compared result, the goal and the mark.
struct Figure {
    var name: String
    var goal: String
    var load: String
    var peer = "-"
    var tocsin = "-"
    var result = "-"
    var mark = Mark.fail
    var reason: String?
    var values: [String: Any] = [:]
    /// Each round's ratio, for the figures judged on rounds.
    var ratios: [Double] = []

    init(name: String, goal: String, load: String) {
        self.name = name
        self.goal = goal
        self.load = load
    }

    /// Marks the figure: SKIP with `skip`'s reason; FAIL if any run it needs failed (with that reason);
    /// else `compare`'s (result, pass, reason).
    mutating func judge(needs: [HarnessRun?], skip: String?, _ compare: () -> (String?, Bool, String?)) {
        if let skip {
            mark = .skip
            reason = skip
            return
        }
        let failures = needs.compactMap { $0?.failure.map { f in f } }
        if !failures.isEmpty {
            mark = .fail
            reason = failures.joined(separator: "; ")
            return
        }
        let (r, pass, why) = compare()
        result = r ?? "-"
        mark = pass ? .pass : .fail
        reason = why.map { "not measured: \($0)" }
    }

    /// Judges a ratio taken in each round from the runs of `needs` made in it, on the median of
    /// the rounds: a run that failed in any round fails the figure (a disturbed run is noise, a
    /// failed one is a defect), and each round's ratio is shown beside the median.
    mutating func judge(_ r: Runs, needs: [String], skip: String?, ratio: ([String: HarnessRun]) -> Double?,
                        shown: (Double) -> String, pass: (Double) -> Bool, missing: String) {
        let all = needs.flatMap { r.runs[$0] ?? [] }
        let ratios = r.rounds(of: needs).map(ratio)
        let complete = !ratios.isEmpty && ratios.allSatisfy { $0 != nil }
        if complete { self.ratios = ratios.compactMap { $0 } }
        judge(needs: all, skip: skip) {
            guard complete, let m = tocsin_bench.median(ratios.compactMap { $0 }) else { return (nil, false, missing) }
            let each = ratios.count > 1 ? " (rounds: " + ratios.compactMap { $0.map(shown) }.joined(separator: ", ") + ")" : ""
            return (ratios.count > 1 ? "median \(shown(m))\(each)" : shown(m), pass(m), nil)
        }
    }
}
