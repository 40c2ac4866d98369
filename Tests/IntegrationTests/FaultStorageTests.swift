import Foundation
import Testing
import TocsinTesting

/// The state directory fails under a running daemon: the disk fills up (a small tmpfs) or the
/// file system turns read-only (an ext4 image whose error behaviour is `remount-ro`, given an
/// error through `/sys/fs/ext4/DEV/trigger_fs_error`: what a failing disk does to a real one).
/// Calls that cannot be made durable must be refused with `Storage` and change nothing; reads and
/// firing go on; after a restart everything acknowledged is there and nothing refused is.
/// Needs root (mount); the suite runs as root in CI like the rest of the integration tests.
@Suite("Faults: state storage full, read-only, corrupt", .serialized)
struct FaultStorageTests {
    static let config = """
        [backend.log]
        type = "log"
        format = "json"

        [backend.events]
        type = "dbus-signal"
        """

    /// A private bus and a daemon whose state directory is a 1 MiB tmpfs, both torn down by `t`.
    static func daemonOnSmallTmpfs(_ t: Teardown) async throws -> (PrivateBus, DaemonUnderTest) {
        let bus = try await PrivateBus.start()
        t.add { await bus.stop() }
        let d = try DaemonUnderTest(config: config, environment: bus.environment)
        try FileManager.default.createDirectory(atPath: d.stateDirectory, withIntermediateDirectories: true)
        try await must("mount", "-t", "tmpfs", "-o", "size=1m,mode=0700", "tocsin-full", d.stateDirectory)
        t.add { _ = try? await TestProcess.run("umount", ["-l", d.stateDirectory]) }
        return (bus, d)
    }

    @Test("disk full: refused calls are Storage errors and change nothing; List, Cancel's refusal and firing behave; a restart has every acknowledged call")
    func diskFull() async throws {
        try await withTeardown { t in
            let (bus, d) = try await Self.daemonOnSmallTmpfs(t)

            let first = try d.start(["--bus", bus.address])
            t.add { _ = try? await first.kill() }
            try await first.waitForStderr(containing: "serving the D-Bus API", timeout: .seconds(30))
            let client = StorageClient(bus: bus)
            // Due soon, scheduled while there is room: it must fire although the disk is full by then.
            #expect(try await client.schedule(["soon"], after: "6s").ok == ["soon"])
            let fill = try await client.fill()
            try #require(fill.ok.count > 10 && fill.refused.count >= 5, "\(fill)")
            for r in fill.refusals {
                #expect(r.hasPrefix("io.github.tocsin.Error.Storage: the change could not be saved, nothing was changed"), "\(r)")
                #expect(r.contains("full"), "\(r)")
            }
            print("measured: a 1 MiB state file system took \(fill.ok.count) schedules, then refused \(fill.refused.count) in a row with Storage")

            // Reads go on, and show exactly what was acknowledged.
            let listed = try await client.listKeys()
            #expect(Set(fill.ok).isSubset(of: listed))
            #expect(Set(fill.refused).isDisjoint(with: listed))
            // A cancel that cannot be recorded is refused and leaves the notification pending.
            let cancel = try await client.cancel(fill.ok[0])
            #expect(cancel.hasPrefix("io.github.tocsin.Error.Storage"), "\(cancel)")
            #expect(try await client.listKeys().contains(fill.ok[0]), "a refused cancel removed it from memory")

            // Firing goes on with a full disk.
            try await first.waitForOutput(containing: "\"key\":\"soon\"", timeout: .seconds(30))
            #expect(first.status == nil)

            try await first.kill()
            let second = try d.start(["--bus", bus.address])
            t.add { second.signal(SIGTERM); _ = try? await second.waitForExit(timeout: .seconds(10)) }
            try await second.waitForStderr(containing: "serving the D-Bus API", timeout: .seconds(30))
            let after = try await client.listKeys()
            #expect(Set(fill.ok).isSubset(of: after), "acknowledged but lost: \(Set(fill.ok).subtracting(after).sorted().prefix(10))")
            #expect(Set(fill.refused).isDisjoint(with: after), "refused but present: \(Set(fill.refused).intersection(after).sorted())")
        }
    }

