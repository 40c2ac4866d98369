import DBus
import Foundation
import Logging
import Testing
import TocsinConfig
import TocsinCore
import TocsinGateway
import TocsinTesting
import TocsinTime
import TocsinModel

/// A trailing zone word (`daily CET`, `12:00 CEST`, `... Europe/Berlin`) means the same on every
/// surface: `tocsin next`, the config file, a D-Bus `Schedule`, and the state store after a restart
/// all give the same elapses. systemd reads an abbreviation of the local zone as local time with
/// that DST state; for a notification the local zone is its own `timezone`, else the daemon's.
@Suite("Calendar zone words on every path")
struct CalendarZonePathsTests {
    struct Row: Sendable, CustomTestStringConvertible {
        var expression: String
        /// `[daemon] timezone`, and `tocsin next --timezone`.
        var zone: String
        var base: Int64
        var testDescription: String { "'\(expression)' in \(zone) from @\(base)" }
    }

    static let rows: [Row] = [
        // `CET` forces standard time in Berlin: daily in winter, and after the change to summer
        // time systemd finds no further elapse (the zone file `CET` would go on, an hour earlier).
        Row(expression: "daily CET", zone: "Europe/Berlin", base: 1_768_000_000),
        Row(expression: "daily CET", zone: "Europe/Berlin", base: 1_774_600_000),
        // `CEST` is no zone file: only the abbreviation reading accepts it.
        Row(expression: "*-*-* 12:00 CEST", zone: "Europe/Berlin", base: 1_775_000_000),
        Row(expression: "*-*-* 12:00 cest", zone: "Europe/Berlin", base: 1_782_864_000),
        Row(expression: "Mon..Fri 09:00 EST", zone: "America/New_York", base: 1_772_000_000),
        // In summer time systemd never elapses `EST` in New York; the zone file `EST` would.
        Row(expression: "Mon..Fri 09:00 EST", zone: "America/New_York", base: 1_793_000_000),
        // Not an abbreviation of the local zone: the zone file `CET`, as systemd.
        Row(expression: "*-*-* 12:00 CET", zone: "UTC", base: 1_774_000_000),
        Row(expression: "daily Europe/Berlin", zone: "America/New_York", base: 1_774_000_000),
        Row(expression: "daily", zone: "UTC", base: 1_774_000_000),
    ]

    static let count = 3

    /// What `tocsin next` prints, as instants.
    static func next(_ row: Row) async throws -> [Instant] {
        let out = try await TestProcess.run(Products.executable("tocsin"),
                                            ["next", "--json", "--from", "@\(row.base)", "--count", "\(count)",
                                             "--timezone", row.zone, row.expression])
        #expect(out.status == .exited(0), "\(row.testDescription): \(out.stderrText)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(out.stdoutText.utf8)) as? [String: Any])
        let texts = try #require(object["next"] as? [String], "\(row.testDescription): \(out.stdoutText)")
        return try texts.map { text throws in try Timestamp.parse(text, now: Instant(seconds: 0)) }
    }

