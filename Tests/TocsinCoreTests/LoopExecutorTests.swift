import Foundation
import Synchronization
import Testing
import TocsinCore
import TocsinTesting
import TocsinSystem

/// The executor loop's machinery without the runtime hooks: this process already runs on
/// libdispatch's executor (swift-testing started it), so each test drives its own `ExecutorLoop`
/// on a thread of its own. The installed hooks are proven by `IdleWakeupTests` on the real daemon.
@Suite("Executor loop")
struct LoopExecutorTests {
    /// Runs a job on the loop and returns what it read there: every job enqueued before it has
    /// run by then (the loop is first in, first out), so what they did is visible.
    func onLoop<T: Sendable>(_ r: LoopThread, _ read: @escaping @Sendable () -> T) async throws -> T {
        let result = WaitableState<T?>(nil)
        r.loop.enqueue { let v = read(); result.update { $0 = v } }
        return try await result.wait("a job on the loop", timeout: .seconds(5)) { $0 != nil }!
    }

    @Test("enqueued jobs run on the loop thread, in the order they were enqueued")
    func fifo() async throws {
        let r = try LoopThread()
        defer { r.stop() }
        let log = WaitableState<[Run]>([])
        for i in 0..<200 {
            r.loop.enqueue { let current = r.isCurrent(); log.update { $0.append(Run(index: i, onLoop: current)) } }
        }
        let runs = try await log.wait("200 jobs", timeout: .seconds(5)) { $0.count == 200 }
        #expect(runs.map(\.index) == Array(0..<200))
        #expect(runs.allSatisfy { $0.onLoop })
    }

    struct Run: Sendable {
        var index: Int
        var onLoop: Bool
    }

    @Test("jobs enqueued from many threads at once all run")
    func manyThreads() async throws {
        let r = try LoopThread()
        defer { r.stop() }
        let count = WaitableState(0)
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            for _ in 0..<500 { r.loop.enqueue { count.update { $0 += 1 } } }
        }
        try await count.wait("4,000 jobs", timeout: .seconds(5)) { $0 == 4000 }
    }

    @Test("delayed jobs run in deadline order, equal deadlines in enqueue order, none early")
    func deadlines() async throws {
        let r = try LoopThread()
        defer { r.stop() }
        let start = ExecutorLoop.now()
        let ms: Int64 = 1_000_000
        let plan: [(String, Int64)] = [("300", start + 300 * ms), ("100a", start + 100 * ms), ("200", start + 200 * ms),
                                       ("100b", start + 100 * ms), ("past", start - 1000 * ms)]
        let log = WaitableState<[Timed]>([])
        for (label, deadline) in plan {
            r.loop.enqueue(at: deadline) { let ranAt = ExecutorLoop.now(); log.update { $0.append(Timed(label: label, deadline: deadline, ranAt: ranAt)) } }
        }
        let runs = try await log.wait("\(plan.count) delayed jobs", timeout: .seconds(5)) { $0.count == plan.count }
        #expect(runs.map(\.label) == ["past", "100a", "100b", "200", "300"])
        for run in runs {
            #expect(run.ranAt >= run.deadline, "\(run.label) ran \(run.deadline - run.ranAt) ns early")
        }
        let left = try await onLoop(r) { r.loop.delayedCount }
        #expect(left == 0)
    }

    @Test("an earlier deadline enqueued after a later one re-arms the timer")
    func rearm() async throws {
        let r = try LoopThread()
        defer { r.stop() }
        let ran = WaitableState<[String]>([])
        let now = ExecutorLoop.now()
        r.loop.enqueue(at: now + 3_600 * 1_000_000_000) { ran.update { $0.append("hour") } }
        r.loop.enqueue(at: now + 50_000_000) { ran.update { $0.append("50ms") } }
        // Without the re-arm the loop would sleep until the hour's deadline and this times out.
        try await ran.wait("the 50 ms job", timeout: .seconds(2)) { !$0.isEmpty }
        #expect(ran.value == ["50ms"])
        let waiting = try await onLoop(r) { r.loop.delayedCount }
        #expect(waiting == 1)
    }

    struct Timed: Sendable {
        var label: String
        var deadline: Int64
        var ranAt: Int64
    }

    @Test("cancelling a task that sleeps on the loop wakes it at once, back on the loop")
    func cancelSleep() async throws {
        let r = try LoopThread()
        defer { r.stop() }
        let asleep = WaitableState(false)
        let outcome = WaitableState<Outcome?>(nil)
        let sleeper = Task(executorPreference: r.loop.executor) {
            var cancelled = false
            asleep.update { $0 = true }
            do { try await Task.sleep(for: .seconds(60)) } catch is CancellationError { cancelled = true }
            let result = Outcome(cancelled: cancelled, onLoop: r.isCurrent())
            outcome.update { $0 = result }
        }
        try await asleep.wait("the task to start", timeout: .seconds(5)) { $0 }
        // The job that set `asleep` went on into Task.sleep; a job enqueued after it sees the heap.
        let sleeping = try await onLoop(r) { r.loop.delayedCount }
        #expect(sleeping == 1, "Task.sleep on the loop's executor waits in the loop's timer heap")
        // The wait's deadline is the assertion: a sleep the cancel did not wake ends at 60 s.
        // It runs from the cancel alone, and is wide: under AddressSanitizer beside other suites,
        // CI took 15 s from before the loop thread started to the end of this wait.
        sleeper.cancel()
        let o = try await outcome.wait("the cancelled sleep to end", timeout: .seconds(30)) { $0 != nil }
        #expect(o?.cancelled == true)
        #expect(o?.onLoop == true)
    }

    struct Outcome: Sendable {
        var cancelled: Bool
        var onLoop: Bool
    }
}
