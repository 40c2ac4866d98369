public import TocsinTime
public import TocsinModel

extension Trigger {
    /// The first firing after `now`, or why there is none. The one test of "never fires": a
    /// runtime `Schedule` is refused with the reason, a config notification is kept but skipped
    /// (the daemon logs the reason), and `tocsin check` warns with it, so the three cannot
    /// disagree about which triggers are dead.
    public func firstFiring(after now: Instant) -> Result<Occurrence, CenterError> {
        if let next = next(after: now, previous: nil) { return .success(next) }
        switch self {
        case .at:
            return .failure(CenterError(.invalidTrigger, "'at' is in the past; a past time is never delivered", field: "at"))
        case .remindBefore:
            return .failure(CenterError(.invalidTrigger, "every reminder of 'remind_before' is in the past", field: "remind_before"))
        case let .every(period, starting, count, until):
            return .failure(CenterError(.invalidTrigger, "'every' never fires: \(Self.everyEnded(period, starting, count, until, now))", field: "every"))
        case .calendar(let c, _):
            return .failure(CenterError(.invalidTrigger, "'on_calendar' expression '\(c.normalized)' never elapses again", field: "on_calendar"))
        }
    }
}

extension CenterError {
    /// `after` becomes an `at` when the request is resolved, and the batch that schedules it reads
    /// the clock again later: a span shorter than that wait has elapsed by then. Refused as `'at'
    /// is in the past`, the error would name a field the caller never sent.
    func naming(_ trigger: TriggerSpec) -> CenterError {
        guard case .after(let span) = trigger, field == "at" else { return self }
        return CenterError(code, "'after' \(span) elapsed before the notification could be scheduled; give a longer 'after', or post it now",
                           field: "after")
    }
}

extension Trigger {
    /// Which limit ended a series that has no firing after `now`, in the order `next` applies them.
    static func everyEnded(_ period: TimeSpan, _ starting: Instant, _ count: UInt32?, _ until: Instant?, _ now: Instant) -> String {
        var k: Int64 = 0
        if now >= starting, period.microseconds > 0 {
            let elapsed = now.microseconds.subtractingReportingOverflow(starting.microseconds)
            k = elapsed.overflow ? .max : elapsed.partialValue / period.microseconds + 1
        }
        if let count, k >= Int64(count) { return count == 1 ? "its one firing is in the past" : "its \(count) firings are all in the past" }
        if k >= Int64(UInt32.max) {
            // `k` is Int64.max when the span itself overflowed: no number worth printing then.
            let number = k == .max ? "" : " number \(k + 1)"
            return "'starting' is so far back that the next firing would be\(number) past the last one Tocsin counts (\(UInt32.max))"
        }
        if until != nil { return "'until' is before the next firing" }
        return "the next firing would be after the latest instant Tocsin schedules"
    }
}

extension CenterOptions {
    /// The config notifications a load at `now` would keep but never fire, each with its reason:
    /// resolved as the center resolves them (the same `SpecResolver` on the same options) and
    /// tested with `firstFiring`, so `tocsin check` warns about what a first load would skip (the
    /// daemon judges an entry it already had by what it stored, which `check` does not read).
    /// An entry that does not resolve is left out: that is an error, reported where it is found.
    public func neverFiring(_ specs: [NotificationSpec], backendNames: [String],
                            now: Instant) -> [(spec: NotificationSpec, reason: CenterError)] {
        let resolver = SpecResolver(zones: ZoneCache(directory: zones), defaultZone: defaultZone,
                                    defaultMissed: defaultMissed, defaultMaxLate: defaultMaxLate)
        var out: [(spec: NotificationSpec, reason: CenterError)] = []
        for spec in specs {
            guard let n = try? resolver.resolve(spec, source: .config, now: now, backendNames: backendNames),
                  case .failure(let reason) = n.trigger.firstFiring(after: now) else { continue }
            out.append((spec, reason))
        }
        return out
    }
}
