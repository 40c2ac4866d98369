import Foundation
import Testing
import TocsinConfig
import TocsinModel

/// The configuration reference (docs/CONFIG.md) is checked against the schema, and every TOML
/// example in the README and the reference docs is loaded, so the documents cannot drift.
@Suite("Configuration reference docs")
struct ReadmeReferenceTests {
    /// The documents whose ```toml blocks must load; the README and CONFIG.md open with the same
    /// example, which shows a TOML 1.1 feature.
    static let documents = ["README.md", "docs/CONFIG.md", "docs/DBUS-API.md"]

    static func text(_ document: String) -> String {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        return (try? String(contentsOf: root.appendingPathComponent(document), encoding: .utf8)) ?? ""
    }

    static let configReference = text("docs/CONFIG.md")

    /// The first column of the table under `heading` in docs/CONFIG.md, in order.
    static func keys(under heading: String) -> [String] {
        guard let start = configReference.range(of: heading) else { return [] }
        var keys: [String] = []
        var inTable = false
        for line in configReference[start.upperBound...].split(separator: "\n", omittingEmptySubsequences: false) {
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

    /// The contents of every ```toml block of `document`, in order.
    static func tomlBlocks(_ document: String) -> [String] {
        var blocks: [String] = []
        var current: [Substring]?
        for line in text(document).split(separator: "\n", omittingEmptySubsequences: false) {
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

    @Test("every TOML example loads as TOML 1.1", arguments: documents)
    func tomlExamplesLoad(document: String) {
        let blocks = Self.tomlBlocks(document)
        #expect(!blocks.isEmpty, "\(document) has no ```toml block")
        for (i, block) in blocks.enumerated() {
            if case .failure(let e) = ConfigLoader.load(bytes: Array(block.utf8), file: "\(document) block \(i + 1)") {
                Issue.record("\(document) ```toml block \(i + 1) does not load:\n\(e.rendered)")
            }
        }
    }

    @Test("the first TOML example of the README and of CONFIG.md needs TOML 1.1", arguments: ["README.md", "docs/CONFIG.md"])
    func firstExampleNeedsTOML11(document: String) {
        // The multi-line `actions` table shows TOML 1.1; 1.0 mode names the feature.
        if let first = Self.tomlBlocks(document).first,
           case .failure(let e) = ConfigLoader.load(bytes: Array(first.utf8), file: document, tomlVersion: .v1_0) {
            #expect(e.diagnostics.first?.message.contains("only in TOML 1.1") == true, "\(document): \(e.rendered)")
        } else {
            Issue.record("\(document)'s first TOML example loads as TOML 1.0; it should show a TOML 1.1 feature")
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
