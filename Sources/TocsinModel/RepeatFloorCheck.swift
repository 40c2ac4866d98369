import TocsinTime

extension NotificationFields {
    /// `[daemon] min_period`, checked on a decoded trigger: the one check behind `tocsin check`,
    /// config load and reload, and D-Bus `Schedule`, so a notification that would fire faster
    /// than the floor is refused with the same message everywhere, at the field (and, in a
    /// file, at the offending value: the list element for `remind_before`).
    static func floorIssue<R: FieldReader>(_ trigger: TriggerSpec, _ r: R, limits: SpecLimits) -> FieldIssue? {
        guard let v = floorViolation(trigger, limits: limits) else { return nil }
        let location = v.element.map { r.elementLocation(of: v.field, at: $0) } ?? r.valueLocation(of: v.field)
        return FieldIssue(field: v.field, location: location, message: v.message)
    }

    /// The same check where there is no source to point into (a notification another machine of
    /// the fleet sent): the field, the message, and for `remind_before` the 0-based index of the
    /// offending offset.
    public static func floorViolation(_ trigger: TriggerSpec, limits: SpecLimits) -> (field: String, message: String, element: Int?)? {
        let floor = limits.minPeriod
        guard floor > .zero else { return nil }
        // Worded only for a refusal: formatting the floor cost more than the rest of a `Schedule`'s check.
        var rule: String { "closer than [daemon] min_period (\(floor)); a notification may fire at most once per min_period" }
        switch trigger {
        case .at, .after:
            return nil
        case .every(let period, _, _, _):
            guard period < floor else { return nil }
            return ("every", "'every' is \(period), \(rule)", nil)
        case .onCalendar(let spec):
            guard let d = spec.closestElapses(below: floor) else { return nil }
            return ("on_calendar", "'on_calendar' expression '\(spec.normalized)' can elapse \(d) after the elapse before, \(rule)", nil)
        case .remindBefore(_, let offsets):
            guard let pair = RepeatFloor.closestOffsets(offsets, below: floor) else { return nil }
            return ("remind_before", "offsets \(pair.first) and \(pair.second) of 'remind_before' (\(offsets[pair.first - 1]) and \(offsets[pair.second - 1])) are \(pair.distance) apart, \(rule)",
                    pair.second - 1)
        }
    }
}
