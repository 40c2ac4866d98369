import TocsinTime

extension NotificationFields {
    /// `[daemon] min_period`, checked on a decoded trigger: the one check behind `tocsin check`,
    /// config load and reload, and D-Bus `Schedule`, so a notification that would fire faster
    /// than the floor is refused with the same message everywhere, at the field (and, in a
    /// file, at the offending value: the list element for `remind_before`).
    static func floorIssue(_ trigger: TriggerSpec, _ r: TableReader, limits: SpecLimits) -> FieldIssue? {
        let floor = limits.minPeriod
        guard floor > .zero else { return nil }
        let rule = "closer than [daemon] min_period (\(floor)); a notification may fire at most once per min_period"
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
            var location = r.valueLocation(of: "remind_before")
            if case .array(let items)? = r.table["remind_before"]?.value, items.indices.contains(pair.second - 1) {
                location = items[pair.second - 1].location
            }
            return FieldIssue(field: "remind_before", location: location,
                              message: "offsets \(pair.first) and \(pair.second) of 'remind_before' (\(offsets[pair.first - 1]) and \(offsets[pair.second - 1])) are \(pair.distance) apart, \(rule)")
        }
    }
}
