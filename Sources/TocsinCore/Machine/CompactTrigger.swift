import TocsinTime
import TocsinSystem

/// A trigger in four machine words. A million pending notifications are mostly `at` and `every`,
/// whose state fits in the words themselves; the rare large parts (a calendar expression with its
/// zone rules, a list of reminder offsets) are interned once in a `TriggerTable` and referenced by
/// index, so a million copies of `Mon..Fri 07:30 Europe/Berlin` cost one table row.
struct CompactTrigger: Hashable, Sendable {
    enum Kind: UInt8, Sendable { case at = 1, every, calendar, remindBefore }
    var kind: Kind
    /// `every`'s count, meaningful when `hasCount`.
    var hasCount = false
    var count: UInt32 = 0
    /// at: the instant; every: the period; calendar: the table row; remindBefore: the event.
    var a: Int64 = 0
    /// every: the first instant; remindBefore: the table row of the offsets.
    var b: Int64 = 0
    /// every: the last instant allowed, `Int64.min` when unbounded.
    var c: Int64 = .min
}

/// The interned large parts of triggers. Rows are never removed: they number the distinct
/// definitions ever scheduled in this process, not the notifications.
struct TriggerTable: Sendable {
    private struct CalendarKey: Hashable { var spec: CalendarSpec; var zone: String }
    private var calendars: [(spec: CalendarSpec, zone: TimeZoneRules)] = []
    private var calendarRows: [CalendarKey: Int] = [:]
    private var offsetLists: [[TimeSpan]] = []
    private var offsetRows: [[TimeSpan]: Int] = [:]

    mutating func compact(_ t: Trigger) -> CompactTrigger {
        switch t {
        case .at(let i):
            return CompactTrigger(kind: .at, a: i.microseconds)
        case let .every(period, starting, count, until):
            return CompactTrigger(kind: .every, hasCount: count != nil, count: count ?? 0, a: period.microseconds,
                                  b: starting.microseconds, c: until?.microseconds ?? .min)
        case let .calendar(spec, zone):
            let key = CalendarKey(spec: spec, zone: zone.identifier)
            let row: Int
            if let r = calendarRows[key] { row = r } else {
                row = calendars.count
                calendars.append((spec, zone))
                calendarRows[key] = row
            }
            return CompactTrigger(kind: .calendar, a: Int64(row))
        case let .remindBefore(event, offsets):
            let row: Int
            if let r = offsetRows[offsets] { row = r } else {
                row = offsetLists.count
                offsetLists.append(offsets)
                offsetRows[offsets] = row
            }
            return CompactTrigger(kind: .remindBefore, a: event.microseconds, b: Int64(row))
        }
    }

    func expand(_ c: CompactTrigger) -> Trigger {
        switch c.kind {
        case .at: return .at(Instant(microseconds: c.a))
        case .every:
            return .every(period: TimeSpan(microseconds: c.a), starting: Instant(microseconds: c.b),
                          count: c.hasCount ? c.count : nil, until: c.c == .min ? nil : Instant(microseconds: c.c))
        case .calendar:
            let row = calendars[Int(c.a)]
            return .calendar(row.spec, zone: row.zone)
        case .remindBefore:
            return .remindBefore(event: Instant(microseconds: c.a), offsets: offsetLists[Int(c.b)])
        }
    }

    /// The offset of a `remind_before` occurrence, which `PackedOccurrence` does not carry.
    func offset(_ c: CompactTrigger, number: UInt32) -> TimeSpan? {
        guard c.kind == .remindBefore, number >= 1 else { return nil }
        let list = offsetLists[Int(c.b)]
        return Int(number) <= list.count ? list[Int(number) - 1] : nil
    }
}

/// An occurrence without its `remind_before` offset (recomputed from the trigger): 12 bytes
/// instead of 32. Number 0 means none.
struct PackedOccurrence: Hashable, Sendable {
    var instant: Int64 = 0
    var number: UInt32 = 0
    static let none = PackedOccurrence()
    var isNone: Bool { number == 0 }

    init() {}
    init(_ o: Occurrence?) {
        if let o { instant = o.instant.microseconds; number = max(1, o.number) }
    }
}
