import TocsinTime

extension NotificationFields {
    /// `[daemon] min_period`, checked on a decoded trigger: the one check behind `tocsin check`,
    /// config load and reload, and D-Bus `Schedule`, so a notification that would fire faster
    /// than the floor is refused with the same message everywhere, at the field (and, in a
    /// file, at the offending value: the list element for `remind_before`).
    static func floorIssue<R: FieldReader>(_ trigger: TriggerSpec, _ r: R, limits: SpecLimits) -> FieldIssue? {
        let floor = limits.minPeriod
        guard floor > .zero else { return nil }
        // Worded only for a refusal: formatting the floor cost more than the rest of a `Schedule`'s check.
        var rule: String { "closer than [daemon] min_period (\(floor)); a notification may fire at most once per min_period" }
        switch trigger {
        case .at, .after:
            return nil
        case .every(let period, _, _, _):
            guard period < floor else { return nil }
            return FieldIssue(field: "every", location: r.valueLocation(of: "every"),
                              message: "'every' is \(period), \(rule)")
        case .onCalendar(let spec):
            guard let d = spec.closestElapses(below: floor) else { return nil }
            return FieldIssue(field: "on_calendar", location: r.valueLocation(of: "on_calendar"),
                              message: "'on_calendar' expression '\(spec.normalized)' can elapse \(d) after the elapse before, \(rule)")
        case .remindBefore(_, let offsets):
            guard let pair = RepeatFloor.closestOffsets(offsets, below: floor) else { return nil }
            let location = r.elementLocation(of: "remind_before", at: pair.second - 1)
            return FieldIssue(field: "remind_before", location: location,
                              message: "offsets \(pair.first) and \(pair.second) of 'remind_before' (\(offsets[pair.first - 1]) and \(offsets[pair.second - 1])) are \(pair.distance) apart, \(rule)")
        }
    }
}
