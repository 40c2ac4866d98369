import Foundation
import Testing
import TocsinConfig

/// The README's configuration reference is checked against the schema, so it cannot drift.
@Suite("README configuration reference")
struct ReadmeReferenceTests {
    static let readme: String = {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        return (try? String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)) ?? ""
    }()

    /// The first column of the table under `heading`, in order.
    static func keys(under heading: String) -> [String] {
        guard let start = readme.range(of: heading) else { return [] }
        var keys: [String] = []
        var inTable = false
        for line in readme[start.upperBound...].split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("| ---") { inTable = true; continue }
            if inTable {
                guard line.hasPrefix("| `") else { break }
                let cell = line.dropFirst(3).prefix { $0 != "`" }
                keys.append(String(cell))
            }
        }
        return keys
    }

    @Test("[[notification]] keys match the schema")
    func notificationKeys() {
        #expect(Self.keys(under: "### `[[notification]]`") == NotificationFields.all.map(\.name))
    }

    @Test("[daemon] keys match the schema")
    func daemonKeys() {
        #expect(Self.keys(under: "### `[daemon]`") == DaemonSettings.keys.map(\.name))
    }
}
