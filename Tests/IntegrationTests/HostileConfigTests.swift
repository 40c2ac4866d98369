import Foundation
import Testing
import TocsinTesting

/// Hostile config files and field values against the real `tocsin check` and daemon.
@Suite("Hostile config files")
struct HostileConfigTests {
    @Test("regression: a FIFO as sound file: check exits 1 at once with file:line:col at the value", .timeLimit(.minutes(1)))
    func fifoSoundFile() async throws {
        let dir = TemporaryDirectory()
        let fifo = dir.path + "/alarm.fifo"
        #expect(mkfifo(fifo, 0o600) == 0)
        let path = try dir.write("c.toml", "[backend.a]\ntype = \"sound\"\nfile = \"\(fifo)\"\nplayer = [\"/bin/true\", \"{file}\"]\n")
        let out = try await TestProcess.run(Products.executable("tocsin"), ["check", path], timeout: .seconds(20))
        #expect(out.status == .exited(1))
        #expect(out.stderrText.hasPrefix("\(path):3:8: error: sound file '\(fifo)' is not a regular file\n"), "\(out.stderrText)")
    }

    @Test("regression: check of 400,000 unknown keys prints the first 100 and counts the rest", .timeLimit(.minutes(3)))
    func manyDiagnostics() async throws {
        let dir = TemporaryDirectory()
        var text = "[daemon]\n"
        for i in 0..<400_000 { text += "unknown_key_\(i) = 1\n" }
        let path = try dir.write("c.toml", text)
        let out = try await TestProcess.run(Products.executable("tocsin"), ["check", path], timeout: .seconds(150))
        #expect(out.status == .exited(1))
        let lines = out.stderrText.split(separator: "\n").filter { !$0.hasPrefix("checking ") }
        let headers = lines.filter { $0.hasPrefix("\(path):") }
        #expect(headers.count == 100, "\(headers.count) diagnostics printed")
        #expect(headers.first == "\(path):2:1: error: unknown key 'unknown_key_0' in [daemon]")
        #expect(headers.last == "\(path):101:1: error: unknown key 'unknown_key_99' in [daemon]")
        #expect(lines.last == "and 399900 more errors")
        #expect(lines.count == 100 * 3 + 1)
    }

    struct CalendarRow: Sendable, CustomTestStringConvertible {
        var components: Int
        var accepted: Bool
        var testDescription: String { "\(components) components" }
        var spec: String { "*-*-* 00:00:" + Array(repeating: "0", count: components).joined(separator: ",") }
    }

    static let calendarRows = [CalendarRow(components: 240, accepted: true), CalendarRow(components: 241, accepted: false)]

    @Test("regression: on_calendar takes 240 components in a field, as documented; 241 are refused naming the field (config)",
          arguments: calendarRows)
    func calendarComponentsInConfig(_ row: CalendarRow) async throws {
        let dir = TemporaryDirectory()
        let path = try dir.write("c.toml", "[backend.log]\ntype = \"log\"\n[[notification]]\ntitle = \"t\"\non_calendar = \"\(row.spec)\"\n")
        let out = try await TestProcess.run(Products.executable("tocsin"), ["check", path])
        #expect(out.status == .exited(row.accepted ? 0 : 1), "row \(row.components): \(out.stderrText)")
        if !row.accepted {
            #expect(out.stderrText.contains("\(path):5:"), "row \(row.components): \(out.stderrText)")
            #expect(out.stderrText.contains("error: invalid 'on_calendar': too many components (at most 240 in one field)"),
                    "row \(row.components): \(out.stderrText)")
        }
    }

    @Test("regression: on_calendar takes 240 components in a field; 241 are refused naming the field (D-Bus Schedule)")
    func calendarComponentsOverDBus() async throws {
        try await withGateway { g in
            for row in Self.calendarRows {
                let out = try await g.gdbus("Schedule", "{'title': <'t'>, 'on_calendar': <'\(row.spec)'>}")
                #expect(out.status == .exited(row.accepted ? 0 : 1), "row \(row.components): \(out.stderrText)")
                if !row.accepted {
                    #expect(out.stderrText.contains("invalid 'on_calendar': too many components (at most 240 in one field)"),
                            "row \(row.components): \(out.stderrText)")
                }
            }
        }
    }
}