    /// Every method that changes state, on a full disk: each must answer `Storage` (Reload:
    /// `InvalidConfig` carrying the storage message) and leave `List` exactly as it was.
    static let mutations: [(name: String, call: String, error: String)] = [
        ("Schedule a new key", "gw.Schedule(dbus.Dictionary({'key': 'new', 'title': 'n', 'after': '1h'}, signature='sv'))", "io.github.tocsin.Error.Storage"),
        ("Schedule replacing a key", "gw.Schedule(dbus.Dictionary({'key': 'keep', 'title': 'changed', 'after': '2h'}, signature='sv'))", "io.github.tocsin.Error.Storage"),
        ("PostNow", "gw.PostNow(dbus.Dictionary({'key': 'now', 'title': 'now'}, signature='sv'))", "io.github.tocsin.Error.Storage"),
        ("Cancel", "gw.Cancel('keep')", "io.github.tocsin.Error.Storage"),
        ("CancelAll", "gw.CancelAll()", "io.github.tocsin.Error.Storage"),
        ("Snooze", "gw.Snooze('hourly', '10min')", "io.github.tocsin.Error.Storage"),
        ("Acknowledge", "gw.Acknowledge('snoozed')", "io.github.tocsin.Error.Storage"),
        ("Reload with a new entry", "gw.Reload()", "io.github.tocsin.Error.InvalidConfig"),
    ]

    @Test("disk full: every mutating method is refused and leaves List exactly as it was")
    func everyMutationOnFullDisk() async throws {
        try await withTeardown { t in
            let (bus, d) = try await Self.daemonOnSmallTmpfs(t)
            let p = try d.start(["--bus", bus.address])
            t.add { _ = try? await p.kill() }
            try await p.waitForStderr(containing: "serving the D-Bus API", timeout: .seconds(30))
            let client = StorageClient(bus: bus)
            #expect(try await client.schedule(["keep"], after: "1h").ok == ["keep"])
            // Two that fire at once (so they can be snoozed), one of them snoozed before the disk fills.
            _ = try await client.run("""
                for k in ['hourly', 'snoozed']:
                    gw.Schedule(dbus.Dictionary({'key': k, 'title': k, 'every': '1h', 'starting': '+1s'}, signature='sv'))
                """)
            try await p.waitForOutput(containing: "\"key\":\"snoozed\"", timeout: .seconds(20))
            try await p.waitForOutput(containing: "\"key\":\"hourly\"", timeout: .seconds(20))
            _ = try await client.run("gw.Snooze('snoozed', '1h')")
            try d.rewrite(config: Self.config + "\n\n[[notification]]\nkey = \"from-config\"\ntitle = \"c\"\nevery = \"1h\"\n")
            let fill = try await client.fill()
            try #require(fill.refused.count >= 5, "\(fill)")

            let rows = Self.mutations.enumerated().map { "(\($0.offset), lambda: \($0.element.call))" }.joined(separator: ",\n    ")
            let lines = try await client.run("""
                def listing():
                    return sorted(json.dumps({str(k): str(v) for k, v in n.items()}, sort_keys=True) for n in gw.List())
                before = listing()
                for i, call in [
                    \(rows)]:
                    try:
                        call()
                        outcome = 'accepted'
                    except dbus.DBusException as e:
                        outcome = e.get_dbus_name() + ': ' + e.get_dbus_message()[:300]
                    print(json.dumps({'row': i, 'outcome': outcome, 'unchanged': listing() == before}), flush=True)
                """)
            for (i, row) in Self.mutations.enumerated() {
                guard let l = lines.first(where: { $0["row"] as? Int == i }) else {
                    Issue.record("row '\(row.name)': no result")
                    continue
                }
                let outcome = l["outcome"] as? String ?? ""
                #expect(outcome.hasPrefix(row.error), "row '\(row.name)': \(outcome)")
                #expect(outcome.contains("full"), "row '\(row.name)': the error should say the disk is full: \(outcome)")
                #expect(l["unchanged"] as? Bool == true, "row '\(row.name)': List changed although the call was refused")
            }
            #expect(p.status == nil)
        }
    }

