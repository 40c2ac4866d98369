import Testing
import TocsinConfig
import TocsinCore
import TocsinTime
import TocsinModel

/// `CenterOptions` is derived from `[daemon]`: its defaults are the settings table's, and every
/// setting the engine uses reaches it.
@Suite("CenterOptions from [daemon]")
struct CenterOptionsTests {
    @Test("a default CenterOptions and one from default settings agree")
    func defaultsAgree() throws {
        let plain = CenterOptions(defaultZone: .utc)
        let derived = try CenterOptions(settings: DaemonSettings(), environment: ["TZ": "UTC"])
        #expect(plain.maxPending == derived.maxPending && plain.maxPending == DaemonKeys.maxPending.defaultValue)
        #expect(plain.defaultMissed == derived.defaultMissed && plain.defaultMissed == DaemonKeys.missed.defaultValue)
        #expect(plain.defaultMaxLate == nil && derived.defaultMaxLate == nil)
        #expect(plain.limits.minPeriod == derived.limits.minPeriod && plain.limits.minPeriod == DaemonKeys.minPeriod.defaultValue)
        #expect(plain.history == derived.history)
        #expect(plain.history == HistoryRetention(maxEntries: DaemonKeys.historyMaxEntries.defaultValue,
                                                  maxAge: DaemonKeys.historyMaxAge.defaultValue))
        #expect(plain.defaultSnooze == DaemonKeys.snooze && plain.defaultSnooze == .minutes(5))
        #expect(derived.defaultZone.identifier == "UTC")
    }

    @Test("every engine setting of [daemon] reaches the options")
    func settingsReachTheOptions() throws {
        var s = DaemonSettings()
        s.maxPending = 7
        s.missed = .skip
        s.maxLate = .minutes(3)
        s.minPeriod = .minutes(2)
        s.historyMaxEntries = 5
        s.historyMaxAge = .hours(1)
        s.timezone = "UTC"
        let o = try CenterOptions(settings: s, environment: [:])
        #expect(o.maxPending == 7 && o.defaultMissed == .skip && o.defaultMaxLate == .minutes(3))
        #expect(o.limits.minPeriod == .minutes(2))
        #expect(o.history == HistoryRetention(maxEntries: 5, maxAge: .hours(1)))
        #expect(o.defaultZone.identifier == "UTC")
    }

    @Test("an unknown [daemon] timezone is named with the one zone message")
    func unknownZone() {
        var s = DaemonSettings()
        let malformed = " (zone names are like 'America/New_York': letters, digits, '-', '_' and '+', with '/' between parts)"
        for (name, hint) in [("Mars/Base", ""), ("../etc/passwd", malformed)] {
            s.timezone = name
            #expect(throws: TimeSyntaxError.self, "zone '\(name)'") { _ = try CenterOptions(settings: s, environment: [:]) }
            do { _ = try CenterOptions(settings: s, environment: [:]) } catch {
                #expect(error.message == "unknown time zone '\(name)'\(hint) in [daemon] 'timezone'", "zone '\(name)'")
            }
        }
    }
}
