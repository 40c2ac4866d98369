import Foundation
import Testing
import TocsinTesting

@Suite("tocsin check")
struct CheckCommandTests {
    static var repositoryRoot: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path
    }

    @Test("a config with several mistakes: each reported with file:line:column, source line and caret; exit 1")
    func severalMistakes() async throws {
        let dir = TemporaryDirectory()
        let path = try dir.write("bad.toml", """
            [daemon]
            log_levl = "info"

            [backend.hook]
            type = "exce"

            [[notification]]
            titel = "Stand-up"
            on_calendar = "Mon..Fri 9:75"
            """)
        let out = try await TestProcess.run(Products.executable("tocsin"), ["check", path])
        #expect(out.status == .exited(1))
        let expected = """
            \(path):2:1: error: unknown key 'log_levl' in [daemon]; did you mean 'log_level'?
            log_levl = "info"
            ^
            \(path):5:8: error: unknown backend type 'exce' in [backend.hook]; did you mean 'exec'?
            type = "exce"
                   ^
            \(path):7:1: error: missing required key 'title' in [[notification]] #1
            [[notification]]
            ^
            \(path):8:1: error: unknown key 'titel' in [[notification]] #1; did you mean 'title'?
            titel = "Stand-up"
            ^
            \(path):9:27: error: invalid 'on_calendar': minute value out of range
            on_calendar = "Mon..Fri 9:75"
                                      ^

            """
        #expect(out.stderrText == expected)
        #expect(out.stdoutText.isEmpty)
    }

    @Test("zone words resolve against each notification's zone; a bad span unit is named at its column")
    func zoneWordsAndSpanUnits() async throws {
        let dir = TemporaryDirectory()
        let path = try dir.write("zones.toml", """
            [daemon]
            timezone = "Europe/Berlin"

            [[notification]]
            title = "Berlin summer noon"
            on_calendar = "*-*-* 12:00 CEST"

            [[notification]]
            title = "Not a New York abbreviation"
            timezone = "America/New_York"
            on_calendar = "*-*-* 12:00 CEST"

            [[notification]]
            title = "Parsecs"
            after = "5 parsecs"

            [backend.log]
            type = "log"
            """)
        let out = try await TestProcess.run(Products.executable("tocsin"), ["check", path])
        #expect(out.status == .exited(1))
        let expected = """
            \(path):11:28: error: invalid 'on_calendar': unknown time zone 'CEST' (neither a zone name nor an abbreviation of America/New_York: EST, EDT)
            on_calendar = "*-*-* 12:00 CEST"
                                       ^
            \(path):15:12: error: invalid 'after': unknown time unit 'parsecs' (expected us, ms, s, min, h, d, w, M, y)
            after = "5 parsecs"
                       ^

            """
        // `12:00 CEST` forces summer time: while standard time is in force systemd finds no elapse
        // (neither does Tocsin), and check warns that the entry is skipped. Only the errors are
        // this test's; the warning's three lines are left out when the date brings them.
        var lines = out.stderrText.split(separator: "\n", omittingEmptySubsequences: false)
        if let w = lines.firstIndex(where: { $0.contains(": warning: notification 'config-1' never fires") }) {
            lines.removeSubrange(w..<min(w + 3, lines.count))
        }
        #expect(lines.joined(separator: "\n") == expected)
    }

    @Test("an unknown zone in 'timezone' is reported at its value, naming the field")
    func unknownTimezoneAtItsValue() async throws {
        let dir = TemporaryDirectory()
        let path = try dir.write("tz.toml", """
            [daemon]
            log_level = "info"
            timezone = "Bad/Zone"

            [backend.log]
            type = "log"

            [[notification]]
            key = "n1"
            title = "x"

            body = "hello"
            on_calendar = "daily"
            timezone = "Europe/Berlinn"

            [[notification]]
            key = "n2"
            title = "y"
            on_calendar = "daily"
            timezone = "+01:00"
            """)
        let out = try await TestProcess.run(Products.executable("tocsin"), ["check", path])
        #expect(out.status == .exited(1))
        let expected = """
            \(path):3:12: error: unknown time zone 'Bad/Zone' in [daemon] 'timezone'
            timezone = "Bad/Zone"
                       ^
            \(path):14:12: error: unknown time zone 'Europe/Berlinn' in 'timezone' of notification 'n1'
            timezone = "Europe/Berlinn"
                       ^
            \(path):20:12: error: unknown time zone '+01:00' (a UTC offset, not a zone name: 'Etc/GMT-1' is UTC+01:00 all year; a place's zone, such as 'Europe/Berlin', also follows its daylight saving time) in 'timezone' of notification 'n2'
            timezone = "+01:00"
                       ^

            """
        #expect(out.stderrText == expected)
    }

    @Test("a calendar expression ending in an unknown zone path is reported at that word")
    func unknownZonePathInCalendar() async throws {
        let dir = TemporaryDirectory()
        let path = try dir.write("caltz.toml", """
            [backend.log]
            type = "log"

            [[notification]]
            key = "n1"
            title = "x"
            on_calendar = "Mon 07:30 Europe/Berlinn"
            """)
        let out = try await TestProcess.run(Products.executable("tocsin"), ["check", path])
        #expect(out.status == .exited(1))
        let expected = """
            \(path):7:26: error: invalid 'on_calendar': unknown time zone 'Europe/Berlinn'
            on_calendar = "Mon 07:30 Europe/Berlinn"
                                     ^

            """
        #expect(out.stderrText == expected)
    }

    @Test("a TOML syntax error is reported with its position")
    func syntaxError() async throws {
        let dir = TemporaryDirectory()
        let path = try dir.write("syntax.toml", "[daemon]\nmissed = \"skip\"\nmissed = \"fire-all\"\n")
        let out = try await TestProcess.run(Products.executable("tocsin"), ["check", path])
        #expect(out.status == .exited(1))
        #expect(out.stderrText.hasPrefix("\(path):3:1: error: duplicate key 'missed'"), "\(out.stderrText)")
    }

    /// A multi-line `actions` table with a trailing comma: TOML 1.1, the default.
    static let tomlOneOneConfig = """
        [backend.log]
        type = "log"

        [[notification]]
        key = "standup"
        title = "Stand-up"
        on_calendar = "Mon..Fri 09:25"
        actions = {
          join = "Join call",
          skip = "Skip",
        }
        """

    @Test("a TOML 1.1 config passes by default; with --toml-version 1.0 each 1.1 feature is named at its position")
    func tomlVersion() async throws {
        let dir = TemporaryDirectory()
        let path = try dir.write("v11.toml", Self.tomlOneOneConfig)
        let tocsin = Products.executable("tocsin")
        for args in [["check", path], ["check", "--toml-version", "1.1", path]] {
            let out = try await TestProcess.run(tocsin, args)
            #expect(out.status == .exited(0), "\(args): \(out.stderrText)")
            #expect(out.stdoutText == "ok: 1 backend, 1 notification\n", "\(args)")
        }
        let out = try await TestProcess.run(tocsin, ["check", "--toml-version", "1.0", path])
        #expect(out.status == .exited(1))
        let expected = """
            \(path):8:12: error: inline tables may span lines only in TOML 1.1 (reading as TOML 1.0)
            actions = {
                       ^
            \(path):10:16: error: a trailing comma in an inline table is allowed only in TOML 1.1 (reading as TOML 1.0)
              skip = "Skip",
                           ^

            """
        #expect(out.stderrText == expected)
        #expect(out.stdoutText.isEmpty)

        let bad = try await TestProcess.run(tocsin, ["check", "--toml-version", "2.0", path])
        #expect(bad.status != .exited(0))
        #expect(bad.stderrText.contains("toml-version"), "\(bad.stderrText)")
    }

    @Test("without FILE it checks $XDG_CONFIG_HOME/tocsin/config.toml")
    func defaultPath() async throws {
        let dir = TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: dir.path + "/tocsin", withIntermediateDirectories: true)
        try dir.write("tocsin/config.toml", "[backend.log]\ntype = \"log\"\n[[notification]]\ntitle = \"x\"\nafter = \"1h\"\n")
        let out = try await TestProcess.run(Products.executable("tocsin"), ["check"], environment: ["XDG_CONFIG_HOME": dir.path])
        #expect(out.status == .exited(0))
        #expect(out.stdoutText == "ok: 1 backend, 1 notification\n")
    }

    @Test("a missing file is one clear error")
    func missingFile() async throws {
        let out = try await TestProcess.run(Products.executable("tocsin"), ["check", "/nonexistent/tocsin.toml"])
        #expect(out.status == .exited(1))
        // One line: no quoted source (there is none) and no caret under nothing.
        #expect(out.stderrText == "/nonexistent/tocsin.toml:1:1: error: cannot read config file: No such file or directory\n")
    }

    @Test("every example config in contrib/examples passes", arguments: try FileManager.default
        .contentsOfDirectory(atPath: CheckCommandTests.repositoryRoot + "/contrib/examples")
        .filter { $0.hasSuffix(".toml") }.sorted())
    func examples(_ name: String) async throws {
        let out = try await TestProcess.run(Products.executable("tocsin"),
                                            ["check", Self.repositoryRoot + "/contrib/examples/" + name])
        #expect(out.status == .exited(0), "\(name): \(out.stderrText)")
        #expect(out.stdoutText.hasPrefix("ok: "), "\(name)")
    }

    @Test("an unknown zone abbreviation ending a calendar expression is reported at the word")
    func unknownZoneAbbreviationInCalendar() async throws {
        let dir = TemporaryDirectory()
        let path = try dir.write("calabbr.toml", """
            [daemon]
            timezone = "Europe/Berlin"

            [backend.log]
            type = "log"

            [[notification]]
            key = "n1"
            title = "x"
            on_calendar = "Mon 07:30 Mars"

            [[quiet.window]]
            on_calendar = "22:00 Mars"
            duration = "8h"
            """)
        let out = try await TestProcess.run(Products.executable("tocsin"), ["check", path])
        #expect(out.status == .exited(1))
        let expected = """
            \(path):10:26: error: invalid 'on_calendar': unknown time zone 'Mars' (neither a zone name nor an abbreviation of Europe/Berlin: CET, CEST)
            on_calendar = "Mon 07:30 Mars"
                                     ^
            \(path):13:22: error: unknown time zone 'Mars' (neither a zone name nor an abbreviation of Europe/Berlin: CET, CEST) in [[quiet.window]] #1 'on_calendar'
            on_calendar = "22:00 Mars"
                                 ^

            """
        #expect(out.stderrText == expected)
    }

    @Test("a mistake inside a string with an escape is placed where it is written: a zone word, a backend's duration")
    func escapesBeforeTheMistake() async throws {
        let dir = TemporaryDirectory()
        // `\u0020` is one space written as six characters: the column of what follows it in the
        // decoded text is five less than in the file.
        let path = try dir.write("escapes.toml", #"""
            [daemon]
            timezone = "Europe/Berlin"

            [backend.hook]
            type = "exec"
            command = ["true"]
            timeout = "1\u0020parsec"

            [[notification]]
            key = "n1"
            title = "x"
            on_calendar = "Mon\u002007:30 Mars"
            """#)
        let out = try await TestProcess.run(Products.executable("tocsin"), ["check", path])
        #expect(out.status == .exited(1))
        #expect(out.stderrText.contains("\(path):7:19: error: invalid 'timeout': unknown time unit 'parsec'"), "\(out.stderrText)")
        #expect(out.stderrText.contains("\(path):12:31: error: invalid 'on_calendar': unknown time zone 'Mars'"), "\(out.stderrText)")
    }

    @Test("a notification that can never fire is a warning at its trigger's value, naming the key; the check passes")
    func neverFiringIsAWarning() async throws {
        let dir = TemporaryDirectory()
        let path = try dir.write("past.toml", """
            [backend.log]
            type = "log"

            [[notification]]
            key = "gone"
            title = "x"
            at = 2001-02-03T04:05:06Z

            [[notification]]
            key = "ended"
            title = "y"
            every = "1h"
            starting = 2001-01-01T00:00:00Z
            until = 2001-01-02T00:00:00Z

            [[notification]]
            key = "reminded"
            title = "z"
            at = "2001-01-01T00:00:00Z"
            remind_before = ["1h"]

            [[notification]]
            key = "later"
            title = "w"
            at = 2999-01-01T00:00:00Z
            """)
        let out = try await TestProcess.run(Products.executable("tocsin"), ["check", path])
        #expect(out.status == .exited(0), "\(out.stderrText)")
        let expected = """
            \(path):7:6: warning: notification 'gone' never fires, so the daemon skips it: 'at' is in the past; a past time is never delivered
            at = 2001-02-03T04:05:06Z
                 ^
            \(path):12:9: warning: notification 'ended' never fires, so the daemon skips it: 'every' never fires: 'until' is before the next firing
            every = "1h"
                    ^
            \(path):20:17: warning: notification 'reminded' never fires, so the daemon skips it: every reminder of 'remind_before' is in the past
            remind_before = ["1h"]
                            ^

            """
        #expect(out.stderrText == expected)
        #expect(out.stdoutText == "ok: 1 backend, 4 notifications\n")
    }

    /// `at = "HH:MM"` is today's: a config that passed `check` in the morning must still start the
    /// daemon (and reload) in the afternoon. Midnight today has always passed, so the test does
    /// not depend on the hour it runs at.
    @Test("a time alone that has passed today is a warning as a past date is; the daemon starts and reloads, skipping it")
    func pastTimeAloneIsAWarning() async throws {
        let entries = """
            [[notification]]
            key = "midnight"
            title = "x"
            at = "00:00"

            [[notification]]
            key = "today"
            title = "y"
            at = "today"
            timezone = "Europe/Berlin"

            """
        let config = "[backend.log]\ntype = \"log\"\n\n" + entries
        let dir = TemporaryDirectory()
        let path = try dir.write("today.toml", config)
        let out = try await TestProcess.run(Products.executable("tocsin"), ["check", path], environment: ["TZ": "UTC"])
        #expect(out.status == .exited(0), "\(out.stderrText)")
        #expect(out.stderrText == """
            \(path):7:6: warning: notification 'midnight' never fires, so the daemon skips it: 'at' is in the past; a past time is never delivered
            at = "00:00"
                 ^
            \(path):12:6: warning: notification 'today' never fires, so the daemon skips it: 'at' is in the past; a past time is never delivered
            at = "today"
                 ^

            """)
        #expect(out.stdoutText == "ok: 1 backend, 2 notifications\n")

        let d = try DaemonUnderTest(config: config)
        let p = try await d.startAndWait()
        defer { p.signal(SIGKILL) }
        let log = try await p.waitForStderr(containing: "config notification never fires, skipped", timeout: .seconds(10))
        #expect(p.status == nil, "the daemon stopped: \(log)")
        try d.rewrite(config: config + "[[notification]]\nkey = \"later\"\ntitle = \"z\"\nafter = \"1h\"\n")
        p.signal(SIGHUP)
        let reloaded = try await p.waitForStderr(containing: "reloaded added=1 changed=0 removed=0 unchanged=2", timeout: .seconds(10))
        #expect(!reloaded.contains("reload failed"), "\(reloaded)")
    }

    @Test("a config without backends is a warning (notifications would be delivered nowhere); the check passes")
    func noBackendsIsAWarning() async throws {
        let dir = TemporaryDirectory()
        let path = try dir.write("bare.toml", "[daemon]\nmissed = \"skip\"\n")
        let out = try await TestProcess.run(Products.executable("tocsin"), ["check", path])
        #expect(out.status == .exited(0), "\(out.stderrText)")
        #expect(out.stderrText == """
            \(path):1:1: warning: no backend is configured ([backend.NAME]): notifications fire and are delivered nowhere
            [daemon]
            ^

            """)
        #expect(out.stdoutText == "ok: 0 backends, 0 notifications\n")
        let empty = try dir.write("empty.toml", "")
        let none = try await TestProcess.run(Products.executable("tocsin"), ["check", empty])
        #expect(none.status == .exited(0), "\(none.stderrText)")
        #expect(none.stderrText.hasPrefix("\(empty):1:1: warning: no backend is configured"), "\(none.stderrText)")
    }

    @Test("an empty 'backends' is refused at its value, naming the notification")
    func emptyBackends() async throws {
        let dir = TemporaryDirectory()
        let path = try dir.write("nobackends.toml", """
            [backend.log]
            type = "log"

            [[notification]]
            key = "n1"
            title = "x"
            after = "1h"
            backends = []
            """)
        let out = try await TestProcess.run(Products.executable("tocsin"), ["check", path])
        #expect(out.status == .exited(1))
        let expected = """
            \(path):8:12: error: 'backends' in [[notification]] #1 is empty, so it would deliver to nothing; name at least one backend, or leave 'backends' out for the default ones
            backends = []
                       ^

            """
        #expect(out.stderrText == expected)
    }
}