    @Test("file system turns read-only: Schedule and Cancel refused naming it, List and firing go on, nothing acknowledged is lost")
    func readOnly() async throws {
        try await withTeardown { t in
            let bus = try await PrivateBus.start()
            t.add { await bus.stop() }
            let d = try DaemonUnderTest(config: Self.config, environment: bus.environment)
            let image = d.dir.path + "/state.ext4"
            try await must("truncate", "-s", "16M", image)
            try await must("mkfs.ext4", "-q", "-F", image)
            try FileManager.default.createDirectory(atPath: d.stateDirectory, withIntermediateDirectories: true)
            try await must("mount", "-o", "loop,errors=remount-ro", image, d.stateDirectory)
            t.add { _ = try? await TestProcess.run("umount", ["-l", d.stateDirectory]) }
            #expect(chmod(d.stateDirectory, 0o700) == 0)
            let source = try await must("findmnt", "-no", "SOURCE", d.stateDirectory).stdoutText
                .trimmingCharacters(in: .whitespacesAndNewlines)
            let device = URL(fileURLWithPath: source).lastPathComponent

            let first = try d.start(["--bus", bus.address])
            t.add { _ = try? await first.kill() }
            try await first.waitForStderr(containing: "serving the D-Bus API", timeout: .seconds(30))
            let client = StorageClient(bus: bus)
            let before = try await client.schedule((0..<20).map { "before-\($0)" }, after: "1h")
            #expect(before.ok.count == 20)
            #expect(try await client.schedule(["tick"], every: "1s").ok == ["tick"])

            try "tocsin fault test\n".write(toFile: "/sys/fs/ext4/\(device)/trigger_fs_error", atomically: false, encoding: .utf8)
            let options = try await must("findmnt", "-no", "OPTIONS", d.stateDirectory).stdoutText
            try #require(options.contains("emergency_ro") || options.hasPrefix("ro"), "the file system did not turn read-only: \(options)")

            let during = try await client.schedule((0..<5).map { "during-\($0)" }, after: "1h")
            #expect(during.ok.isEmpty, "acknowledged on a read-only file system: \(during.ok)")
            for r in during.refusals {
                #expect(r.hasPrefix("io.github.tocsin.Error.Storage") && r.contains("the state directory cannot be written: Read-only file system"), "\(r)")
            }
            let cancel = try await client.cancel("before-0")
            #expect(cancel.hasPrefix("io.github.tocsin.Error.Storage"), "\(cancel)")
            let listed = try await client.listKeys()
            #expect(Set(before.ok + ["tick"]).isSubset(of: listed))
            #expect(listed.isDisjoint(with: during.refused))
            // The repeating one keeps firing: two more firings after the fault.
            let needle = "\"key\":\"tick\""
            let seen = first.stdout.components(separatedBy: needle).count
            _ = try await first.output.wait("two more firings of 'tick'", timeout: .seconds(20)) {
                $0.stdoutText.components(separatedBy: needle).count >= seen + 2
            }

            try await first.kill()
            try await must("umount", d.stateDirectory)
            try await must("mount", "-o", "loop", image, d.stateDirectory)
            let second = try d.start(["--bus", bus.address])
            t.add { second.signal(SIGTERM); _ = try? await second.waitForExit(timeout: .seconds(10)) }
            try await second.waitForStderr(containing: "serving the D-Bus API", timeout: .seconds(30))
            let after = try await client.listKeys()
            #expect(Set(before.ok).isSubset(of: after), "lost: \(Set(before.ok).subtracting(after).sorted())")
            #expect(after.isDisjoint(with: during.refused))
        }
    }

    struct Damage: Sendable, CustomTestStringConvertible {
        var name: String
        /// Python that damages the file at `path` (a real state database with three notifications).
        var python: String
        var mentions: [String]
        /// Stopped with `kill -9` and its WAL kept, instead of a clean stop (which checkpoints).
        var killed = false
        var testDescription: String { name }
    }

