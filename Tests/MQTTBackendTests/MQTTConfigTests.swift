import Foundation
import Logging
import Testing
import TocsinConfig
import TocsinCore
import TocsinMQTTBackend
import TocsinGateway
import TocsinModel

/// One config and the diagnostics it must produce, exactly (`line:column: message`).
struct MQTTConfigRow: Sendable, CustomTestStringConvertible {
    var name: String
    var toml: String
    var expected: [String]
    var testDescription: String { name }
}

/// Loads `toml` and builds its backends with the mqtt factory, as `tocsin check` and start-up do.
private func diagnostics(_ toml: String) -> [String] {
    let loaded: LoadedConfig
    switch ConfigLoader.load(bytes: Array(toml.utf8), file: "c.toml") {
    case .success(let l): loaded = l
    case .failure(let e): return e.diagnostics.map { "\($0.location.line):\($0.location.column): \($0.message)" }
    }
    let quiet = Logger(label: "test") { _ in SwiftLogNoOpLogHandler() }
    switch BackendRegistry([MQTTBackendFactory()]).makeBackends(for: loaded.configuration, file: "c.toml",
                                                                environment: BackendEnvironment(logger: quiet)) {
    case .success: return []
    case .failure(let e): return e.diagnostics.map { "\($0.location.line):\($0.location.column): \($0.message)" }
    }
}

@Suite("MQTT config")
struct MQTTConfigTests {
    static let rows: [MQTTConfigRow] = [
        MQTTConfigRow(name: "a minimal backend and fleet are accepted",
                      toml: "[backend.fleet]\ntype = \"mqtt\"\nurl = \"mqtt://127.0.0.1:1883\"\nclient_id = \"a\"\n[fleet]\nbackend = \"fleet\"\n",
                      expected: []),
        MQTTConfigRow(name: "url is required",
                      toml: "[backend.m]\ntype = \"mqtt\"\n",
                      expected: ["1:1: missing required key 'url' in [backend.m]"]),
        MQTTConfigRow(name: "url scheme",
                      toml: "[backend.m]\ntype = \"mqtt\"\nurl = \"http://x\"\n",
                      expected: ["3:7: 'url' must start with mqtt:// or mqtts://, found 'http://x'"]),
        MQTTConfigRow(name: "url port out of range",
                      toml: "[backend.m]\ntype = \"mqtt\"\nurl = \"mqtt://h:70000\"\n",
                      expected: ["3:7: 'url' has port '70000'; it must be 1-65535"]),
        MQTTConfigRow(name: "url without host",
                      toml: "[backend.m]\ntype = \"mqtt\"\nurl = \"mqtt://:1883\"\n",
                      expected: ["3:7: 'url' must name a host (mqtt://HOST:PORT), found 'mqtt://:1883'"]),
        MQTTConfigRow(name: "mqtts needs a CA file",
                      toml: "[backend.m]\ntype = \"mqtt\"\nurl = \"mqtts://h\"\n",
                      expected: ["3:7: an mqtts:// url needs 'ca_file' (the broker's CA certificate)"]),
        MQTTConfigRow(name: "TLS files need mqtts",
                      toml: "[backend.m]\ntype = \"mqtt\"\nurl = \"mqtt://h\"\nca_file = \"/etc/hostname\"\n",
                      expected: ["4:11: TLS files need an mqtts:// url"]),
        MQTTConfigRow(name: "topic prefix with a wildcard",
                      toml: "[backend.m]\ntype = \"mqtt\"\nurl = \"mqtt://h\"\ntopic_prefix = \"home/#\"\n",
                      expected: ["4:16: 'topic_prefix' must be a non-empty topic without '+', '#' or a trailing '/'"]),
        MQTTConfigRow(name: "password file needs a username",
                      toml: "[backend.m]\ntype = \"mqtt\"\nurl = \"mqtt://h\"\npassword_file = \"/etc/hostname\"\n",
                      expected: ["4:17: 'password_file' needs 'username'"]),
        MQTTConfigRow(name: "unreadable password file",
                      toml: "[backend.m]\ntype = \"mqtt\"\nurl = \"mqtt://h\"\nusername = \"u\"\npassword_file = \"/nonexistent/pw\"\n",
                      expected: ["5:17: cannot read password_file '/nonexistent/pw': No such file or directory"]),
        MQTTConfigRow(name: "keepalive too short",
                      toml: "[backend.m]\ntype = \"mqtt\"\nurl = \"mqtt://h\"\nkeepalive = \"1s\"\n",
                      expected: ["4:13: 'keepalive' is 1s; it must be between 5s and 18h 12min 15s"]),
        MQTTConfigRow(name: "misspelt key gets a suggestion",
                      toml: "[backend.m]\ntype = \"mqtt\"\nurl = \"mqtt://h\"\nclientid = \"a\"\n",
                      expected: ["4:1: unknown key 'clientid' in [backend.m]; did you mean 'client_id'?"]),
        MQTTConfigRow(name: "a bad url leaves the keys after it read and valid",
                      toml: "[backend.o]\ntype = \"mqtt\"\nurl = \"http://host\"\nkeepalive = \"60s\"\ntopic_prefix = \"x\"\nclient_id = \"y\"\n",
                      expected: ["3:7: 'url' must start with mqtt:// or mqtts://, found 'http://host'"]),
        MQTTConfigRow(name: "a bad key after the others leaves them read and valid",
                      toml: "[backend.o]\ntype = \"mqtt\"\nreconnect_max = \"5s\"\ntopic_prefix = \"x\"\nurl = \"mqtt://h\"\nkeepalive = \"1s\"\n",
                      expected: ["6:13: 'keepalive' is 1s; it must be between 5s and 18h 12min 15s"]),
        MQTTConfigRow(name: "every bad key is reported once, at its value",
                      toml: "[backend.o]\ntype = \"mqtt\"\nurl = \"http://host\"\nclient_id = \"a b\"\ntopic_prefix = \"x/\"\nusername = 5\n"
                          + "password_file = \"/nonexistent/pw\"\ncert_file = \"/nonexistent/cert\"\nkeepalive = \"1s\"\nreconnect_max = \"2h\"\n",
                      expected: ["3:7: 'url' must start with mqtt:// or mqtts://, found 'http://host'",
                                 "4:13: 'client_id' must be 1-256 bytes without spaces",
                                 "5:16: 'topic_prefix' must be a non-empty topic without '+', '#' or a trailing '/'",
                                 "6:12: 'username' in [backend.o] must be a string, found integer",
                                 "7:17: cannot read password_file '/nonexistent/pw': No such file or directory",
                                 "8:13: 'cert_file' and 'key_file' go together",
                                 "8:13: cannot read cert_file '/nonexistent/cert': No such file or directory",
                                 "9:13: 'keepalive' is 1s; it must be between 5s and 18h 12min 15s",
                                 "10:17: 'reconnect_max' is 2h; it must be between 1s and 1h"]),
        MQTTConfigRow(name: "the fleet example of docs/CONFIG.md, without its files: both files named",
                      toml: """
                          [backend.fleet]
                          type = "mqtt"
                          url = "mqtts://broker.home.lan"
                          ca_file = "/etc/ssl/certs/home-ca.pem"
                          client_id = "kitchen"
                          username = "tocsin"
                          password_file = "/home/anna/.config/tocsin/mqtt-password"

                          """,
                      expected: ["4:11: cannot read ca_file '/etc/ssl/certs/home-ca.pem': No such file or directory",
                                 "7:17: cannot read password_file '/home/anna/.config/tocsin/mqtt-password': No such file or directory"]),
        MQTTConfigRow(name: "a missing url leaves the others read",
                      toml: "[backend.m]\ntype = \"mqtt\"\nkeepalive = \"30s\"\n",
                      expected: ["1:1: missing required key 'url' in [backend.m]"]),
        MQTTConfigRow(name: "fleet names an unknown backend",
                      toml: "[backend.fleet]\ntype = \"mqtt\"\nurl = \"mqtt://h\"\n[fleet]\nbackend = \"flet\"\n",
                      expected: ["5:11: unknown backend 'flet' in [fleet]; did you mean 'fleet'?"]),
        MQTTConfigRow(name: "fleet names a backend of another type",
                      toml: "[backend.log]\ntype = \"log\"\n[fleet]\nbackend = \"log\"\n",
                      expected: ["4:11: [fleet] backend 'log' is of type 'log'; it must be an mqtt backend"]),
        MQTTConfigRow(name: "fleet without backend",
                      toml: "[fleet]\n",
                      expected: ["1:1: missing required key 'backend' in [fleet]"]),
    ]

