import Foundation
import Testing
import TocsinConfig
import TocsinModel

/// The toml-test corpora, run in-process through the same tagged-JSON encoder the
/// `toml-test-decoder` executable uses: the TOML 1.0.0 cases in 1.0 mode, the TOML 1.1.0 cases
/// in 1.1 mode (the default). Every case is required; a failure names the case.
@Suite struct TOMLConformanceTests {
    static func files(_ corpus: URL, _ kind: String) -> [URL] {
        let dir = corpus.appendingPathComponent(kind)
        guard let walker = FileManager.default.enumerator(at: dir, includingPropertiesForKeys: nil) else { return [] }
        var found: [URL] = []
        for case let url as URL in walker where url.pathExtension == "toml" { found.append(url) }
        return found.sorted { $0.path < $1.path }
    }

    /// The failing cases of one corpus, each named by its path inside the corpus.
    static func failures(corpus: URL, version: TOMLVersion, valid: [URL], invalid: [URL]) throws -> [String] {
        func relative(_ url: URL) -> String { String(url.path.dropFirst(corpus.path.count + 1)) }
        var failures: [String] = []
        for url in valid {
            let name = relative(url)
            let bytes = [UInt8](try Data(contentsOf: url))
            let expectedURL = url.deletingPathExtension().appendingPathExtension("json")
            let expected = try JSONSerialization.jsonObject(with: Data(contentsOf: expectedURL), options: [.fragmentsAllowed])
            do {
                let table = try TOML.parse(bytes, file: name, version: version)
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
            let name = relative(url)
            let bytes = [UInt8](try Data(contentsOf: url))
            do {
                _ = try TOML.parse(bytes, file: name, version: version)
                failures.append("\(name): accepted but must be rejected")
            } catch {
                if error.diagnostics.isEmpty { failures.append("\(name): rejected without a diagnostic") }
            }
        }
        return failures
    }

    @Test func allValidAndInvalidCasesOfTOML100() throws {
        let corpus = TOMLTestPaths.corpus
        let valid = Self.files(corpus, "valid"), invalid = Self.files(corpus, "invalid")
        #expect(valid.count == 210, "valid cases found under \(corpus.path)")
        #expect(invalid.count == 499, "invalid cases found under \(corpus.path)")
        let failures = try Self.failures(corpus: corpus, version: .v1_0, valid: valid, invalid: invalid)
        let passed = valid.count + invalid.count - failures.count
        #expect(failures.isEmpty, "TOML 1.0 mode: \(passed)/\(valid.count + invalid.count) pass; failing:\n\(failures.joined(separator: "\n"))")
        #expect(passed == 709)
    }

    @Test func allValidAndInvalidCasesOfTOML110() throws {
        let corpus = TOMLTestPaths.corpus11
        let valid = Self.files(corpus, "valid"), invalid = Self.files(corpus, "invalid")
        #expect(valid.count == 220, "valid cases found under \(corpus.path)")
        #expect(invalid.count == 492, "invalid cases found under \(corpus.path)")
        let failures = try Self.failures(corpus: corpus, version: .v1_1, valid: valid, invalid: invalid)
        let passed = valid.count + invalid.count - failures.count
        #expect(failures.isEmpty, "TOML 1.1 mode: \(passed)/\(valid.count + invalid.count) pass; failing:\n\(failures.joined(separator: "\n"))")
        #expect(passed == 712)
    }

    /// 1.1 is the default: `TOML.parse` without a version reads the 1.1 corpus's 1.1-only cases.
    @Test func defaultVersionIsTOML11() throws {
        #expect(TOMLVersion.default == .v1_1)
        let url = TOMLTestPaths.corpus11.appendingPathComponent("valid/inline-table/newline.toml")
        let bytes = [UInt8](try Data(contentsOf: url))
        #expect(throws: Never.self) { _ = try TOML.parse(bytes, file: "newline.toml") }
        #expect(throws: DiagnosticError.self) { _ = try TOML.parse(bytes, file: "newline.toml", version: .v1_0) }
    }

    /// The 1.0 corpus's invalid cases that are valid TOML 1.1: 1.1 mode accepts each, and 1.0
    /// mode rejects it with a diagnostic saying that the feature is TOML 1.1.
    @Test func oneOneOnlyCasesAreNamedIn10Mode() throws {
        let pairs = [
            "inline-table/trailing-comma", "inline-table/linebreak-01", "inline-table/linebreak-02",
            "inline-table/linebreak-03", "inline-table/linebreak-04", "datetime/no-secs",
            "local-datetime/no-secs", "local-time/no-secs", "string/basic-byte-escapes",
        ]
        for name in pairs {
            let url = TOMLTestPaths.corpus.appendingPathComponent("invalid/\(name).toml")
            let bytes = [UInt8](try Data(contentsOf: url))
            var diagnostics: [String] = []
            do { _ = try TOML.parse(bytes, file: name, version: .v1_0) } catch { diagnostics = error.diagnostics.map(\.description) }
            #expect(!diagnostics.isEmpty, "row '\(name)': accepted in 1.0 mode")
            #expect(diagnostics.contains { $0.contains("only in TOML 1.1") }, "row '\(name)': 1.0 mode says \(diagnostics)")
            #expect(throws: Never.self, "row '\(name)': rejected in 1.1 mode") { _ = try TOML.parse(bytes, file: name, version: .v1_1) }
        }
    }
}