    static let damages: [Damage] = [
        Damage(name: "not SQLite at all", python: "open(path, 'wb').write(b'this is not a database\\n' * 500)",
               mentions: ["is damaged or not a Tocsin database", "move it aside"]),
        Damage(name: "pages overwritten", python: """
            data = bytearray(open(path, 'rb').read())
            for i in range(4096, len(data)): data[i] = (i * 7) & 0xff
            open(path, 'wb').write(bytes(data))
            """, mentions: ["damaged", "move it aside"]),
        Damage(name: "regression: truncated to 0 bytes (started empty, silently)", python: "open(path, 'wb').close()",
               mentions: ["is empty (0 bytes)", "truncated", "move it aside"]),
        Damage(name: "truncated header", python: "data = open(path, 'rb').read(); open(path, 'wb').write(data[:50])",
               mentions: ["damaged", "move it aside"]),
        Damage(name: "another program's SQLite database", python: """
            import os, sqlite3
            os.remove(path)
            db = sqlite3.connect(path)
            db.execute('create table photos(id integer primary key, name text)')
            db.execute("insert into photos(name) values ('holiday')")
            db.commit(); db.close()
            """, mentions: ["not a Tocsin database", "photos", "move it aside"]),
        Damage(name: "regression: a newer release's schema version (was called damage, advising to move the file aside)", python: """
            import sqlite3
            db = sqlite3.connect(path)
            db.execute("update meta set value = '99' where name = 'schema_version'")
            db.commit(); db.close()
            """, mentions: ["written by a newer Tocsin", "schema version 99", "keep the file"]),
        // The WAL still held the notifications' pages, so the load found them whole; the quiet
        // tables' pages were gone with the rest of the file, and every later write failed.
        Damage(name: "regression: truncated to 20,000 bytes after kill -9, WAL kept (started, then failed every write)",
               python: "os.truncate(path, 20000)", mentions: ["damaged", "move it aside"], killed: true),
    ]

    @Test("a damaged state database at start: exit 1 naming the file and what to do, and the file is left as it was", arguments: damages)
    func corruptDatabase(_ row: Damage) async throws {
        let d = try DaemonUnderTest(config: """
            [backend.log]
            type = "log"

            [[notification]]
            key = "a"
            title = "A"
            on_calendar = "daily"

            [[notification]]
            key = "b"
            title = "B"
            every = "1h"
            """)
        let p = try await d.startAndWait()
        let path = d.stateDirectory + "/state.sqlite3"
        var prelude = "import os\npath = '\(path)'\n"
        if row.killed {
            p.signal(SIGKILL)
            #expect(try await p.waitForExit(timeout: .seconds(10)) == .signaled(SIGKILL), "row \(row.name)")
            #expect(FileManager.default.fileExists(atPath: path + "-wal"), "row \(row.name): the WAL is kept")
        } else {
            p.signal(SIGTERM)
            #expect(try await p.waitForExit(timeout: .seconds(10)) == .exited(0), "row \(row.name)")
            // Without the WAL: valid frames left in it would mask the damage to the main file.
            prelude += "for x in ('-wal', '-shm'):\n    if os.path.exists(path + x): os.remove(path + x)\n"
        }
        let damage = try await TestProcess.run("/usr/bin/python3", ["-c", prelude + row.python])
        try #require(damage.status == .exited(0), "row \(row.name): \(damage.stderrText)")
        let damaged = try Data(contentsOf: URL(fileURLWithPath: path))

        let again = try d.start()
        let status = try await again.waitForExit(timeout: .seconds(30))
        #expect(status == .exited(1), "row \(row.name): \(status); stderr: \(again.stderr)")
        #expect(again.stderr.contains(path), "row \(row.name): the message must name the file: \(again.stderr)")
        for m in row.mentions { #expect(again.stderr.contains(m), "row \(row.name): should mention \(m): \(again.stderr)") }
        if row.killed {
            // SQLite itself copies a WAL's committed pages into the file when the refused start
            // closes it, so the bytes change; the damage stays, and so does the refusal.
            let third = try d.start()
            #expect(try await third.waitForExit(timeout: .seconds(30)) == .exited(1), "row \(row.name): \(third.stderr)")
            #expect(third.stderr.contains("damaged"), "row \(row.name): \(third.stderr)")
        } else {
            #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == damaged, "row \(row.name): the damaged file was changed")
        }
    }
}

/// Runs a command that must succeed.
@discardableResult
func must(_ command: String, _ arguments: String...) async throws -> TestProcess.Output {
    let out = try await TestProcess.run(command, arguments)
    guard out.status == .exited(0) else {
        throw TestProcessError("\(command) \(arguments.joined(separator: " ")): \(out.status.map(\.description) ?? "?") \(out.stderrText)")
    }
    return out
}

/// dbus-python calls for the storage tests, each a short script against the test bus.
struct StorageClient: Sendable {
    let bus: PrivateBus