    @Test("each config row gives exactly its diagnostics", arguments: rows)
    func row(_ row: MQTTConfigRow) {
        let got = diagnostics(row.toml)
        #expect(got == row.expected, "row '\(row.name)'")
    }

    /// Regression: a FIFO as ca_file was accepted, and mosquitto's TLS set-up opens it blocking;
    /// a FIFO as password_file was refused without a reason. Both now say it is not a regular file.
    @Test("a FIFO as password_file or ca_file is refused at its value, without waiting for a writer",
          .timeLimit(.minutes(1)))
    func fifoFiles() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("mqtt-fifo-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let fifo = dir.appendingPathComponent("f").path
        #expect(mkfifo(fifo, 0o600) == 0)
        #expect(diagnostics("[backend.m]\ntype = \"mqtt\"\nurl = \"mqtt://h\"\nusername = \"u\"\npassword_file = \"\(fifo)\"\n")
                == ["5:17: cannot read password_file '\(fifo)': it is not a regular file"])
        #expect(diagnostics("[backend.m]\ntype = \"mqtt\"\nurl = \"mqtts://h\"\nca_file = \"\(fifo)\"\n")
                == ["4:11: cannot read ca_file '\(fifo)': it is not a regular file"])
    }

    @Test("URLs: default ports, IPv6 brackets", arguments: [
        ("mqtt://127.0.0.1", "127.0.0.1", Int32(1883), false),
        ("mqtts://broker.lan", "broker.lan", 8883, true),
        ("mqtt://[::1]:1884", "::1", 1884, false),
        ("mqtt://h:1/", "h", 1, false),
    ])
    func urls(row: (String, String, Int32, Bool)) throws {
        let p = try MQTTBackendFactory.parseURL(row.0).get()
        #expect(p.host == row.1 && p.port == row.2 && p.tls == row.3, "row \(row.0): \(p)")
    }

    @Test("the configuration reference's mqtt row names every option key")
    func referenceRow() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let reference = try String(contentsOf: root.appendingPathComponent("docs/CONFIG.md"), encoding: .utf8)
        let row = try #require(reference.split(separator: "\n").first { $0.hasPrefix("| `mqtt` |") }, "no mqtt row in docs/CONFIG.md")
        for key in MQTTBackendFactory().optionKeys {
            #expect(row.contains("`\(key)`"), "docs/CONFIG.md's mqtt row lacks `\(key)`")
        }
    }
}
