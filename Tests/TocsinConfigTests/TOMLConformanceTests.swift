import Foundation
import Testing
import TocsinConfig

/// The TOML 1.0.0 cases of toml-test, run in-process through the same tagged-JSON encoder the
/// `toml-test-decoder` executable uses.
@Suite struct TOMLConformanceTests {
    static func files(_ kind: String) -> [URL] {
        let dir = TOMLTestPaths.corpus.appendingPathComponent(kind)
        guard let walker = FileManager.default.enumerator(at: dir, includingPropertiesForKeys: nil) else { return [] }
        var found: [URL] = []
        for case let url as URL in walker where url.pathExtension == "toml" { found.append(url) }
        return found.sorted { $0.path < $1.path }
    }

    static func relative(_ url: URL) -> String {
        String(url.path.dropFirst(TOMLTestPaths.corpus.path.count + 1))
    }

    @Test func allValidAndInvalidCasesOfTOML100() throws {
        let valid = Self.files("valid"), invalid = Self.files("invalid")
        #expect(valid.count == 210, "valid cases found under \(TOMLTestPaths.corpus.path)")
        #expect(invalid.count == 499, "invalid cases found under \(TOMLTestPaths.corpus.path)")

        var failures: [String] = []
        for url in valid {
            let name = Self.relative(url)
            let bytes = [UInt8](try Data(contentsOf: url))
            let expectedURL = url.deletingPathExtension().appendingPathExtension("json")
            let expected = try JSONSerialization.jsonObject(with: Data(contentsOf: expectedURL), options: [.fragmentsAllowed])
            do {
                let table = try TOML.parse(bytes, file: name)
                let json = TOMLTaggedJSON.encode(table)
                let actual = try JSONSerialization.jsonObject(with: Data(json.utf8), options: [.fragmentsAllowed])
                if let d = TOMLTaggedJSONComparison.difference(expected: expected, actual: actual) {
                    failures.append("\(name): wrong value: \(d)")
                }
            } catch {
                failures.append("\(name): rejected: \(error)")
            }
        }
        for url in invalid {
            let name = Self.relative(url)
            let bytes = [UInt8](try Data(contentsOf: url))
            do {
                _ = try TOML.parse(bytes, file: name)
                failures.append("\(name): accepted but must be rejected")
            } catch {
                if error.diagnostics.isEmpty { failures.append("\(name): rejected without a diagnostic") }
            }
        }
        let passed = valid.count + invalid.count - failures.count
        #expect(failures.isEmpty, "\(passed)/\(valid.count + invalid.count) pass; failing:\n\(failures.joined(separator: "\n"))")
        #expect(passed == 709)
    }
}
