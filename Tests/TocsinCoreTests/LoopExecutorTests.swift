import Foundation
import Synchronization
import Testing
import TocsinCore
import TocsinTesting

/// The executor loop's machinery without the runtime hooks: this process already runs on
/// libdispatch's executor (swift-testing started it), so each test drives its own `ExecutorLoop`
/// on a thread of its own. The installed hooks are proven by `IdleWakeupTests` on the real daemon.
@Suite("Executor loop")
struct LoopExecutorTests {
    /// Polls `condition` (a measurement of what the loop did, not synchronisation with it).
    func eventually(within seconds: Double = 5, _ condition: () -> Bool) async -> Bool {
        let end = Date().addingTimeInterval(seconds)
        while Date() < end {
            if condition() { return true }
            try? await Task.sleep(for: .milliseconds(5))
        }
        return condition()
    }

    @Test("enqueued jobs run on the loop thread, in the order they were enqueued")
    func fifo() async {
        let r = LoopThread()
        defer { r.stop() }
        let log = Mutex<[(Int, Bool)]>([])
        for i in 0..<200 {
            r.loop.enqueue { log.withLock { $0.append((i, r.isCurrent())) } }
        }
        #expect(await eventually { log.withLock { $0.count } == 200 })
        let runs = log.withLock { $0 }
        #expect(runs.map(\.0) == Array(0..<200))
        #expect(runs.allSatisfy { $0.1 })
    }

    @Test("jobs enqueued from many threads at once all run")
    func manyThreads() async {
        let r = LoopThread()
        defer { r.stop() }
        let count = Mutex(0)
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            for _ in 0..<500 { r.loop.enqueue { count.withLock { $0 += 1 } } }
        }
        #expect(await eventually { count.withLock { $0 } == 4000 })
    }

    @Test("delayed jobs run in deadline order, equal deadlines in enqueue order, none early")
    func deadlines() async {
        let r = LoopThread()
        defer { r.stop() }
        let start = ExecutorLoop.now()
        let ms: Int64 = 1_000_000
        let plan: [(String, Int64)] = [("300", start + 300 * ms), ("100a", start + 100 * ms), ("200", start + 200 * ms),
                                       ("100b", start + 100 * ms), ("past", start - 1000 * ms)]
        let log = Mutex<[(String, Int64, Int64)]>([])
        for (label, deadline) in plan {
            r.loop.enqueue(at: deadline) { log.withLock { $0.append((label, deadline, ExecutorLoop.now())) } }
        }
        #expect(await eventually { log.withLock { $0.count } == plan.count })
        let runs = log.withLock { $0 }
        #expect(runs.map(\.0) == ["past", "100a", "100b", "200", "300"])
        for (label, deadline, ranAt) in runs {
            #expect(ranAt >= deadline, "\(label) ran \(deadline - ranAt) ns early")
        }
        #expect(r.loop.delayedCount == 0)
    }

    @Test("an earlier deadline enqueued after a later one re-arms the timer")
    func rearm() async {
        let r = LoopThread()
        defer { r.stop() }
        let ran = Mutex<[String]>([])
        let now = ExecutorLoop.now()
        r.loop.enqueue(at: now + 3_600 * 1_000_000_000) { ran.withLock { $0.append("hour") } }
        r.loop.enqueue(at: now + 50_000_000) { ran.withLock { $0.append("50ms") } }
        #expect(await eventually(within: 2) { ran.withLock { $0 } == ["50ms"] })
        #expect(r.loop.delayedCount == 1)
    }

    @Test("cancelling a task that sleeps on the loop wakes it at once, back on the loop")
    func cancelSleep() async throws {
        let r = LoopThread()
        defer { r.stop() }
        let outcome = Mutex<(cancelled: Bool, onLoop: Bool)?>(nil)
        let started = ExecutorLoop.now()
        let sleeper = Task(executorPreference: r.loop.executor) {
            var cancelled = false
            do { try await Task.sleep(for: .seconds(60)) } catch is CancellationError { cancelled = true }
            let onLoop = r.isCurrent()
            outcome.withLock { $0 = (cancelled, onLoop) }
        }
        #expect(await eventually(within: 5) { r.loop.delayedCount == 1 },
                "Task.sleep on the loop's executor waits in the loop's timer heap")
        sleeper.cancel()
        #expect(await eventually(within: 5) { outcome.withLock { $0 != nil } })
        let o = outcome.withLock { $0 }
        #expect(o?.cancelled == true)
        #expect(o?.onLoop == true)
        #expect(ExecutorLoop.now() - started < 10 * 1_000_000_000)
    }
}
