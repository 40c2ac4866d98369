import Foundation

// The figures of `tocsin-bench versus`: what each harness result is compared with and against
// which goal. Kept apart from the runs and the output (VersusBenchmark.swift) so a goal can be
// read, and changed, in one place.
extension VersusBenchmark {
    /// The summary's rows, in order, each judged from the runs it needs.
    func evaluate(_ r: [String: HarnessRun], sides: [Side]) -> [Figure] {
        [scheduleRate(r, sides), scheduleAgainstPing(r, sides), memoryPerPending(r, sides), millionPending(r, sides),
         burstLatency(r, sides), idleWakeups(r, sides), apiCheck(r, sides)]
    }

    /// Schedule rate: Tocsin >= 3x the peer.
    private func scheduleRate(_ r: [String: HarnessRun], _ sides: [Side]) -> Figure {
        let hasPeer = sides.contains(.peer), hasTocsin = sides.contains(.tocsin)
        let sp = r["scale/peer"], st = r["scale/tocsin"]
        var f = Figure(name: "Schedule calls/s (\(grouped(pending)) pending, 64 in flight)", goal: ">= 3x the peer",
                       load: loads(sp, st))
        f.peer = sp.map { $0.rate.map { grouped($0) } ?? "-" } ?? "not run"
        f.tocsin = st.map { $0.rate.map { grouped($0) } ?? "-" } ?? "not run"
        f.judge(needs: [hasPeer ? sp : nil, hasTocsin ? st : nil], skip: !(hasPeer && hasTocsin) ? "needs both sides" : nil) {
            guard let p = sp?.rate, let t = st?.rate, p > 0 else { return (nil, false, "no Schedule rate") }
            let ratio = t / p
            return ("\(formatted(ratio, decimals: 2))x", ratio >= 3, nil)
        }
        f.values = ["peer_calls_per_s": sp?.rate as Any, "tocsin_calls_per_s": st?.rate as Any]
        return f
    }

    /// Schedule rate against the bus's own GetId rate: Tocsin >= 50 %.
    private func scheduleAgainstPing(_ r: [String: HarnessRun], _ sides: [Side]) -> Figure {
        let hasPeer = sides.contains(.peer), hasTocsin = sides.contains(.tocsin)
        let sp = r["scale/peer"], st = r["scale/tocsin"]
        let ping = r["ping"]
        let pingRate = ping?.number(["getid", "calls_per_s"])
        var f = Figure(name: "Schedule / bus ping (ping \(pingRate.map { grouped($0) } ?? "-") calls/s)", goal: "tocsin >= 50 %",
                       load: loads(ping, nil, label: "ping"))
        if let pingRate, pingRate > 0 {
            f.peer = sp?.rate.map { "\(formatted(100 * $0 / pingRate, decimals: 1)) %" } ?? (hasPeer ? "-" : "not run")
            f.tocsin = st?.rate.map { "\(formatted(100 * $0 / pingRate, decimals: 1)) %" } ?? "-"
        }
        f.judge(needs: [ping, st], skip: hasTocsin ? nil : "tocsin not run") {
            guard let p = pingRate, p > 0, let t = st?.rate else { return (nil, false, "no ping or Schedule rate") }
            return ("\(formatted(100 * t / p, decimals: 1)) %", t / p >= 0.5, nil)
        }
        f.values = ["ping_calls_per_s": pingRate as Any]
        return f
    }

    /// Memory: Tocsin <= 1/4 of the peer's bytes per pending notification.
    private func memoryPerPending(_ r: [String: HarnessRun], _ sides: [Side]) -> Figure {
        let hasPeer = sides.contains(.peer), hasTocsin = sides.contains(.tocsin)
        let sp = r["scale/peer"], st = r["scale/tocsin"]
        let bp = sp?.number(["bytes_per_pending"]), bt = st?.number(["bytes_per_pending"])
        var f = Figure(name: "RSS bytes per pending (\(grouped(pending)) pending)", goal: "<= 0.25x the peer", load: loads(sp, st))
        f.peer = sp.map { _ in bp.map { grouped($0) } ?? "-" } ?? "not run"
        f.tocsin = st.map { _ in bt.map { grouped($0) } ?? "-" } ?? "not run"
        f.judge(needs: [hasPeer ? sp : nil, hasTocsin ? st : nil], skip: !(hasPeer && hasTocsin) ? "needs both sides" : nil) {
            guard let p = bp, let t = bt else { return (nil, false, "no RSS figure") }
            guard p > 0 else { return (nil, false, "the peer's RSS did not grow (\(grouped(p)) bytes per pending): no ratio") }
            let ratio = t / p
            return ("\(formatted(ratio, decimals: 2))x", ratio <= 0.25, nil)
        }
        f.values = ["peer_bytes_per_pending": bp as Any, "tocsin_bytes_per_pending": bt as Any]
        return f
    }

