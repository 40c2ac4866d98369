import Testing
import TocsinConfig
import TocsinModel

/// The `fleet` notification field in the config file: run time only.
@Suite("fleet field in the config file")
struct FleetFieldConfigTests {
    @Test("fleet in the config file", arguments: [
        // (row name, the notification's fleet line, expected rendered error or nil for accepted)
        ("true is refused at its value", "fleet = true", "c.toml:4:9: error: 'fleet = true' is for notifications scheduled at run time"),
        ("false is accepted", "fleet = false", nil),
        ("a string is refused as a type error", "fleet = \"yes\"", "c.toml:4:9: error: 'fleet' in [[notification]] #1 must be a boolean, found string"),
    ] as [(String, String, String?)])
    func configFleet(row: (String, String, String?)) {
        let toml = "[[notification]]\ntitle = \"Tea\"\nafter = \"1h\"\n\(row.1)\n"
        switch ConfigLoader.load(bytes: Array(toml.utf8), file: "c.toml") {
        case .success(let loaded):
            #expect(row.2 == nil, "row '\(row.0)': accepted")
            #expect(loaded.configuration.notifications.first?.fleet == false, "row '\(row.0)'")
        case .failure(let e):
            if let expected = row.2 {
                #expect(e.rendered.hasPrefix(expected), "row '\(row.0)': \(e.rendered)")
            } else {
                Issue.record("row '\(row.0)': refused: \(e.rendered)")
            }
        }
    }
}
