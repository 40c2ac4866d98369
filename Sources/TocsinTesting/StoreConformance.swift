import Synchronization
import TocsinConfig
public import TocsinCore
public import TocsinTime
import TocsinModel

/// What one conformance case found wrong, as sentences naming the operation and the values.
///
/// Collected rather than asserted so the cases live in this library, which does not link the
/// test framework: a suite in any package runs them and reports each finding with its store.
public final class ConformanceFindings: Sendable {
    private let list = Mutex<[String]>([])
    public init() {}

    public var all: [String] { list.withLock { $0 } }

    public func expect(_ condition: Bool, _ what: @autoclosure () -> String) {
        if !condition { let m = what(); list.withLock { $0.append(m) } }
    }

    public func equal<T: Equatable>(_ actual: T, _ expected: T, _ what: String) {
        expect(actual == expected, "\(what): got \(actual), expected \(expected)")
    }
}

/// One case of the `NotificationStore` contract, run against a fresh, empty store.
public struct StoreConformanceCase: Sendable, CustomStringConvertible {
    public let name: String
    public let run: @Sendable (any NotificationStore, ConformanceFindings) async throws -> Void
    public var description: String { name }
    public init(_ name: String, _ run: @escaping @Sendable (any NotificationStore, ConformanceFindings) async throws -> Void) {
        self.name = name; self.run = run
    }
}

/// A case that also needs the store full (`StoreConformance.faultCases`): `fill` is given by the
/// suite that runs it, since only it knows how to fill each store.
public struct StoreFaultCase: Sendable, CustomStringConvertible {
    public let name: String
    public let run: @Sendable (any NotificationStore, _ fill: @Sendable () async throws -> Void, ConformanceFindings) async throws -> Void
    public var description: String { name }
    public init(_ name: String,
                _ run: @escaping @Sendable (any NotificationStore, _ fill: @Sendable () async throws -> Void, ConformanceFindings) async throws -> Void) {
        self.name = name; self.run = run
    }
}

/// The cases every `NotificationStore` must pass: `SQLiteStore` is the reference, `InMemoryStore`
/// the double the engine's unit tests run on, so a case that holds for one must hold for the other.
public enum StoreConformance: Sendable {
    public static let cases: [StoreConformanceCase] = rowCases + historyCases + batchCases

    /// 2026-03-02T09:00:00Z, as the engine's tests use.
    public static let t0 = Instant(seconds: 1_772_442_000)

    /// A notification that sets every stored field, so a round trip that drops one shows.
    public static func sample(_ key: String, title: String = "Tea", trigger: Trigger? = nil) -> Notification {
        Notification(key: key, title: title, body: "Brew it", trigger: trigger ?? .at(t0 + .seconds(60)), backends: ["log", "exec"],
                     urgency: .critical, icon: "dialog-information", category: "im", sound: "bell",
                     actions: [NotificationAction(id: "ok", label: "OK"), NotificationAction(id: "later", label: "Later")],
                     userInfo: ["mail": "42", "thread": "é"], missed: .skip, maxLate: .seconds(30), timezone: "UTC")
    }

    static func rows(_ store: any NotificationStore) async throws -> [String: RestoredRow] {
        try await store.load().rows.reduce(into: [:]) { $0[$1.key] = $1 }
    }

    static func commit(_ store: any NotificationStore, _ ops: [StoreOp], reading: [String] = []) async throws -> [String: Notification] {
        try await store.commit(ops, reading: reading)
    }

