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

    /// The contents of every ```toml block, in order.
    static var tomlBlocks: [String] {
        var blocks: [String] = []
        var current: [Substring]?
        for line in readme.split(separator: "\n", omittingEmptySubsequences: false) {
            if current == nil, line == "```toml" {
                current = []
            } else if let lines = current, line == "```" {
                blocks.append(lines.joined(separator: "\n") + "\n")
                current = nil
            } else {
                current?.append(line)
            }
        }
        return blocks
    }

    @Test("the README's TOML examples load as TOML 1.1, and the first needs 1.1")
    func tomlExamplesLoad() {
        let blocks = Self.tomlBlocks
        #expect(!blocks.isEmpty)
        for (i, block) in blocks.enumerated() {
            if case .failure(let e) = ConfigLoader.load(bytes: Array(block.utf8), file: "README block \(i + 1)") {
                Issue.record("README ```toml block \(i + 1) does not load:\n\(e.rendered)")
            }
        }
        // The multi-line `actions` table shows TOML 1.1; 1.0 mode names the feature.
        if let first = blocks.first, case .failure(let e) = ConfigLoader.load(bytes: Array(first.utf8), file: "README", tomlVersion: .v1_0) {
            #expect(e.diagnostics.first?.message.contains("only in TOML 1.1") == true, "\(e.rendered)")
        } else {
            Issue.record("the README's first TOML example loads as TOML 1.0; it should show a TOML 1.1 feature")
        }
    }

    @Test("[quiet] keys match the schema")
    func quietKeys() {
        #expect(Self.keys(under: "### `[quiet]`") == QuietSettings.keys.map(\.name))
    }

    @Test("[daemon] keys match the schema")
    func daemonKeys() {
        #expect(Self.keys(under: "### `[daemon]`") == DaemonSettings.keys.map(\.name))
    }

    @Test("[fleet] keys match the schema")
    func fleetKeys() {
        #expect(Self.keys(under: "### `[fleet]`") == FleetSettings.keys.map(\.name))
    }
}
