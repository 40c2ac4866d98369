import ArgumentParser
import FoundationEssentials
import TocsinConfig
import TocsinTime
import TocsinModel

// Owned by the time helper: `tocsin next`.
struct NextCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "next", _superCommandName: Tocsin.name,
        abstract: "Show when a calendar expression or period elapses next.",
        discussion: """
            Output mirrors `systemd-analyze calendar`: elapses are computed exactly as systemd does, \
            including across DST changes. Times are shown in --timezone, else $TZ, else the system zone; \
            an expression that names its own zone is evaluated in that zone. --dst-gap and --dst-fold \
            preview a notification's `dst_gap` and `dst_fold`; each elapse they add is marked.
            """
    )

    @Option(help: "Base time: '2026-12-24 18:00' (in --timezone, else the local zone), RFC 3339 or @<unix seconds> (default: now). Elapses are strictly after it.")
    var from: String?

    @Option(parsing: .unconditional, help: "Number of elapses to show.")
    var count: Int = 1

    @Option(help: "IANA time zone to evaluate and display in (default: $TZ, else the system zone).")
    var timezone: String?

    @Flag(help: "Print one JSON object with RFC 3339 UTC elapses.")
    var json = false

    @Option(help: "A period (e.g. 15min) starting at --from instead of a calendar expression.")
    var every: String?

    @Option(name: .customLong("dst-gap"), help: "skip (default, as systemd) or shift: a local time a DST change skips fires at the first valid instant after the gap.")
    var dstGap: String?

    @Option(name: .customLong("dst-fold"), help: "first (default, as systemd) or both: a local time a DST change repeats fires at each occurrence.")
    var dstFold: String?

    @Argument(help: "A systemd.time(7) calendar expression.")
    var expression: String?

    func validate() throws {
        if count < 1 { throw ValidationError("--count must be at least 1") }
        if every == nil && expression == nil { throw ValidationError("missing calendar expression") }
        if every != nil && expression != nil { throw ValidationError("give either --every or a calendar expression, not both") }
        if let dstGap, DSTGapPolicy(rawValue: dstGap) == nil {
            throw ValidationError("--dst-gap must be 'skip' or 'shift', found '\(dstGap)'")
        }
        if let dstFold, DSTFoldPolicy(rawValue: dstFold) == nil {
            throw ValidationError("--dst-fold must be 'first' or 'both', found '\(dstFold)'")
        }
        if every != nil && (dstGap != nil || dstFold != nil) {
            throw ValidationError("--dst-gap and --dst-fold go with a calendar expression, not --every")
        }
    }

    func run() throws {
        let directory = ZoneInfoDirectory()
        let now = Instant(microseconds: Int64((Date().timeIntervalSince1970 * 1_000_000).rounded(.down)))
        let displayZone: TimeZoneRules
        if let timezone {
            do { displayZone = try directory.rules(named: timezone) } catch {
                throw ValidationError("invalid --timezone '\(timezone)': \(error.message)")
            }
        } else {
            displayZone = directory.defaultZone(tz: ProcessInfo.processInfo.environment["TZ"])
        }
        let base = try baseInstant(now: now, zone: displayZone)
        let result = if let every {
            try periodElapses(every, from: base, zone: displayZone)
        } else {
            try calendarElapses(expression ?? "", from: base, displayZone: displayZone, directory: directory)
        }
        if json {
            printJSON(result)
        } else {
            printHuman(result, displayZone: displayZone, now: now)
        }
    }

    /// What `run` computed, for either output.
    struct Elapses {
        var original: String
        var normalized: String
        var evaluationZone: TimeZoneRules
        var elapses: [Instant] = []
        /// Per elapse, the policy that added it (nil: systemd's own elapse).
        var addedBy: [String?] = []
        /// The non-default DST policies as JSON members, each with its leading ", ".
        var policyJSON = ""
    }

    /// --from, or now; a time without a zone is read in the output's zone.
    private func baseInstant(now: Instant, zone: TimeZoneRules) throws -> Instant {
        guard let from else { return now }
        let base: Instant
        do { base = try Timestamp.parse(from, now: now, zone: zone) } catch {
            throw ValidationError("invalid --from '\(from)': \(error)")
        }
        if let refusal = TimeLimit.refusal(of: base, field: "--from", value: from) { throw ValidationError(refusal) }
        return base
    }

    /// `--every`: the period's firings from `base`, as the daemon's `every` trigger computes them.
    private func periodElapses(_ every: String, from base: Instant, zone: TimeZoneRules) throws -> Elapses {
        let period: TimeSpan
        do { period = try TimeSpan.parsePositive(every) } catch {
            throw ValidationError("invalid --every '\(every)': \(error)")
        }
        if !TimeLimit.fits(period) { throw ValidationError(TimeLimit.pastLatest(field: "--every", value: every)) }
        var result = Elapses(original: every, normalized: "every \(period)", evaluationZone: zone)
        let trigger = Trigger.every(period: period, starting: base, count: nil, until: nil)
        var previous: Occurrence?
        var cursor = base
        while result.elapses.count < count, let o = trigger.next(after: cursor, previous: previous) {
            result.elapses.append(o.instant)
            previous = o
            cursor = o.instant
        }
        return result
    }

    /// A calendar expression's elapses from `base`, with the DST policies' additions marked.
    private func calendarElapses(_ text: String, from base: Instant, displayZone: TimeZoneRules,
                                 directory: ZoneInfoDirectory) throws -> Elapses {
        var spec: CalendarSpec
        let evaluationZone: TimeZoneRules
        // The same resolution as the daemon's, with the display zone as the notification's zone.
        do throws(TimeSyntaxError) {
            (spec, evaluationZone) = try CalendarSpec.parse(text).resolvingZone(local: displayZone, rules: directory.rules(named:))
        } catch {
            // `next 'every 5m'` or `next 90min`: a period, which is --every's to read.
            var period = Substring(text)
            if period.hasPrefix("every ") { period = period.dropFirst(6) }
            let hint = (try? TimeSpan.parsePositive(String(period))) != nil ? " (for a period, give --every '\(period)')" : ""
            throw ValidationError("invalid calendar expression '\(text)': \(error)\(hint)")
        }
        var result = Elapses(original: text, normalized: spec.normalized, evaluationZone: evaluationZone)
        spec.dstGap = dstGap.flatMap(DSTGapPolicy.init(rawValue:)) ?? .skip
        spec.dstFold = dstFold.flatMap(DSTFoldPolicy.init(rawValue:)) ?? .first
        if spec.dstGap != .skip { result.policyJSON += ", \"dst_gap\": \(Self.jsonString(spec.dstGap.rawValue))" }
        if spec.dstFold != .first { result.policyJSON += ", \"dst_fold\": \(Self.jsonString(spec.dstFold.rawValue))" }
        var cursor = base
        while result.elapses.count < count, let t = spec.nextElapse(after: cursor, in: evaluationZone) {
            result.elapses.append(t)
            cursor = t
        }
        result.addedBy = Self.marks(result.elapses, of: spec, from: base, in: evaluationZone)
        return result
    }

    private func printJSON(_ r: Elapses) {
        let next = r.elapses.map { "\"\(Timestamp.rfc3339UTC($0))\"" }.joined(separator: ", ")
        print("{\"expression\": \(Self.jsonString(r.original)), \"normalized\": \(Self.jsonString(r.normalized)), "
            + "\"timezone\": \(Self.jsonString(r.evaluationZone.identifier))\(r.policyJSON), \"next\": [\(next)]}")
    }

    private func printHuman(_ r: Elapses, displayZone: TimeZoneRules, now: Instant) {
        // Like systemd-analyze, the original is only worth a line when normalisation changed it.
        if r.original != r.normalized { print("  Original form: \(JSONText.visible(r.original))") }
        print("Normalized form: \(JSONText.visible(r.normalized))")
        if r.elapses.isEmpty {
            print("    Next elapse: never")
            return
        }
        let showUTC = !displayZone.isUTCEquivalent
        for (i, t) in r.elapses.enumerated() {
            // Right-aligned to the colon as systemd-analyze does, also from `Iter. #10` on.
            let name = i == 0 ? "Next elapse" : "Iter. #\(i + 1)"
            let label = String(repeating: " ", count: max(0, 15 - name.count)) + name
            let mark = i < r.addedBy.count ? r.addedBy[i].map { " (\($0))" } ?? "" : ""
            print("\(label): \(Self.human(t, in: displayZone))\(mark)")
            if showUTC { print("       (in UTC): \(Self.human(t, in: .utc))") }
            // As systemd-analyze's --base-time: relative to the real now, not to --from.
            print("       From now: \(Self.relative(t - now))")
        }
    }

    /// Per elapse of `spec`, the policy that added it, nil for one systemd has too. Each policy
    /// only adds elapses, so an elapse is systemd's own exactly when it is in the sequence systemd
    /// computes from the same base; comparing one step at a time from each elapse instead would
    /// take a second pass through a repeated hour (whose times systemd does elapse when started
    /// inside it) for systemd's own.
    static func marks(_ elapses: [Instant], of spec: CalendarSpec, from base: Instant, in zone: TimeZoneRules) -> [String?] {
        guard let last = elapses.last, spec.dstGap != .skip || spec.dstFold != .first else {
            return elapses.map { _ in nil }
        }
        func sequence(_ s: CalendarSpec) -> Set<Instant> {
            var out: Set<Instant> = []
            var cursor = base
            while let t = s.nextElapse(after: cursor, in: zone), t <= last { out.insert(t); cursor = t }
            return out
        }
        var systemd = spec
        systemd.dstGap = .skip
        systemd.dstFold = .first
        var gapOnly = spec
        gapOnly.dstFold = .first
        let own = sequence(systemd)
        let shifted = spec.dstGap == .shift ? sequence(gapOnly) : []
        return elapses.map { t in
            if own.contains(t) { return nil }
            return shifted.contains(t) ? "dst_gap=shift" : "dst_fold=both"
        }
    }

    static func pad(_ v: Int, _ width: Int = 2) -> String {
        let s = String(v)
        return s.count >= width ? s : String(repeating: "0", count: width - s.count) + s
    }

    /// `Mon 2026-05-25 00:00:00 EDT`, as systemd-analyze prints a timestamp.
    static func human(_ t: Instant, in zone: TimeZoneRules) -> String {
        let c = zone.civil(t)
        let days = Instant(seconds: t.seconds + Int64(zone.utcOffset(at: t))).seconds / 86_400
        let names = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"]
        let w = Int(((days % 7) + 7) % 7)
        return "\(names[w]) \(pad(c.year, 4))-\(pad(c.month))-\(pad(c.day)) \(pad(c.hour)):\(pad(c.minute)):\(pad(c.second)) \(zone.abbreviation(at: t))"
    }

    /// systemd's relative rendering (`5 months 27 days left`, `15h ago`).
    static func relative(_ span: TimeSpan) -> String {
        let us = span.microseconds
        if us == 0 { return "now" }
        let suffix = us > 0 ? "left" : "ago"
        let d = us.magnitude
        let sec: UInt64 = 1_000_000, minute = 60 * sec, hour = 60 * minute, day = 24 * hour
        let week = 7 * day, month = 2_629_800 * sec, year = 31_557_600 * sec
        func plural(_ n: UInt64, _ one: String, _ many: String) -> String { "\(n) \(n == 1 ? one : many)" }
        if d >= year {
            return "\(plural(d / year, "year", "years")) \(plural(d % year / month, "month", "months")) \(suffix)"
        } else if d >= month {
            return "\(plural(d / month, "month", "months")) \(plural(d % month / day, "day", "days")) \(suffix)"
        } else if d >= week {
            return "\(plural(d / week, "week", "weeks")) \(plural(d % week / day, "day", "days")) \(suffix)"
        } else if d >= 2 * day {
            return "\(d / day) days \(suffix)"
        } else if d >= 25 * hour {
            return "1 day \((d - day) / hour)h \(suffix)"
        } else if d >= 6 * hour {
            return "\(d / hour)h \(suffix)"
        } else if d >= hour {
            return "\(d / hour)h \(d % hour / minute)min \(suffix)"
        } else if d >= 5 * minute {
            return "\(d / minute)min \(suffix)"
        } else if d >= minute {
            return "\(d / minute)min \(d % minute / sec)s \(suffix)"
        } else if d >= sec {
            return "\(d / sec)s \(suffix)"
        } else if d >= 1000 {
            return "\(d / 1000)ms \(suffix)"
        }
        return "\(d)us \(suffix)"
    }

    static func jsonString(_ s: String) -> String { JSONText.quote(s) }
}
