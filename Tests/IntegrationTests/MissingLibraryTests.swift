import Foundation
import Testing
import TocsinTesting

/// libsqlite3, libmosquitto and libnotify are opened on first use, not linked (lazy_library.h):
/// a machine without one must get an error naming it where it is needed, and nothing else may
/// notice. The test hides a library from `tocsin` by mounting /dev/null over its file in a mount
/// namespace of its own, which needs root: CI runs as root, so there it always runs.
@Suite("A library opened on first use is missing", .enabled(if: getuid() == 0, "mounting needs root"))
struct MissingLibraryTests {
    static let binary = Products.executable("tocsin")

    /// The file the dynamic loader opens for `soname`, wherever this system keeps it: the loader's
    /// cache names it (`ldconfig -p`), and the mount goes over the file its link ends at.
    static func file(of soname: String) throws -> String {
        let cache = try runBlocking("/sbin/ldconfig", ["-p"])
        let line = cache.stdout.split(separator: "\n").first { $0.trimmingCharacters(in: .whitespaces).hasPrefix(soname + " ") }
        let path = try #require(line?.components(separatedBy: " => ").last, "\(soname) in ldconfig -p: \(cache.stdout.prefix(300))")
        let real = try #require(realpath(path, nil), "\(path) resolves")
        defer { free(real) }
        return String(cString: real)
    }

    /// Runs `tocsin ARGUMENTS` with `library` (a soname) replaced by an empty file.
    static func runWithout(_ library: String, _ arguments: [String]) async throws -> TestProcess.Output {
        let real = try file(of: library)
        let script = "mount --bind /dev/null \"$1\" && shift && exec \"$@\""
        return try await TestProcess.run("/usr/bin/unshare", ["-m", "--propagation", "private", "sh", "-c", script, "sh", real,
                                                             binary] + arguments,
                                         environment: ["PATH": "/usr/bin:/bin", "LANG": "C"], timeout: .seconds(30))
    }

    @Test("without libsqlite3 the daemon exits 1 naming the library; commands that keep no state run as before")
    func withoutSQLite() async throws {
        let dir = TemporaryDirectory()
        let config = try dir.write("empty.toml", "")
        let daemon = try await Self.runWithout("libsqlite3.so.0", ["daemon", "--state-dir", dir.path + "/state", "--config", config])
        #expect(daemon.status == .exited(1), "\(daemon.stderrText)")
        #expect(daemon.stderrText.contains("cannot open state database"), "\(daemon.stderrText)")
        #expect(daemon.stderrText.contains("cannot load libsqlite3.so.0: "), "\(daemon.stderrText)")
        let next = try await Self.runWithout("libsqlite3.so.0", ["next", "--from", "@0", "--timezone", "UTC", "daily"])
        #expect(next.status == .exited(0), "\(next.stderrText)")
        #expect(next.stdoutText.contains("Next elapse: Fri 1970-01-02 00:00:00 UTC"), "\(next.stdoutText)")
    }

    @Test("without libnotify the daemon serves as before; a popup fails naming the library, and status then reports it")
    func withoutLibNotify() async throws {
        try await withTeardown { t in
            let bus = try await PrivateBus.start()
            t.add { await bus.stop() }
            let dir = TemporaryDirectory()
            let config = try dir.write("popup.toml", "[backend.popup]\ntype = \"libnotify\"\n")
            let real = try Self.file(of: "libnotify.so.4")
            let script = "mount --bind /dev/null \"$1\" && shift && exec \"$@\""
            let daemon = try TestProcess("/usr/bin/unshare", ["-m", "--propagation", "private", "sh", "-c", script, "sh", real,
                                                              Self.binary, "daemon", "--state-dir", dir.path + "/state", "--config", config,
                                                              "--bus", bus.address],
                                         environment: ["DBUS_SESSION_BUS_ADDRESS": bus.address, "HOME": dir.path])
            t.add { _ = try? await daemon.kill() }
            try await daemon.waitForStderr(containing: "serving the D-Bus API", timeout: .seconds(30))
            func popupHealth() async throws -> String? {
                let out = try await TestProcess.run(Self.binary, ["status", "--json", "--bus", bus.address])
                #expect(out.status == .exited(0), "\(out.stderrText)")
                let object = try JSONSerialization.jsonObject(with: Data(out.stdoutText.utf8)) as? [String: Any]
                return (object?["backends"] as? [String: String])?["popup"]
            }
            // Before a popup the library is not loaded (status would map GLib for good), so the
            // bus's answer is all there is: nobody serves notifications on this bus.
            #expect(try await popupHealth() == "no notification server")
            let post = try await TestProcess.run(Self.binary, ["post", "--title", "Hello", "--bus", bus.address])
            #expect(post.status == .exited(0), "\(post.stderrText)")
            try await daemon.waitForStderr(containing: "cannot load libnotify.so.4: ", timeout: .seconds(30))
            let health = try await popupHealth()
            #expect(health?.hasPrefix("cannot load libnotify.so.4: ") == true, "\(health ?? "nil")")
            #expect(daemon.status == nil, "the daemon is still running")
        }
    }
}
