import Testing
import TocsinCore
import TocsinTesting

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
        let store: any NotificationStore = switch kind {
        case .sqlite: try SQLiteStore(directory: dir.path + "/state")
        case .memory: InMemoryStore()
        }
        let findings = ConformanceFindings()
        try await withTimeout(.seconds(30), "case \"\(c.name)\" on the \(kind) store") { try await c.run(store, findings) }
        await store.close()
        for f in findings.all { Issue.record("\(kind), \(c.name): \(f)") }
        #expect(findings.all.isEmpty, "\(kind) store, case \"\(c.name)\"")
    }
}
