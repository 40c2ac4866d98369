import FoundationEssentials
import TocsinConfig
import TocsinTime
import TocsinModel

/// How the CLI shows instants to people: local time to the second with its zone abbreviation,
/// and how far away it is, as `systemctl list-timers` does. Machine-readable output (`--json`)
/// keeps microseconds since the epoch and never goes through here.
struct TimeDisplay {
    /// The zone of the output: `--utc`, else $TZ, else the system zone (as `tocsin next`).
    var zone: TimeZoneRules
    /// The reference for LEFT/PASSED; fixed once per command so every row agrees.
    var now: Instant

    init(utc: Bool = false, now: Instant = TimeDisplay.currentInstant()) {
        zone = utc ? .utc : ZoneInfoDirectory().defaultZone(tz: ProcessInfo.processInfo.environment["TZ"])
        self.now = now
    }

    static func currentInstant() -> Instant {
        Instant(microseconds: Int64((Date().timeIntervalSince1970 * 1_000_000).rounded(.down)))
    }

    /// `Mon 2026-11-23 18:49:05 CET`.
    func absolute(_ t: Instant) -> String { NextCommand.human(Instant(seconds: t.seconds), in: zone) }

    /// `5min 3s left`, `2h ago`: systemd's relative form, to the second.
    func relative(_ t: Instant) -> String {
        let span = Instant(seconds: t.seconds) - Instant(seconds: now.seconds)
        return NextCommand.relative(span)
    }

    /// One instant in a line of text (watch, snooze): `Mon 2026-11-23 18:49:05 CET (5min left)`.
    func moment(_ t: Instant) -> String { "\(absolute(t)) (\(relative(t)))" }

    /// A how-long-ago without the suffix, for uptimes: `2h 5min`.
    func elapsed(since t: Instant) -> String {
        let r = NextCommand.relative(Instant(seconds: t.seconds) - Instant(seconds: now.seconds))
        if r == "now" { return "0s" }
        return r.hasSuffix(" ago") ? String(r.dropLast(4)) : r
    }

    /// The daemon's trigger summary (`at 2026-11-23T18:49:05.887208Z`, `every 1h from …`) with its
    /// UTC instants shown like every other time here. Words that are not instants stay as sent.
    func trigger(_ summary: String) -> String {
        summary.split(separator: " ", omittingEmptySubsequences: false).map { word -> String in
            let comma = word.hasSuffix(",")
            let core = comma ? word.dropLast() : word[...]
            guard core.count >= 20, core.hasSuffix("Z"), core.dropFirst(10).first == "T",
                  let t = try? Timestamp.parse(String(core), now: now) else { return String(word) }
            return absolute(t) + (comma ? "," : "")
        }.joined(separator: " ")
    }

    /// One pending notification as `tocsin list` shows it.
    struct Row {
        var key: String
        var next: Instant?
        var last: Instant?
        var state: String
        var trigger: String
        var title: String
    }

    /// The `tocsin list` table: NEXT, LEFT, LAST, PASSED as `systemctl list-timers` has them,
    /// then what the notification is. A missing instant shows as `-`. The last column (the
    /// title) is not padded, so lines carry no trailing blanks. Client text shows its control
    /// characters escaped (`JSONText.visible`).
    func table(_ rows: [Row]) -> [String] {
        var cells = [["NEXT", "LEFT", "LAST", "PASSED", "KEY", "STATE", "TRIGGER", "TITLE"]]
        for r in rows {
            cells.append([
                r.next.map(absolute) ?? "-", r.next.map(relative) ?? "-",
                r.last.map(absolute) ?? "-", r.last.map(relative) ?? "-",
                JSONText.visible(r.key), JSONText.visible(r.state),
                JSONText.visible(trigger(r.trigger)), JSONText.visible(r.title),
            ])
        }
        let columns = cells[0].count
        let widths = (0..<columns - 1).map { c in cells.map { $0[c].count }.max() ?? 0 }
        return cells.map { line in
            var out = ""
            for c in 0..<columns - 1 { out += line[c] + String(repeating: " ", count: widths[c] - line[c].count + 2) }
            return out + line[columns - 1]
        }
    }
}
