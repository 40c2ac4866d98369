import ArgumentParser
import Foundation
import Logging
import TocsinConfig
import TocsinCore
import TocsinTesting
import TocsinTime
import TocsinModel

/// The engine's costs: trigger evaluation, durable schedule/cancel, memory per pending
/// notification, and start-up with a large persisted state.
struct CoreBenchmark: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "core", abstract: "Scheduler, store and trigger costs.")

    @Option(help: "Durable schedule/cancel operations to time.") var operations = 10_000
    @Option(help: "Pending-notification counts for the memory and load figures.") var pending: [Int] = [100_000, 1_000_000]
    @Option(help: "Triggers evaluated for the next-fire cost.") var triggers = 1_000_000
    @Option(help: "Keep the largest persisted state in this directory and, when it already holds one, only time its start-up (for iterating on load speed).")
    var stateDir: String?

    func run() async throws {
        print("machine: \(ProcessInfo.processInfo.activeProcessorCount) cores; release build")
        try triggerCost()
        try await scheduleThroughput()
        for n in pending { try await memoryAndLoad(n, keep: n == pending.max() ? stateDir : nil) }
    }

    private func triggerCost() throws {
        let zones = ZoneInfoDirectory()
        let berlin = try zones.rules(named: "Europe/Berlin")
        let cal = try CalendarSpec.parse("Mon..Fri 07:30")
        let base = Instant(seconds: 1_790_000_000)
        var list: [Trigger] = []
        list.reserveCapacity(triggers)
        for i in 0..<triggers {
            switch i % 3 {
            case 0: list.append(.every(period: .minutes(Int64(1 + i % 60)), starting: base, count: nil, until: nil))
            case 1: list.append(.calendar(cal, zone: berlin))
            default: list.append(.remindBefore(event: base + .hours(48), offsets: [.hours(24), .hours(3), .hours(1), .zero]))
            }
        }
        var sink = 0
        let clock = ContinuousClock()
        let t = clock.measure {
            for (i, trig) in list.enumerated() {
                if let o = trig.next(after: base + .seconds(Int64(i % 86_400)), previous: nil) { sink &+= Int(o.number) }
            }
        }
        let ns = Double(t.components.attoseconds) / 1e9 + Double(t.components.seconds) * 1e9
        print("trigger next(after:): \(formatted(ns / Double(triggers), decimals: 0)) ns/call over \(triggers) triggers (1/3 every, 1/3 calendar, 1/3 remind_before; checksum \(sink % 997))")
    }

    private func makeCenter(_ dir: String, now: Instant) throws -> (TocsinCenter, VirtualClock) {
        let clock = VirtualClock(now: now)
        var o = CenterOptions(defaultZone: .utc)
        o.maxPending = 10_000_000
        let center = try TocsinCenter(options: o, stateDirectory: dir, clock: clock, timer: clock,
                                      logger: Logger(label: "bench") { _ in SwiftLogNoOpLogHandler() })
        return (center, clock)
    }

    private func scheduleThroughput() async throws {
        let dir = TemporaryDirectory(prefix: "tocsin-bench")
        let now = Instant(seconds: 1_790_000_000)
        let (center, _) = try makeCenter(dir.path, now: now)
        try await center.start(backends: [RecordingBackend(name: "log")])
        var specs: [NotificationSpec] = []
        for i in 0..<operations {
            var s = NotificationSpec()
            s.key = "k\(i)"
            s.title = "Notification \(i)"
            s.trigger = .at(.instant(now + .seconds(Int64(3600 + i))))
            specs.append(s)
        }
        let clock = ContinuousClock()
        let half = operations / 2
        let t1 = try await clock.measure { for s in specs.prefix(half) { try await center.schedule(s) } }
        let rest = Array(specs.dropFirst(half))
        let t2 = try await clock.measure { try await Self.concurrently(rest.count, { rest[$0] }, center: center) }
        let t3 = try await clock.measure { for i in 0..<operations { try await center.cancel("k\(i)") } }
        print("schedule, one caller: \(formatted(Double(half) / seconds(t1), decimals: 0)) ops/s (\(half) calls, each awaited; each durable with synchronous=FULL before it returns)")
        print("schedule, 64 callers: \(formatted(Double(operations - half) / seconds(t2), decimals: 0)) ops/s (group commit: calls in flight share a transaction)")
        print("cancel, one caller: \(formatted(Double(operations) / seconds(t3), decimals: 0)) ops/s")
    }

    /// Schedules `specs` with 64 calls in flight, as the D-Bus harness does.
    static func concurrently(_ count: Int, _ make: @escaping @Sendable (Int) -> NotificationSpec, center: TocsinCenter,
                             window: Int = 64) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            var next = 0
            for _ in 0..<min(window, count) {
                let i = next
                next += 1
                group.addTask { try await center.schedule(make(i)) }
            }
            while try await group.next() != nil {
                guard next < count else { continue }
                let i = next
                next += 1
                group.addTask { try await center.schedule(make(i)) }
            }
        }
    }

    private func memoryAndLoad(_ n: Int, keep: String?) async throws {
        let temporary = TemporaryDirectory(prefix: "tocsin-bench")
        let path = keep ?? temporary.path
        let reuse = keep.map { FileManager.default.fileExists(atPath: $0 + "/state.sqlite3") } ?? false
        if keep != nil { try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true) }
        let now = Instant(seconds: 1_790_000_000)
        // Generated as they are scheduled, so no array of a million requests inflates the figure.
        let make: @Sendable (Int) -> NotificationSpec = { i in
            var s = NotificationSpec()
            s.key = "n\(i)"
            s.title = "Reminder number \(i)"
            s.body = "Body text of reminder \(i)"
            s.trigger = i % 2 == 0 ? .at(.instant(now + .seconds(Int64(3600 + i)))) : .every(.minutes(15), count: nil, starting: nil, until: nil)
            return s
        }
        let clock = ContinuousClock()
        var loadTime = Duration.zero
        var afterLoad = 0
        if !reuse {
            let (center, _) = try makeCenter(path, now: now)
            try await center.start(backends: [RecordingBackend(name: "log")])
            let before = residentBytes()
            let t = try await clock.measure { try await Self.concurrently(n, make, center: center) }
            let after = residentBytes()
            let count = await center.activeCount
            print("pending \(n): \(formatted(Double(after - before) / Double(count), decimals: 0)) bytes/notification resident (RSS \(after / 1_048_576) MiB; scheduled by 64 concurrent callers in \(formatted(seconds(t), decimals: 1)) s, \(formatted(Double(n) / seconds(t), decimals: 0))/s)")
            await center.shutdown()
        }
        do {
            let base = residentBytes()
            let (center, _) = try makeCenter(path, now: now)
            let cpuBefore = processCPUSeconds()
            loadTime = try await clock.measure { try await center.start(backends: [RecordingBackend(name: "log")]) }
            let cpu = processCPUSeconds() - cpuBefore
            afterLoad = residentBytes()
            let count = await center.activeCount
            print("start-up with \(count) persisted: \(formatted(seconds(loadTime), decimals: 2)) s to load, \(formatted(cpu, decimals: 2)) s of CPU over all threads (RSS +\((afterLoad - base) / 1_048_576) MiB)")
            await center.shutdown()
        }
    }
}

/// User and system CPU of the whole process: with other work on the machine, wall time says
/// little, CPU time still says what the load costs.
func processCPUSeconds() -> Double {
    var u = rusage()
    getrusage(RUSAGE_SELF.rawValue, &u)
    return Double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + Double(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6
}

func seconds(_ d: Duration) -> Double { Double(d.components.seconds) + Double(d.components.attoseconds) * 1e-18 }

/// Resident set size from /proc/self/statm.
func residentBytes() -> Int {
    guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
    let fields = text.split(separator: " ")
    guard fields.count > 1, let pages = Int(fields[1]) else { return 0 }
    return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
}