    static let rowCases: [StoreConformanceCase] = [
        StoreConformanceCase("upsert then read returns every field, for each trigger kind") { store, f in
            let triggers: [Trigger] = [
                .at(t0 + .seconds(60)),
                .every(period: .seconds(300), starting: t0, count: 5, until: t0 + .hours(2)),
                .every(period: .seconds(300), starting: t0, count: nil, until: nil),
                .remindBefore(event: t0 + .hours(1), offsets: [.seconds(600), .seconds(60)]),
            ]
            let notes = triggers.enumerated().map { sample("k\($0.offset)", trigger: $0.element) }
            let read = try await commit(store, notes.map { .upsert(StoredNotification(notification: $0)) }, reading: notes.map(\.key) + ["absent"])
            for n in notes { f.equal(read[n.key], n, "commit(reading:) of \(n.key)") }
            f.equal(read["absent"], nil, "commit(reading:) of a key never stored")
            let again = try await store.notifications(notes.map(\.key))
            for n in notes { f.equal(again[n.key], n, "notifications() of \(n.key)") }
        },
        StoreConformanceCase("load returns each row's schedule state as stored") { store, f in
            let last = Occurrence(instant: t0, number: 3, offset: .seconds(60))
            let pending = PendingDelivery(occurrence: last, due: t0, remaining: ["exec"])
            let stored = [
                StoredNotification(notification: sample("a")),
                StoredNotification(notification: sample("b"), last: last, alert: .ringing(since: t0, rings: 2), pending: pending),
                StoredNotification(notification: sample("c"), alert: .snoozed(until: t0 + .seconds(90))),
                StoredNotification(notification: sample("d"), alert: .unanswered(rings: 4), cancelled: true),
                StoredNotification(notification: sample("e"), base: t0 - .seconds(5)),
                StoredNotification(notification: sample("f", trigger: .every(period: .seconds(300), starting: t0, count: 5, until: nil)),
                                   base: t0 + .seconds(7)),
            ]
            _ = try await commit(store, stored.map { .upsert($0) })
            let loaded = try await rows(store)
            for s in stored { f.equal(loaded[s.notification.key], RestoredRow(s), "loaded row \(s.notification.key)") }
            f.equal(loaded.count, stored.count, "rows loaded")
        },
        StoreConformanceCase("a second upsert of a key replaces the row") { store, f in
            _ = try await commit(store, [.upsert(StoredNotification(notification: sample("k", title: "one")))])
            let read = try await commit(store, [.upsert(StoredNotification(notification: sample("k", title: "two")))], reading: ["k"])
            f.equal(read["k"]?.title, "two", "title after the second upsert")
            f.equal(try await rows(store).count, 1, "rows after two upserts of one key")
        },
        StoreConformanceCase("delete removes the row and keeps its user_info only when asked and not empty") { store, f in
            var bare = sample("bare")
            bare.userInfo = [:]
            _ = try await commit(store, [sample("kept"), sample("dropped"), bare].map { .upsert(StoredNotification(notification: $0)) })
            _ = try await commit(store, [.delete(key: "kept", keepUserInfo: true), .delete(key: "dropped", keepUserInfo: false),
                                         .delete(key: "bare", keepUserInfo: true), .delete(key: "never", keepUserInfo: true)])
            f.equal(try await rows(store).count, 0, "rows after deleting all")
            f.equal(try await store.notifications(["kept"]).count, 0, "notifications() of a deleted key")
            f.equal(try await store.userInfo("kept"), ["mail": "42", "thread": "é"], "userInfo of a deleted row kept")
            f.equal(try await store.userInfo("dropped"), nil, "userInfo of a deleted row not kept")
            f.equal(try await store.userInfo("bare"), nil, "userInfo of a deleted row that had none")
            f.equal(try await store.userInfo("never"), nil, "userInfo of a key never stored")
        },
        StoreConformanceCase("markCancelled, progress, alert and pending change only their fields") { store, f in
            let occ = Occurrence(instant: t0 + .seconds(60), number: 1)
            let pending = PendingDelivery(occurrence: occ, due: occ.instant, remaining: ["log"])
            let base = StoredNotification(notification: sample("p"), last: nil, alert: .idle, pending: nil)
            var cancelled = base
            cancelled.notification.key = "c"
            cancelled.alert = .ringing(since: t0, rings: 1)
            cancelled.pending = pending
            cancelled.last = occ
            _ = try await commit(store, [.upsert(base), .upsert(cancelled)])
            _ = try await commit(store, [.progress(key: "p", last: occ, alert: .ringing(since: t0, rings: 1), pending: pending),
                                         .markCancelled(key: "c")])
            var loaded = try await rows(store)
            f.equal(loaded["p"]?.last, occ, "last after progress")
            f.equal(loaded["p"]?.alert, .ringing(since: t0, rings: 1), "alert after progress")
            f.equal(loaded["p"]?.pending, pending, "pending after progress")
            f.equal(loaded["c"]?.cancelled, true, "cancelled after markCancelled")
            f.equal(loaded["c"]?.alert, .idle, "alert after markCancelled")
            f.equal(loaded["c"]?.pending, nil, "pending after markCancelled")
            f.equal(loaded["c"]?.last, occ, "last after markCancelled")
            _ = try await commit(store, [.alert(key: "p", .snoozed(until: t0 + .seconds(120))), .pending(key: "p", nil)])
            loaded = try await rows(store)
            f.equal(loaded["p"]?.alert, .snoozed(until: t0 + .seconds(120)), "alert after alert op")
            f.equal(loaded["p"]?.pending, nil, "pending after pending(nil)")
            f.equal(loaded["p"]?.last, occ, "last after alert and pending ops")
        },
        StoreConformanceCase("updates of a key with no row create nothing") { store, f in
            _ = try await commit(store, [.progress(key: "x", last: nil, alert: .idle, pending: nil), .alert(key: "x", .idle),
                                         .pending(key: "x", nil), .markCancelled(key: "x"), .delete(key: "x", keepUserInfo: false)])
            f.equal(try await rows(store).count, 0, "rows after updating a missing key")
        },
        StoreConformanceCase("keys(after:limit:) pages in the order of UTF-8 bytes") { store, f in
            // Byte order, not Swift's String order: "Z" < "a" < "z" < "ä" < "é", and the decomposed
            // "e\u{301}" (65 CC 81) sorts before "f" while the precomposed "é" (C3 A9) sorts last.
            let keys = ["é", "a", "Z", "ä", "z", "f", "e\u{301}", "a-1"]
            _ = try await commit(store, keys.map { .upsert(StoredNotification(notification: sample($0))) })
            let expected = keys.sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }
            var walked: [String] = []
            var after = ""
            while true {
                let page = try await store.keys(after: after, limit: 3)
                f.expect(page.count <= 3, "a page of \(page.count) keys for limit 3")
                guard let lastKey = page.last, walked.count <= keys.count else { break }
                walked += page
                after = lastKey
            }
            f.equal(walked.map { Array($0.utf8) }, expected.map { Array($0.utf8) }, "keys walked 3 at a time")
            f.equal(try await store.keys(after: "", limit: 0), [], "keys with limit 0")
            f.equal(try await store.keys(after: "zz", limit: 10), ["ä", "é"], "keys after zz")
        },
        StoreConformanceCase("canonically equivalent keys are distinct rows") { store, f in
            // The store compares keys as bytes (SQLite's BINARY collation); Swift's String == does not.
            let composed = "caf\u{E9}", decomposed = "cafe\u{301}"
            let read = try await commit(store, [.upsert(StoredNotification(notification: sample(composed, title: "one"))),
                                                .upsert(StoredNotification(notification: sample(decomposed, title: "two")))],
                                        reading: [composed])
            f.equal(read[composed]?.title, "one", "title of the precomposed key")
            f.equal(try await store.keys(after: "", limit: 10).count, 2, "keys stored")
            f.equal(try await store.load().rows.count, 2, "rows loaded")
        },
        StoreConformanceCase("load(chunkSize:) gives chunks of at most chunkSize, the total on the first") { store, f in
            for await chunk in store.load(chunkSize: 2) {
                f.equal(try chunk.get().totalRows, 0, "totalRows of an empty store's first chunk")
                break
            }
            let keys = (0..<7).map { "row-\($0)" }
            _ = try await commit(store, keys.map { .upsert(StoredNotification(notification: sample($0))) })
            var chunks: [LoadedState] = []
            for await chunk in store.load(chunkSize: 2) { chunks.append(try chunk.get()) }
            f.equal(chunks.first?.totalRows, 7, "totalRows on the first chunk")
            f.expect(chunks.allSatisfy { $0.rows.count <= 2 }, "chunk sizes \(chunks.map(\.rows.count)) over 2")
            f.equal(chunks.flatMap(\.rows).map(\.key).sorted(), keys, "keys of all chunks")
            f.equal(chunks.flatMap(\.problems), [], "problems")
        },
    ]
}
