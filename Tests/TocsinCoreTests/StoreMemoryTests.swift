import Testing
@testable import TocsinCore
import TocsinSystem
import TocsinTesting
import TocsinTime
import TocsinModel

/// The store thread gives SQLite's page cache and the free heap back once it has been quiet, and
/// only when there is enough to give: a lone call or firing must not cost a second wake-up.
@Suite("The store's memory")
struct StoreMemoryTests {
    struct TimeoutRow: Sendable, CustomTestStringConvertible {
        var name: String
        var quietFor: Duration
        var cacheBytes: Int
        var expected: Int32
        var testDescription: String { name }
    }

    static let timeoutRows: [TimeoutRow] = [
        TimeoutRow(name: "an empty cache: no timeout", quietFor: .milliseconds(250), cacheBytes: 0, expected: -1),
        TimeoutRow(name: "one byte under the threshold: no timeout", quietFor: .milliseconds(250), cacheBytes: (256 << 10) - 1, expected: -1),
        TimeoutRow(name: "at the threshold: the quiet period", quietFor: .milliseconds(250), cacheBytes: 256 << 10, expected: 250),
        TimeoutRow(name: "far over it: the same period", quietFor: .milliseconds(250), cacheBytes: 64 << 20, expected: 250),
        TimeoutRow(name: "seconds and milliseconds add up", quietFor: .milliseconds(2_500), cacheBytes: 1 << 20, expected: 2_500),
        TimeoutRow(name: "under a millisecond rounds down to an immediate release", quietFor: .microseconds(900), cacheBytes: 1 << 20, expected: 0),
    ]

    @Test("the thread sleeps with a timeout only while the page cache holds the threshold", arguments: timeoutRows)
    func timeout(_ row: TimeoutRow) {
        let policy = StoreMemoryPolicy(quietFor: row.quietFor, threshold: 256 << 10)
        #expect(policy.timeout(cacheBytes: row.cacheBytes) == row.expected, "\(row.name)")
    }

    @Test("the daemon's policy: 250 ms of quiet with 256 KiB cached")
    func defaults() {
        let policy = StoreMemoryPolicy()
        #expect(policy.timeout(cacheBytes: 256 << 10) == 250)
        #expect(policy.timeout(cacheBytes: (256 << 10) - 1) == -1)
    }

    /// What keeps a lone call or firing from costing a second wake-up: with 10,000 rows stored and
    /// the cache just emptied, one row's write (a `Schedule`) or progress update (a firing)
    /// touches a few pages, far under the threshold.
    @Test("one call's or one firing's transaction over 10,000 rows stays under the threshold")
    func loneWorkStaysUnder() throws {
        let dir = TemporaryDirectory()
        let store = try StateStore(directory: dir.path, zones: ZoneCache(directory: ZoneInfoDirectory()))
        let rows = try ScheduleLoadTests.rows(10_000)
        try store.transaction { () throws(StoreError) in for r in rows { try store.apply(.upsert(r)) } }
        let threshold = StoreMemoryPolicy().threshold
        #expect(store.db.cacheBytes >= threshold, "the fill cached only \(store.db.cacheBytes) bytes: nothing to show")

        store.db.releaseMemory()
        try store.transaction { () throws(StoreError) in try store.apply(.upsert(rows[4_321])) }
        #expect(store.db.cacheBytes < threshold / 4, "one upsert left \(store.db.cacheBytes) bytes cached")

        store.db.releaseMemory()
        try store.transaction { () throws(StoreError) in
            try store.saveProgress(key: rows[8_765].notification.key, last: Occurrence(instant: t0, number: 1), alert: .idle, pending: nil)
        }
        #expect(store.db.cacheBytes < threshold / 4, "one firing's update left \(store.db.cacheBytes) bytes cached")
    }

    enum Step: Sendable { case jobs, release }

    struct ScheduleRow: Sendable, CustomTestStringConvertible {
        var name: String
        var steps: [Step]
        var cacheBytes: Int
        var expected: Int32
        var testDescription: String { name }
    }

    static let scheduleRows: [ScheduleRow] = [
        ScheduleRow(name: "a thread that has run nothing sleeps without a timeout", steps: [], cacheBytes: 1 << 20, expected: -1),
        ScheduleRow(name: "after jobs that filled the cache: the quiet period", steps: [.jobs], cacheBytes: 1 << 20, expected: 250),
        ScheduleRow(name: "after jobs that left the cache small: no timeout", steps: [.jobs], cacheBytes: 4_096, expected: -1),
        ScheduleRow(name: "after a release that left the cache full: no timeout, not a timer", steps: [.jobs, .release], cacheBytes: 1 << 20, expected: -1),
        ScheduleRow(name: "jobs after a release arm it again", steps: [.jobs, .release, .jobs], cacheBytes: 1 << 20, expected: 250),
    ]

    @Test("the thread releases at most once per spell of work", arguments: scheduleRows)
    func schedule(_ row: ScheduleRow) {
        var schedule = ReleaseSchedule(StoreMemoryPolicy(quietFor: .milliseconds(250), threshold: 256 << 10))
        for step in row.steps {
            switch step {
            case .jobs: schedule.ranJobs()
            case .release: schedule.released()
            }
        }
        #expect(schedule.timeout(cacheBytes: row.cacheBytes) == row.expected, "\(row.name)")
    }

    struct Release: Sendable {
        var before: Int
        var after: Int
    }

    @Test("a quiet store empties its page cache, and every row it holds reads back unchanged")
    func quietRelease() async throws {
        let dir = TemporaryDirectory()
        let releases = WaitableState<[Release]>([])
        let policy = StoreMemoryPolicy(quietFor: .milliseconds(20), threshold: 64 << 10) { before, after in
            releases.update { $0.append(Release(before: before, after: after)) }
        }
        let store = try SQLiteStore(directory: dir.path + "/state", memory: policy)
        let rows = try ScheduleLoadTests.rows(2_000)
        _ = try await store.commit(rows.map { .upsert($0) }, reading: [])

        let seen = try await releases.wait("the store's release after its commit", timeout: .seconds(30)) { !$0.isEmpty }
        let first = try #require(seen.first)
        #expect(first.before >= 64 << 10, "released with \(first.before) bytes cached, under the threshold")
        #expect(first.after < first.before, "the release gave nothing back: \(first.before) bytes cached before, \(first.after) after")

        // Read through the emptied cache: the rows come back from the file as they were written.
        let keys = rows.map(\.notification.key)
        let back = try await store.notifications(keys)
        #expect(back.count == rows.count)
        for row in rows where back[row.notification.key] != row.notification {
            Issue.record("\(row.notification.key) read back as \(String(describing: back[row.notification.key]))")
        }
        await store.close()
    }
}
