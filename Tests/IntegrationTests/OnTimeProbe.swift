import Foundation
import Testing
import TocsinTesting

/// Times every `Fired` of one repeating notification against its due, through a subscriber we
/// did not write (`contrib/clients/watch-fired.py`, dbus-python), while a test does something
/// hostile to the daemon: the promise is that a firing due every second keeps coming within
/// 50 ms of due whatever a client or a config file does.
final class OnTimeProbe: Sendable {
    /// One `Fired` as the subscriber saw it; times in unix microseconds.
    struct Firing: Sendable, CustomStringConvertible {
        var occurrence: Int
        var due: Int
        var received: Int
        var late: Int { received - due }
        var description: String { "#\(occurrence) \(late) us late" }
    }

    /// `[[notification]]` due every second, delivered as `Fired` by the `events` backend.
    static let tick = "[[notification]]\nkey = \"tick\"\ntitle = \"Tick\"\nevery = \"1s\"\nbackends = [\"events\"]\n"
    static let config = GatewayFixture.defaultConfig + "\n\n" + tick

    let watcher: TestProcess
    let key: String

    private init(watcher: TestProcess, key: String) { self.watcher = watcher; self.key = key }

    /// Subscribes and waits for two firings, so the schedule is running before the test begins.
    static func start(_ g: GatewayFixture, key: String = "tick") async throws -> OnTimeProbe {
        let watcher = try TestProcess("/usr/bin/python3", [GatewayFixture.repositoryRoot + "/contrib/clients/watch-fired.py",
                                                           "--address", g.bus.address])
        try await watcher.waitForOutput(containing: "\"ready\"", timeout: .seconds(20))
        let probe = OnTimeProbe(watcher: watcher, key: key)
        try await probe.waitForFiring { _ in true }
        return probe
    }

    func firings() -> [Firing] {
        watcher.output.value.stdoutText.split(separator: "\n").compactMap { Self.parse($0, key: key) }
    }

    private static func parse(_ line: Substring, key: String) -> Firing? {
        guard line.contains("\"Fired\""),
              let event = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
              let args = event["args"] as? [Any], args.first as? String == key,
              let info = args.last as? [String: Any], let due = info["due"] as? Int,
              let occurrence = info["occurrence"] as? Int, let received = event["received_us"] as? Int else { return nil }
        return Firing(occurrence: occurrence, due: due, received: received)
    }

    /// Waits until a firing satisfying `condition` has been received.
    func waitForFiring(timeout: Duration = .seconds(20), _ condition: @escaping @Sendable (Firing) -> Bool) async throws {
        let key = key
        try await watcher.output.wait("a Fired of '\(key)'", timeout: timeout) { state in
            state.stdoutText.split(separator: "\n").contains { Self.parse($0, key: key).map(condition) ?? false }
        }
    }

    /// Runs `body`, then returns every firing due from its start to two seconds after it ended
    /// (waiting for the first one due later, so none of them can still be on its way). Two, so
    /// that a body faster than the probe's one-second period still spans two firings: with one,
    /// a quick reload measured a single firing now and then.
    func during<T: Sendable>(_ body: () async throws -> T) async throws -> (result: T, firings: [Firing]) {
        let start = Self.nowMicroseconds()
        let result = try await body()
        let end = Self.nowMicroseconds() + 2_000_000
        try await waitForFiring(timeout: .seconds(60)) { $0.due > end }
        return (result, firings().filter { $0.due >= start && $0.due <= end })
    }

    /// Expects every firing on time and none skipped; at least `atLeast` of them measured.
    func expectOnTime(_ firings: [Firing], atLeast: Int, _ what: String) {
        let budget = TimingBudget.scaled(50_000)
        print("measured (\(what)): \(firings.count) firings, latest \(firings.map(\.late).max() ?? 0) us after due")
        #expect(firings.count >= atLeast, "\(what): only \(firings.count) firings measured: \(firings)")
        let late = firings.filter { $0.late > budget || $0.late < 0 }
        #expect(late.isEmpty, "\(what): firings outside 0...\(budget) us of due: \(late)")
        let numbers = firings.map(\.occurrence)
        #expect(numbers == Array((numbers.first ?? 0)..<((numbers.first ?? 0) + numbers.count)),
                "\(what): occurrences skipped or repeated: \(numbers)")
    }

    func stop() async { _ = try? await watcher.kill() }

    static func nowMicroseconds() -> Int { Int(Date().timeIntervalSince1970 * 1_000_000) }
}
