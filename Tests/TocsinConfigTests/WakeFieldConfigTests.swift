import Testing
import TocsinConfig
import TocsinModel

/// The `wake` notification field in the config file: a boolean, false when absent.
@Suite("wake field in the config file")
struct WakeFieldConfigTests {
    @Test("wake in the config file", arguments: [
        // (row name, the notification's wake line, the value read, or the expected rendered error)
        ("true is read", "wake = true", .success(true)),
        ("false is read", "wake = false", .success(false)),
        ("absent is false", "", .success(false)),
        ("a string is refused as a type error at its value", "wake = \"yes\"",
         .failure("c.toml:4:8: error: 'wake' in [[notification]] #1 must be a boolean, found string")),
    ] as [(String, String, Expected)])
    func configWake(row: (String, String, Expected)) {
        let toml = "[[notification]]\ntitle = \"Up\"\nafter = \"1h\"\n\(row.1)\n"
        switch (ConfigLoader.load(bytes: Array(toml.utf8), file: "c.toml"), row.2) {
        case (.success(let loaded), .success(let wake)):
            #expect(loaded.configuration.notifications.first?.wake == wake, "row '\(row.0)'")
        case (.failure(let e), .failure(let expected)):
            #expect(e.rendered.hasPrefix(expected), "row '\(row.0)': \(e.rendered)")
        case (.success, .failure):
            Issue.record("row '\(row.0)': accepted")
        case (.failure(let e), .success):
            Issue.record("row '\(row.0)': refused: \(e.rendered)")
        }
    }

    enum Expected: Sendable { case success(Bool), failure(String) }
}
