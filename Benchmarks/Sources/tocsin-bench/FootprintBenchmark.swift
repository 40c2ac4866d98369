import ArgumentParser
import DBus
import Foundation
import Glibc
import TocsinGateway
import TocsinSystem

/// What a desktop user meets every day, against the C programs Tocsin sits beside, in one
/// invocation: the idle daemon's resident memory against dunst's (under Xvfb, nothing shown), and
/// the wall time of each everyday command against the yardstick doing the same work (`gdbus call`
/// for the D-Bus commands, `systemd-analyze calendar` for `next`, Python's tomllib for `check`).
/// Each pair runs alternately, `runs` times, on one private bus; the medians are compared.
struct FootprintBenchmark: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "footprint",
        abstract: "Daemon RSS against dunst and CLI wall time against gdbus, systemd-analyze and tomllib.",
        discussion: """
        Measure the binary as it ships: bash scripts/build-release.sh, then strip it.
        Run from the repository root (the bus configuration and the example config are found there).
        """)

    @Option(help: "The tocsin executable to measure.") var tocsin: String
    @Option(help: "Paired runs per command.") var runs = 30
    @Option(help: "Pending notifications for the second RSS figure.") var pending = 10_000
    @Option(help: "Seconds to let each daemon settle before its RSS is read.") var settle = 2.0
    @Option(help: "dbus-daemon configuration of the private bus.") var busConfig = "contrib/test/dbus-session.conf"
    @Option(help: "The config `tocsin check` and tomllib read.") var example = "contrib/examples/alarm-clock.toml"
    @Option(help: "The Python of the tomllib yardstick (not a pyenv shim: its shell start-up is not Python's).")
    var python = "/usr/bin/python3"

    func run() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("tocsin-footprint-\(getpid())").path
        try FileManager.default.createDirectory(atPath: dir + "/data/tocsin/sounds", withIntermediateDirectories: true)
        try writeSilentWAV(to: dir + "/data/tocsin/sounds/alarm.wav")
        var started: [Background] = []
        defer {
            for p in started.reversed() { p.stop() }
            try? FileManager.default.removeItem(atPath: dir)
        }
        let tocsinPath = URL(fileURLWithPath: tocsin).standardizedFileURL.path
        let size = ((try? FileManager.default.attributesOfItem(atPath: tocsinPath)[.size]) as? Int) ?? 0
        print("tocsin-bench footprint: \(tocsinPath) (\(formatted(Double(size) / 1e6)) MB), \(runs) paired runs, load \(loadAverageText())")

        // Both daemons' executables as read from disk (evictFromPageCache says why); dunst's
        // libraries, installed long ago, already are.
        for executable in [tocsinPath, "/usr/bin/dunst"] {
            switch try evictFromPageCache(executable) {
            case 0: break
            case let pages?: print("warning: \(pages) pages of \(executable) are still in the page cache; its RSS may count large folios")
            case nil: print("note: whether \(executable) left the page cache cannot be checked (run as its owner or root)")
            }
        }

        // The private bus, then the X server and dunst on it, then the daemon.
        let bus = try Background(["/usr/bin/dbus-daemon", "--config-file=\(busConfig)", "--nofork", "--print-address=1"],
                                 environment: ProcessInfo.processInfo.environment, captureOutput: true)
        started.append(bus)
        let address = bus.firstLine().trimmingCharacters(in: .whitespacesAndNewlines)
        guard !address.isEmpty else { throw VersusError("dbus-daemon printed no address") }
        var env = ProcessInfo.processInfo.environment
        env["DBUS_SESSION_BUS_ADDRESS"] = address
        env["HOME"] = dir
        env["XDG_CONFIG_HOME"] = dir + "/config"
        env["XDG_STATE_HOME"] = dir + "/state"
        env["XDG_DATA_HOME"] = dir + "/data"
        env["XDG_DATA_DIRS"] = dir + "/data"
        let envList = env.map { "\($0.key)=\($0.value)" }

        let display = (90..<200).first { !FileManager.default.fileExists(atPath: "/tmp/.X\($0)-lock") } ?? 99
        started.append(try Background(["/usr/bin/Xvfb", ":\(display)", "-nolisten", "tcp", "-screen", "0", "1024x768x24"],
                                      environment: env))
        try waitFor("Xvfb :\(display)") { FileManager.default.fileExists(atPath: "/tmp/.X11-unix/X\(display)") }
        var dunstEnv = env
        dunstEnv["DISPLAY"] = ":\(display)"
        let dunst = try Background(["/usr/bin/dunst"], environment: dunstEnv)
        started.append(dunst)
        try awaitName("org.freedesktop.Notifications", envList)

        let config = dir + "/footprint.toml"
        try Data(Self.config.utf8).write(to: URL(fileURLWithPath: config))
        let daemon = try Background([tocsinPath, "daemon", "--config", config, "--state-dir", dir + "/st"], environment: env)
        started.append(daemon)
        try awaitName(Gateway.busName.rawValue, envList)

        usleep(UInt32(settle * 1e6))
        let dunstIdle = try dunst.memory(), tocsinIdle = try daemon.memory()
        print("idle RSS: tocsin \(tocsinIdle.text); dunst \(dunstIdle.text)")

        var rows: [FootprintRow] = []
        rows.append(FootprintRow(figure: "idle daemon RSS (MB)", tocsin: tocsinIdle.megabytes, yardstick: "dunst idle",
                                 reference: dunstIdle.megabytes, goal: 1.0, unit: "MB"))

        let client = try await DBusConnection.connect(address: address)
        try await schedule(client, count: 10, prefix: "ten")
        let pairs = try commandPairs(dir: dir)
        for pair in pairs {
            let row = try time(pair, environment: envList)
            print(row.line)
            rows.append(row)
        }

        let have = try await pendingCount(client)
        try await schedule(client, count: max(0, pending - have), prefix: "fill")
        usleep(UInt32(settle * 1e6))
        let tocsinFull = try daemon.memory()
        let nowPending = try await pendingCount(client)
        print("RSS with \(grouped(nowPending)) pending: tocsin \(tocsinFull.text)")
        rows.append(FootprintRow(figure: "daemon RSS, \(grouped(nowPending)) pending (MB)", tocsin: tocsinFull.megabytes,
                                 yardstick: "dunst idle", reference: dunstIdle.megabytes, goal: 1.5, unit: "MB"))
        printTable(rows)
    }

    /// The built-in default (desktop, events, log), with the per-client quota lifted for the fill.
    static let config = """
        # Written by `tocsin-bench footprint`: the built-in default plus room for one client's fill.
        [daemon]
        missed = "fire-once"
        max_pending_per_client = 1000000

        [backend.desktop]
        type = "libnotify"

        [backend.events]
        type = "dbus-signal"

        [backend.log]
        type = "log"

        """

    private func commandPairs(dir: String) throws -> [CommandPair] {
        let gdbus = ["/usr/bin/gdbus", "call", "--session", "--dest", Gateway.busName.rawValue,
                     "--object-path", Gateway.objectPath.rawValue]
        func method(_ m: String) -> [String] { gdbus + ["--method", "\(Gateway.interface.rawValue).\(m)"] }
        let tomllib = "import sys, tomllib\nwith open(sys.argv[1], 'rb') as f: tomllib.load(f)"
        return [
            CommandPair(name: "tocsin schedule --title x --after 1h", tocsin: [tocsin, "schedule", "--title", "x", "--after", "1h"],
                        yardstick: "gdbus call Schedule", reference: method("Schedule") + ["{'title': <'x'>, 'after': <'1h'>}"]),
            CommandPair(name: "tocsin status", tocsin: [tocsin, "status"],
                        yardstick: "gdbus call Status", reference: method("Status")),
            CommandPair(name: "tocsin list (10 pending)", tocsin: [tocsin, "list"],
                        yardstick: "gdbus call ListPage", reference: method("ListPage") + ["", "0"]),
            CommandPair(name: "tocsin next 'Mon..Fri 09:25' --count 3", tocsin: [tocsin, "next", "Mon..Fri 09:25", "--count", "3"],
                        yardstick: "systemd-analyze calendar", reference: ["/usr/bin/systemd-analyze", "calendar", "--iterations", "3", "Mon..Fri 09:25"]),
            CommandPair(name: "tocsin check alarm-clock.toml", tocsin: [tocsin, "check", example],
                        yardstick: "python3 tomllib.load", reference: [python, "-c", tomllib, example]),
        ]
    }

    /// `runs` alternating runs of both sides (which goes first alternates too); medians.
    /// `list` runs before `schedule` so that it lists exactly the ten scheduled for it.
    private func time(_ pair: CommandPair, environment: [String]) throws -> FootprintRow {
        var a: [Double] = [], b: [Double] = [], cpuA: [Double] = [], cpuB: [Double] = []
        for side in [pair.tocsin, pair.reference] {  // one warm-up each: page cache, bus
            let r = try Spawn.run(side, environment: environment)
            guard r.status == 0 else { throw VersusError("\(side.joined(separator: " ")) exited with \(r.status)") }
        }
        for i in 0..<runs {
            let first = i % 2 == 0
            for tocsinSide in first ? [true, false] : [false, true] {
                let r = try Spawn.run(tocsinSide ? pair.tocsin : pair.reference, environment: environment)
                guard r.status == 0 else { throw VersusError("\(pair.name) run \(i) exited with \(r.status)") }
                if tocsinSide { a.append(r.seconds); cpuA.append(r.cpuSeconds) } else { b.append(r.seconds); cpuB.append(r.cpuSeconds) }
            }
        }
        return FootprintRow(figure: pair.name, tocsin: median(a) * 1000, yardstick: pair.yardstick,
                            reference: median(b) * 1000, goal: 1.25, unit: "ms",
                            note: "CPU \(formatted(median(cpuA) * 1000)) ms against \(formatted(median(cpuB) * 1000)) ms")
    }

    private func awaitName(_ name: String, _ environment: [String]) throws {
        let r = try Spawn.run(["/usr/bin/gdbus", "wait", "--session", "--timeout", "15", name], environment: environment)
        guard r.status == 0 else { throw VersusError("\(name) did not appear on the bus within 15 s") }
    }

    private func schedule(_ client: DBusConnection, count: Int, prefix: String) async throws {
        var next = 0
        while next < count {
            let batch = next..<min(count, next + 64)
            try await withThrowingTaskGroup(of: Void.self) { group in
                for i in batch {
                    group.addTask {
                        _ = try await client.call(destination: Gateway.busName, path: Gateway.objectPath, interface: Gateway.interface,
                                                  member: "Schedule",
                                                  arguments: [.vardict([("key", .string("\(prefix)\(i)")), ("title", .string("Pending \(i)")),
                                                                        ("after", .string("\(1 + i % 100)h"))])])
                    }
                }
                try await group.waitForAll()
            }
            next = batch.upperBound
        }
    }

    private func pendingCount(_ client: DBusConnection) async throws -> Int {
        let reply = try await client.call(destination: Gateway.busName, path: Gateway.objectPath, interface: Gateway.interface,
                                          member: "Status")
        guard case .dictionary(_, _, let entries)? = reply.first else { throw VersusError("Status: unexpected reply") }
        for e in entries {
            if case .string("pending") = e.key, case .uint32(let n) = e.value.unwrappedVariant { return Int(n) }
        }
        throw VersusError("Status has no 'pending'")
    }

    private func printTable(_ rows: [FootprintRow]) {
        print("")
        print("figure | tocsin | yardstick | ratio | goal | verdict")
        print("--- | --- | --- | --- | --- | ---")
        for r in rows { print(r.line) }
    }
}

struct CommandPair {
    var name: String
    var tocsin: [String]
    var yardstick: String
    var reference: [String]
}

struct FootprintRow {
    var figure: String
    var tocsin: Double
    var yardstick: String
    var reference: Double
    var goal: Double
    var unit: String
    var note: String = ""

    var ratio: Double { tocsin / reference }
    var line: String {
        let t = "\(formatted(tocsin)) \(unit)" + (note.isEmpty ? "" : " (\(note))")
        return "\(figure) | \(t) | \(yardstick): \(formatted(reference)) \(unit) | \(formatted(ratio, decimals: 2))× | ≤ \(formatted(goal, decimals: 2))× | "
            + (ratio <= goal ? "PASS" : "FAIL")
    }
}

private func loadAverageText() -> String {
    guard let s = try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8) else { return "?" }
    return s.split(separator: " ").prefix(3).joined(separator: " ")
}
