import Foundation
import Testing
import TocsinTesting

/// The process environment as an input surface: a `tocsin` started at its open-files limit. The
/// kernel then refuses a different descriptor at each limit (the executor loop's epoll, eventfd
/// and timerfd, the daemon's signalfd, the config file, the wall-clock timer, the SQLite file),
/// and each must end in an error line and exit status 1, never a trap. Until the loop's
/// descriptors became errors, limits 5 and 6 ended in `Fatal error` and SIGILL.
@Suite("At the open-files limit")
struct ResourceLimitTests {
    struct Row: Sendable, CustomTestStringConvertible {
        var limit: Int
        var arguments: [String]
        var testDescription: String { "ulimit -n \(limit): tocsin \(arguments.first ?? "")" }
    }

    // 3 is below what the dynamic loader itself needs (it fails with 127 before Tocsin runs).
    static let rows: [Row] = (4...10).map { Row(limit: $0, arguments: ["daemon"]) }
        + (4...6).map { Row(limit: $0, arguments: ["list"]) }

    @Test("each refused descriptor is an error line and exit status 1", arguments: rows)
    func limit(_ row: Row) async throws {
        let dir = TemporaryDirectory()
        let config = try dir.write("tocsin.toml", "[backend.log]\ntype = \"log\"\n")
        let arguments = row.arguments == ["daemon"]
            ? ["daemon", "--config", config, "--state-dir", dir.path + "/state"] : row.arguments
        let out = try await TestProcess.run(
            "/bin/sh", ["-c", "ulimit -n \(row.limit) && exec \"$@\"", "sh", Products.executable("tocsin")] + arguments,
            environment: ["DBUS_SESSION_BUS_ADDRESS": "unix:path=\(dir.path)/no-bus"], timeout: .seconds(20))
        let stderr = out.stderrText
        #expect(out.status == .exited(1), "\(row.testDescription): \(String(describing: out.status)), stderr: \(stderr)")
        #expect(!stderr.contains("Fatal error") && !stderr.contains("Backtracing"), "\(row.testDescription) trapped: \(stderr)")
        let said = stderr.split(separator: "\n").contains { $0.hasPrefix("error: ") || $0.contains(": error: ") || $0.hasPrefix("critical: ") }
        #expect(said, "\(row.testDescription): no error line in \(stderr)")
    }
}
