import Foundation
import Testing
import TocsinTesting

/// The alarm end to end: the real daemon on a private bus, paplay into a headless PulseAudio with
/// a null sink, and the streams watched with `pactl subscribe`. The null sink consumes audio in
/// blocks of about 2 s, so a stream may outlive its sound by up to that; timings allow for it.
@Suite("Alarm sound end to end", .serialized)
struct SoundAlarmTests {
    @Test("rings at about 0, 3 and 6 s; `tocsin ack` silences the stream within 100 ms and it rings no more")
    func ringsUntilAcknowledged() async throws {
        try await withAlarm(every: "3s", maxRings: 10, soundSeconds: "2", ackKeyAfter: ("wake", 3)) { f in
            _ = try await f.tocsin("schedule", "--key", "wake", "--title", "Wake up", "--after", "1s", "--backend", "alarm")
            let r1 = try await f.watch.wait("new", number: 1, timeout: .seconds(15))
            let r2 = try await f.watch.wait("new", number: 2, timeout: .seconds(10))
            let r3 = try await f.watch.wait("new", number: 3, timeout: .seconds(10))
            for (n, gap) in [(2, r2.at - r1.at), (3, r3.at - r2.at)] {
                #expect(abs(gap - 3) < TimingBudget.scaled(0.3), "ring \(n) came \(gap) s after the one before")
            }

            // The watcher ran `tocsin ack wake` as soon as ring 3's stream appeared; it plays a 2 s sound.
            let ack = try await f.watch.waitForAck(timeout: .seconds(10))
            #expect(ack.status == 0)
            let removed = try await f.watch.waitForRemoval(of: r3.index, timeout: .seconds(5))
            try #require(removed.at > ack.started, "ring 3's stream ended by itself before the ack; cannot measure")
            let afterReturn = max(0, removed.at - ack.returned)
            print("measured: sink-input removed \(Int((removed.at - ack.started) * 1000)) ms after `tocsin ack` started, "
                  + "\(Int(afterReturn * 1000)) ms after it returned (the command took \(Int((ack.returned - ack.started) * 1000)) ms)")
            #expect(afterReturn < TimingBudget.scaled(0.1), "stream still playing \(afterReturn) s after `tocsin ack` returned")

            try await f.marker(after: "4s")
            #expect(f.watch.count("new") == 3, "rang after the ack: \(f.watch.events)")
            let list = try await f.tocsin("list", "--json")
            #expect(!list.stdoutText.contains("\"wake\""), "still pending: \(list.stdoutText)")
        }
    }

    @Test("a reload that leaves [backend.alarm] unchanged lets the ring play on, and `tocsin ack` still stops it (regression: every reload ended the ring)")
    func reloadKeepsTheRing() async throws {
        try await withAlarm(every: "30s", maxRings: 2, soundSeconds: "8") { f in
            _ = try await f.tocsin("schedule", "--key", "wake", "--title", "Wake up", "--after", "1s", "--backend", "alarm")
            let r1 = try await f.watch.wait("new", number: 1, timeout: .seconds(15))
            // A change elsewhere in the file: one notification more.
            let config = try String(contentsOfFile: f.daemon.configPath, encoding: .utf8)
            try f.daemon.rewrite(config: config + "\n[[notification]]\nkey = \"other\"\ntitle = \"Other\"\nafter = \"1h\"\nbackends = [\"log\"]\n")
            try f.process.signal(SIGHUP)
            let log = try await f.process.waitForStderr(containing: "reloaded added=1 ", timeout: .seconds(10))
            #expect(log.contains("reloaded added=1 changed=0 removed=0 unchanged=0 unchanged_backends=alarm,log"), "\(log)")
            // Everything the reload set off has been handled once a notification scheduled after it fires.
            try await f.marker(after: "1s")
            let ended = f.watch.events.filter { $0.kind == "remove" && $0.index == r1.index }
            try #require(ended.isEmpty, "the reload ended ring 1 of an 8 s sound: \(f.watch.events)")

            let ack = try await f.tocsin("ack", "wake")
            let acked = Date().timeIntervalSince1970
            #expect(!ack.stdoutText.contains("was not ringing"), "\(ack.stdoutText)")
            let removed = try await f.watch.waitForRemoval(of: r1.index, timeout: .seconds(5))
            #expect(removed.at - acked < TimingBudget.scaled(1.0), "ring 1 played on \(removed.at - acked) s after the ack")
        }
    }