    /// A center on a virtual clock at the row's base, in the row's zone as `[daemon] timezone`.
    static func center(_ row: Row, state: String, clock: VirtualClock) async throws -> TocsinCenter {
        var settings = DaemonSettings()
        settings.timezone = row.zone
        let options = try CenterOptions(settings: settings, environment: [:])
        let c = try TocsinCenter(options: options, stateDirectory: state, clock: clock, timer: clock,
                                 logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
        try await c.start(backends: [RecordingBackend(name: "spy")])
        return c
    }

    /// The next firings the center plans for `key`, stepping the clock from one to the next.
    static func firings(_ center: TocsinCenter, clock: VirtualClock, key: String) async -> [Instant] {
        var out: [Instant] = []
        while out.count < count, let t = await center.list().first(where: { $0.notification.key == key })?.nextFire {
            out.append(t)
            _ = clock.advance(to: t)
            await center.tick()
        }
        return out
    }

    @Test(arguments: rows)
    func samePlanOnEveryPath(_ row: Row) async throws {
        let name = row.testDescription
        let expected = try await Self.next(row)
        // The config file, through the config decoder and the daemon's validation rules.
        let toml = "[daemon]\ntimezone = \"\(row.zone)\"\n[[notification]]\nkey = \"cfg\"\ntitle = \"x\"\non_calendar = \"\(row.expression)\"\n"
        let loaded = try ConfigLoader.load(bytes: Array(toml.utf8), file: "c.toml").get()
        let configDir = TemporaryDirectory(), dbusDir = TemporaryDirectory()
        let configClock = VirtualClock(now: Instant(seconds: row.base))
        let configCenter = try await Self.center(row, state: configDir.path, clock: configClock)
        if expected.isEmpty {
            // Never elapses: reported or refused, but never planned.
            _ = try? await configCenter.applyConfig(loaded.configuration.notifications)
        } else {
            _ = try await configCenter.applyConfig(loaded.configuration.notifications)
        }
        #expect(await Self.firings(configCenter, clock: configClock, key: "cfg") == expected, "\(name): config path")

        // A D-Bus `Schedule` argument, through the gateway's decoder.
        let dbusClock = VirtualClock(now: Instant(seconds: row.base))
        let dbusCenter = try await Self.center(row, state: dbusDir.path, clock: dbusClock)
        let argument = DBusValue.dictionary(key: .string, value: .variant, [
            .init(.string("key"), .variant(.string("bus"))), .init(.string("title"), .variant(.string("x"))),
            .init(.string("on_calendar"), .variant(.string(row.expression))),
        ])
        let decoded = try SpecDecoding.decode(argument, requireTrigger: true)
        if expected.isEmpty {
            // Never elapses: refused as such, like any expression that will not fire.
            await #expect(throws: CenterError.self, "\(name): D-Bus path") { _ = try await dbusCenter.schedule(decoded) }
            return
        }
        _ = try await dbusCenter.schedule(decoded)
        let first = await dbusCenter.list().first { $0.notification.key == "bus" }?.nextFire
        #expect(first == expected.first, "\(name): D-Bus path")

        // The state store: after the first firing, a new process reads the expression back from
        // its normalized form and resolves it in the stored zone. (A restart before the first
        // firing is DurabilityTests/calendarBeforeFirstElapse.)
        if let first {
            _ = dbusClock.advance(to: first)
            await dbusCenter.tick()
        }
        await dbusCenter.shutdown()
        let restarted = try await Self.center(row, state: dbusDir.path, clock: dbusClock)
        let again = Array(await Self.firings(restarted, clock: dbusClock, key: "bus").prefix(Self.count - 1))
        #expect(again == Array(expected.dropFirst()),
                "\(name): after a restart: \(again.map(Timestamp.rfc3339UTC)) vs \(expected.map(Timestamp.rfc3339UTC))")
    }

    /// A notification's own `timezone` is its local zone, whatever the daemon's: the same word
    /// is an abbreviation for one notification and refused for another.
    @Test func theNotificationsZoneDecides() async throws {
        let row = Row(expression: "*-*-* 12:00 CEST", zone: "Europe/Berlin", base: 1_775_000_000)
        let expected = try await Self.next(row)
        let dir = TemporaryDirectory()
        let clock = VirtualClock(now: Instant(seconds: row.base))
        let center = try await Self.center(Row(expression: row.expression, zone: "UTC", base: row.base), state: dir.path, clock: clock)
        var own = NotificationSpec()
        own.key = "own"; own.title = "x"; own.timezone = "Europe/Berlin"
        own.trigger = .onCalendar(try CalendarSpec.parse(row.expression))
        _ = try await center.schedule(own)
        #expect(await center.list().first { $0.notification.key == "own" }?.nextFire == expected.first)
        var daemons = own
        daemons.key = "daemon's"; daemons.timezone = nil
        await #expect(throws: CenterError.self) { _ = try await center.schedule(daemons) }
    }
}