    /// A million pending, Tocsin only.
    private func millionPending(_ r: [String: HarnessRun], _ sides: [Side]) -> Figure {
        let hasTocsin = sides.contains(.tocsin)
        let m = r["million/tocsin"]
        var f = Figure(name: "1,000,000 pending: RSS, time to schedule", goal: "< 300 MB, < 60 s", load: loads(nil, m))
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

    /// Burst latency: Tocsin's p99 >= 10x better than the peer's.
    private func burstLatency(_ r: [String: HarnessRun], _ sides: [Side]) -> Figure {
        let hasPeer = sides.contains(.peer), hasTocsin = sides.contains(.tocsin)
        let lp = r["latency/peer"], lt = r["latency/tocsin"]
        let pp = lp?.number(["lat_p99_ms"]), pt = lt?.number(["lat_p99_ms"])
        var f = Figure(name: "due -> Fired p99 ms (\(grouped(burst)) due at once, \(grouped(pending)) pending)", goal: ">= 10x better",
                       load: loads(lp, lt))
        f.peer = lp.map { _ in pp.map { formatted($0, decimals: 1) } ?? "-" } ?? "not run"
        f.tocsin = lt.map { _ in pt.map { formatted($0, decimals: 1) } ?? "-" } ?? "not run"
        f.judge(needs: [hasPeer ? lp : nil, hasTocsin ? lt : nil], skip: !(hasPeer && hasTocsin) ? "needs both sides" : nil) {
            guard let p = pp, let t = pt else { return (nil, false, "no p99") }
            guard t > 0 else { return ("inf", true, nil) }
            let ratio = p / t
            return ("\(formatted(ratio, decimals: 2))x better", ratio >= 10, nil)
        }
        f.values = ["peer_p99_ms": pp as Any, "tocsin_p99_ms": pt as Any]
        return f
    }

    /// Idle wakeups: none for Tocsin (the peer's figure is shown for reference).
    private func idleWakeups(_ r: [String: HarnessRun], _ sides: [Side]) -> Figure {
        let hasTocsin = sides.contains(.tocsin)
        let ip = r["idle/peer"], it = r["idle/tocsin"]
        let wp = ip?.number(["wakeups_per_min"]), wt = it?.number(["wakeups_per_min"])
        var f = Figure(name: "idle wakeups/min (\(grouped(idlePending)) pending, \(idleSeconds) s)", goal: "tocsin 0", load: loads(ip, it))
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
    private func apiCheck(_ r: [String: HarnessRun], _ sides: [Side]) -> Figure {
        let cp = r["check/peer"], ct = r["check/tocsin"]
        var f = Figure(name: "check (API smoke test)", goal: "ok for both", load: loads(cp, ct))
        f.peer = cp.map { $0.failure == nil ? "ok" : "FAILED" } ?? "not run"
        f.tocsin = ct.map { $0.failure == nil ? "ok" : "FAILED" } ?? "not run"
        f.judge(needs: [cp, ct].filter { $0 != nil }, skip: nil) {
            (sides.count == 2 ? "ok, ok" : "ok (\(sides[0].rawValue) only)", true, nil)
        }
        return f
    }

    /// `other_load_pct` of the runs behind a figure: the rest of the machine's CPU use meanwhile.
    private func loads(_ peer: HarnessRun?, _ tocsin: HarnessRun?, label: String? = nil) -> String {
        func pct(_ run: HarnessRun?) -> String { run?.number(["other_load_pct"]).map { grouped($0) } ?? "-" }
        if let label { return "\(label) \(pct(peer))" }
        switch (peer, tocsin) {
        case (nil, nil): return "-"
        case (_, nil): return "p \(pct(peer))"
        case (nil, _): return "t \(pct(tocsin))"
        default: return "p \(pct(peer)) / t \(pct(tocsin))"
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
}
