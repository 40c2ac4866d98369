import Testing
// Testable for one thing only: `fill` reaches the SQLite store's connection to cap its size.
@testable import TocsinCore
import TocsinTesting
import TocsinSystem

/// The stores the engine runs on: the SQLite one (the reference) on a real file, and the
/// in-memory double the other unit tests use.
enum StoreKind: String, CaseIterable, Sendable, CustomStringConvertible {
    case sqlite, memory
    var description: String { rawValue }
}

@Suite("Store conformance")
struct StoreConformanceTests {
    @Test("every NotificationStore passes the same cases", arguments: StoreKind.allCases, StoreConformance.cases)
    func conformance(_ kind: StoreKind, _ c: StoreConformanceCase) async throws {
        let dir = TemporaryDirectory()
        let store = try Self.make(kind, dir)
        let findings = ConformanceFindings()
        try await withTimeout(.seconds(30), "case \"\(c.name)\" on the \(kind) store") { try await c.run(store, findings) }
        await store.close()
        for f in findings.all { Issue.record("\(kind), \(c.name): \(f)") }
        #expect(findings.all.isEmpty, "\(kind) store, case \"\(c.name)\"")
    }

    @Test("every NotificationStore fails a batch as a whole on a full disk", arguments: StoreKind.allCases, StoreConformance.faultCases)
    func faults(_ kind: StoreKind, _ c: StoreFaultCase) async throws {
        let dir = TemporaryDirectory()
        let store = try Self.make(kind, dir)
        let findings = ConformanceFindings()
        let fill: @Sendable () async throws -> Void = {
            switch store {
            case let sqlite as SQLiteStore:
                // SQLite caps the file at its current size (it never sets the cap below it), so a
                // transaction that needs another page fails with SQLITE_FULL and rolls back.
                try await sqlite.worker.run { s throws(StoreError) in try s.db.exec("PRAGMA max_page_count = 1") }
            case let memory as InMemoryStore: memory.fill()
            default: Issue.record("no way to fill a \(type(of: store))")
            }
        }
        try await withTimeout(.seconds(30), "case \"\(c.name)\" on the \(kind) store") { try await c.run(store, fill, findings) }
        await store.close()
        for f in findings.all { Issue.record("\(kind), \(c.name): \(f)") }
        #expect(findings.all.isEmpty, "\(kind) store, case \"\(c.name)\"")
    }

    static func make(_ kind: StoreKind, _ dir: TemporaryDirectory) throws -> any NotificationStore {
        switch kind {
        case .sqlite: try SQLiteStore(directory: dir.path + "/state")
        case .memory: InMemoryStore()
        }
    }
}