    struct Outcome: Sendable, CustomStringConvertible {
        var ok: [String] = []
        var refused: [String] = []
        /// "ErrorName: message" per refused key, in order.
        var refusals: [String] = []
        var description: String { "\(ok.count) acknowledged, \(refused.count) refused: \(refusals.prefix(3))" }
    }

    private static let prelude = """
        import dbus, json, sys
        bus = dbus.bus.BusConnection(ADDRESS)
        gw = dbus.Interface(bus.get_object('io.github.tocsin.Gateway', '/io/github/tocsin/Gateway'), 'io.github.tocsin.Gateway1')
        def schedule(spec):
            try:
                gw.Schedule(dbus.Dictionary(spec, signature='sv'))
                return None
            except dbus.DBusException as e:
                return e.get_dbus_name() + ': ' + e.get_dbus_message()

        """

    func run(_ code: String) async throws -> [[String: Any]] {
        let out = try await TestProcess.run("/usr/bin/python3", ["-c", "ADDRESS = '\(bus.address)'\n" + Self.prelude + code], timeout: .seconds(120))
        guard out.status == .exited(0) else { throw TestProcessError("client failed: \(out.stderrText)") }
        return out.stdoutText.split(separator: "\n").compactMap {
            (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any]
        }
    }

    private static func outcome(_ lines: [[String: Any]]) -> Outcome {
        var o = Outcome()
        for l in lines {
            guard let key = l["key"] as? String else { continue }
            if let e = l["error"] as? String { o.refused.append(key); o.refusals.append(e) } else { o.ok.append(key) }
        }
        return o
    }

    func schedule(_ keys: [String], after: String? = nil, every: String? = nil) async throws -> Outcome {
        let trigger = after.map { "'after': '\($0)'" } ?? "'every': '\(every ?? "1h")'"
        let list = keys.map { "'\($0)'" }.joined(separator: ", ")
        return Self.outcome(try await run("""
            for k in [\(list)]:
                print(json.dumps({'key': k, 'error': schedule({'key': k, 'title': k, \(trigger)})}), flush=True)
            """))
    }

    /// Schedules 4 KiB notifications until five in a row are refused, then small ones until five
    /// in a row are refused too, so no page is left for any write (at most 3000 each).
    func fill() async throws -> Outcome {
        Self.outcome(try await run("""
            for size in (4096, 0):
                refused = 0
                for i in range(3000):
                    k = 'fill-%d-%d' % (size, i)
                    e = schedule({'key': k, 'title': k, 'body': 'x' * size, 'after': '1h'})
                    print(json.dumps({'key': k, 'error': e}), flush=True)
                    refused = refused + 1 if e else 0
                    if refused >= 5:
                        break
            """))
    }

    func cancel(_ key: String) async throws -> String {
        let lines = try await run("""
            try:
                print(json.dumps({'result': str(gw.Cancel('\(key)'))}))
            except dbus.DBusException as e:
                print(json.dumps({'result': e.get_dbus_name() + ': ' + e.get_dbus_message()}))
            """)
        return lines.first?["result"] as? String ?? ""
    }

    func listKeys() async throws -> Set<String> {
        let lines = try await run("print(json.dumps({'keys': [str(n['key']) for n in gw.List()]}))")
        return Set(lines.first?["keys"] as? [String] ?? [])
    }
}
