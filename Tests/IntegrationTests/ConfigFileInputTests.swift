import Foundation
import Glibc
import Testing
import TocsinTesting

/// Issue 17's sweep of the config file as an input surface: what `tocsin check` (and so the
/// daemon's start and reload, which read the file the same way) says about files that are not
/// a config at all. Each answers within the test's deadline with one line naming the file.
@Suite("Config file as an input surface")
struct ConfigFileInputTests {
    struct Row: Sendable, CustomTestStringConvertible {
        var name: String
        /// Makes the file in `dir` and returns its path.
        var make: @Sendable (TemporaryDirectory) throws -> String
        /// The first line of stderr after `PATH:`; nil: accepted.
        var expected: String?
        var testDescription: String { name }
    }

    static let rows: [Row] = [
        Row(name: "regression: larger than 16 MiB (was read whole into memory)", make: { dir in
            let path = try dir.write("huge.toml", "")
            guard truncate(path, 17 << 20) == 0 else { throw TestProcessError("truncate failed") }
            return path
        }, expected: "1:1: error: cannot read config file: it is 17825792 bytes; a config file may have at most 16777216"),
        Row(name: "regression: /dev/zero (was read until memory ran out)", make: { _ in "/dev/zero" },
            expected: "1:1: error: cannot read config file: it is not a regular file"),
        Row(name: "regression: a FIFO with no writer (open blocked for ever)", make: { dir in
            let path = dir.path + "/fifo.toml"
            guard mkfifo(path, 0o600) == 0 else { throw TestProcessError("mkfifo failed") }
            return path
        }, expected: "1:1: error: cannot read config file: it is not a regular file"),
        Row(name: "a directory", make: { dir in dir.path }, expected: "1:1: error: cannot read config file: it is a directory"),
        Row(name: "a symlink loop", make: { dir in
            let a = dir.path + "/a.toml", b = dir.path + "/b.toml"
            guard symlink(b, a) == 0, symlink(a, b) == 0 else { throw TestProcessError("symlink failed") }
            return a
        }, expected: "1:1: error: cannot read config file: Too many levels of symbolic links"),
        Row(name: "not UTF-8", make: { dir in
            let path = dir.path + "/latin1.toml"
            let bytes = Array("[[notification]]\ntitle = \"caf".utf8) + [0xE9] + Array("\"\nafter = \"1h\"\n".utf8)
            guard FileManager.default.createFile(atPath: path, contents: Data(bytes)) else { throw TestProcessError("write failed") }
            return path
        }, expected: "2:13: error: invalid UTF-8 byte 0xE9"),
        Row(name: "a NUL byte", make: { dir in try dir.write("nul.toml", "[daemon]\nlog_level = \"info\u{0}\"\n") },
            expected: "2:18: error: control character U+0000 must be escaped in a string"),
        Row(name: "empty", make: { dir in try dir.write("empty.toml", "") }, expected: nil),
    ]

    @Test(arguments: rows)
    func check(_ row: Row) async throws {
        let dir = TemporaryDirectory()
        let path = try row.make(dir)
        let out = try await TestProcess.run(Products.executable("tocsin"), ["check", path], timeout: .seconds(20))
        if let expected = row.expected {
            #expect(out.status == .exited(1), "row '\(row.name)': \(out.status.map { "\($0)" } ?? "still running")")
            let first = out.stderrText.split(separator: "\n").first.map(String.init) ?? ""
            #expect(first == "\(path):\(expected)", "row '\(row.name)': \(first)")
        } else {
            #expect(out.status == .exited(0), "row '\(row.name)': \(out.stderrText)")
        }
    }

    @Test("a TZ that names no zone: the daemon warns, runs in UTC and serves")
    func unknownTZIsWarnedAbout() async throws {
        try await withGateway(environment: ["TZ": "Invalid/Zone"]) { g in
            #expect(g.process.stderr.contains("TZ='Invalid/Zone' is neither a time zone nor a POSIX rule; using UTC"), "\(g.process.stderr)")
            let out = try await g.gdbus("Schedule", "{'key': <'cal'>, 'title': <'x'>, 'on_calendar': <'daily'>}")
            #expect(out.status == .exited(0), "\(out.stderrText)")
            let list = try await g.tocsin("list", "--json")
            #expect(list.stdoutText.contains("*-*-* 00:00:00 UTC"), "\(list.stdoutText)")
        }
    }
}