    @Test("max_rings is honoured: three rings a second apart, then Unanswered and silence")
    func maxRings() async throws {
        try await withAlarm(every: "1s", maxRings: 3, soundSeconds: "0.3") { f in
            _ = try await f.tocsin("schedule", "--key", "wake", "--title", "Wake up", "--after", "1s", "--backend", "alarm")
            try await f.process.waitForStderr(containing: "alarm unanswered", timeout: .seconds(20))
            try await f.marker(after: "3s")
            #expect(f.watch.count("new") == 3, "\(f.watch.events)")
            for e in f.watch.events where e.kind == "new" {
                try await f.watch.waitForRemoval(of: e.index, timeout: .seconds(5))
            }
        }
    }

    @Test("a restart mid-ring resumes ringing where it stopped, within max_rings")
    func restartResumes() async throws {
        // Rings 3 s apart: stopping and starting the daemon (seconds under ThreadSanitizer) must
        // fit before ring 3 is more than the 2 s late tolerance overdue, or it is skipped.
        try await withAlarm(every: "3s", maxRings: 4, soundSeconds: "0.5") { f in
            _ = try await f.tocsin("schedule", "--key", "wake", "--title", "Wake up", "--after", "1s", "--backend", "alarm")
            let r2 = try await f.watch.wait("new", number: 2, timeout: .seconds(15))
            try await f.stopDaemon()
            // Shutdown stops the daemon's players (or ring 2 had already finished).
            try await f.watch.waitForRemoval(of: r2.index, timeout: .seconds(5))
            try await f.startDaemon()
            try await f.watch.wait("new", number: 4, timeout: .seconds(15))
            try await f.process.waitForStderr(containing: "alarm unanswered", timeout: .seconds(15))
            try await f.marker(after: "3s")
            #expect(f.watch.count("new") == 4, "\(f.watch.events)")
        }
    }

    struct Long: Sendable, CustomTestStringConvertible {
        var name: String
        var make: [[String]]  // commands; OUT is the sound, IN a scratch WAV
        var ext: String
        var testDescription: String { name }
    }

    @Test("`tocsin check` refuses a sound over 30 s at the file value", arguments: [
        Long(name: "WAV", make: [["sox", "-n", "-r", "8000", "-c", "1", "-b", "16", "OUT", "synth", "31", "sine", "440"]], ext: "wav"),
        Long(name: "Ogg Vorbis", make: [["sox", "-n", "-r", "8000", "-c", "1", "OUT", "synth", "31", "sine", "440"]], ext: "ogg"),
        Long(name: "Ogg Opus", make: [["sox", "-n", "-r", "16000", "-c", "1", "-b", "16", "IN", "synth", "31", "sine", "440"],
                                      ["opusenc", "--quiet", "IN", "OUT"]], ext: "opus"),
    ])
    func checkRefusesLongSound(_ row: Long) async throws {
        let dir = TemporaryDirectory()
        let sound = dir.path + "/long." + row.ext
        for cmd in row.make {
            let args = cmd.dropFirst().map { $0 == "OUT" ? sound : $0 == "IN" ? dir.path + "/in.wav" : $0 }
            let r = try await TestProcess.run(cmd[0], args)
            try #require(r.status == .exited(0), "\(row.name): \(cmd[0]): \(r.stderrText)")
        }
        let path = try dir.write("alarm.toml", """
            [backend.alarm]
            type = "sound"
            every = "1min"
            file = "\(sound)"
            player = ["paplay", "{file}"]
            """)
        let out = try await TestProcess.run(Products.executable("tocsin"), ["check", path])
        #expect(out.status == .exited(1), "\(row.name)")
        #expect(out.stderrText == """
            \(path):4:8: error: sound file '\(sound)' plays 31.000 s; an alarm sound may last at most 30 s
            file = "\(sound)"
                   ^

            """, "\(row.name)")
    }
}
