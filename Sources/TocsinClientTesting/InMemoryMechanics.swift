import FoundationEssentials
import TocsinClient
import TocsinTime

/// How the double moves: the trigger arithmetic is TocsinTime's, the daemon's own.
extension InMemoryNotificationCenter {
    static func us(_ d: Date) -> Int64 { Int64((d.timeIntervalSince1970 * 1_000_000).rounded()) }

    static func us(_ d: Duration) -> Int64 {
        let (s, atto) = d.components
        return s &* 1_000_000 &+ atto / 1_000_000_000_000
    }

    func instant(_ d: Date) -> Instant { Instant(microseconds: Self.us(d)) }
    func date(_ i: Instant) -> Date { Date(timeIntervalSince1970: Double(i.microseconds) / 1e6) }

    static func notFound(_ key: String) -> TocsinClientError {
        TocsinClientError(.notFound, "no notification with key '\(key)'", field: "key", name: "io.github.tocsin.Error.NotFound")
    }

    /// A snooze of a key the double no longer holds, answered as the daemon answers it: the person
    /// snoozing a reminder that just popped up learns it is done and what to do instead, not
    /// merely that the key is unknown. The daemon caps a key it echoes at 64 characters.
    func gone(_ key: String) -> TocsinClientError {
        guard let last = log.last(where: { $0.key == key }) else { return Self.notFound(key) }
        let when = Timestamp.rfc3339(instant(last.time), in: zone)
        let what = switch last.kind {
        case .cancelled: "was cancelled at \(when)"
        case .acknowledged: "was acknowledged at \(when) and is done"
        case .unanswered: "rang unanswered until \(when) and is done"
        case .missed: "was missed at \(when) (the daemon was not running) and is done"
        case .fired, .snoozed, .interrupted, .other: "fired at \(when) and is done"
        }
        let shown = key.unicodeScalars.count > 64 ? String(String.UnicodeScalarView(key.unicodeScalars.prefix(64))) + "…" : key
        return TocsinClientError(.notFound, "notification '\(shown)' \(what): only a pending or ringing one can be snoozed; to be reminded again, schedule it again",
                                 field: "key", name: "io.github.tocsin.Error.NotFound")
    }

    /// Records the call; a failure the test queued is thrown instead of running it.
    func record(_ call: Call) throws(TocsinClientError) {
        calls.append(call)
        if !failures.isEmpty { throw failures.removeFirst() }
    }

    func checkBackends(_ content: NotificationContent) throws(TocsinClientError) {
        guard let known = backends, let wanted = content.backends else { return }
        for name in wanted where !known.contains(name) {
            throw TocsinClientError(.unknownBackend, "unknown backend '\(name)'", field: "backends",
                                    name: "io.github.tocsin.Error.UnknownBackend")
        }
    }

    static func invalidArgs(_ field: String, _ message: String) -> TocsinClientError {
        TocsinClientError(.invalidRequest, message, field: field, name: "org.freedesktop.DBus.Error.InvalidArgs")
    }

    static func invalidTrigger(_ field: String, _ message: String) -> TocsinClientError {
        TocsinClientError(.invalidTrigger, "field '\(field)': \(message)", field: field, name: "io.github.tocsin.Error.InvalidTrigger")
    }

    /// `@seconds.micro`, the text the client sends for an instant, which the daemon quotes back.
    static func written(_ i: Instant) -> String {
        let us = i.microseconds
        let s = us >= 0 ? us / 1_000_000 : -((-us + 999_999) / 1_000_000)
        let digits = String(us - s * 1_000_000)
        return "@\(s)." + String(repeating: "0", count: 6 - digits.count) + digits
    }

    /// `[daemon] min_period`, checked as the daemon checks it when it decodes a request (so
    /// before the backends and the first firing), with its words.
    func checkFloor(_ t: NotificationTrigger) throws(TocsinClientError) {
        let floor = TimeSpan(microseconds: Self.us(minPeriod))
        guard floor > .zero else { return }
        let rule = "closer than [daemon] min_period (\(floor)); a notification may fire at most once per min_period"
        switch t.kind {
        case .date: break
        case let .interval(d, repeats, _, _):
            let period = TimeSpan(microseconds: Self.us(d))
            if repeats, period < floor { throw Self.invalidArgs("every", "'every' is \(period), \(rule)") }
        case .calendar(let expression, _):
            guard let spec = try? CalendarSpec.parse(expression), let d = spec.closestElapses(below: floor) else { return }
            throw Self.invalidArgs("on_calendar", "'on_calendar' expression '\(spec.normalized)' can elapse \(d) after the elapse before, \(rule)")
        case .reminders(let before, _):
            let offsets = before.map { TimeSpan(microseconds: Self.us($0)) }
            guard let pair = RepeatFloor.closestOffsets(offsets, below: floor) else { return }
            throw Self.invalidArgs("remind_before", "offsets \(pair.first) and \(pair.second) of 'remind_before' (\(offsets[pair.first - 1]) and \(offsets[pair.second - 1])) are \(pair.distance) apart, \(rule)")
        }
    }

    /// The request's trigger as the daemon resolves it: `after` becomes an instant from now,
    /// which must fall within the daemon's horizon as every instant must.
    func resolve(_ t: NotificationTrigger) throws(TocsinClientError) -> Trigger {
        let now = instant(self.now)
        switch t.kind {
        case .date(let d): return .at(instant(d))
        case let .interval(d, repeats, count, until):
            let span = TimeSpan(microseconds: Self.us(d))
            let field = repeats ? "every" : "after"
            guard let first = TimeLimit.adding(span, to: now) else {
                throw Self.invalidArgs(field, TimeLimit.pastLatest(field: field, value: "\(span.microseconds)us"))
            }
            guard repeats else { return .at(first) }
            return .every(period: span, starting: first, count: count.map { UInt32($0) }, until: until.map(instant))
        case let .calendar(expression, timeZone):
            let directory = ZoneInfoDirectory()
            var local = zone
            if let timeZone {
                do { local = try directory.rules(named: timeZone) } catch {
                    throw TocsinClientError(.invalidTrigger, "field 'timezone': \(ZoneInfoDirectory.unknownZoneMessage(timeZone))", field: "timezone",
                                            name: "io.github.tocsin.Error.InvalidTrigger")
                }
            }
            do {
                let resolved = try CalendarSpec.parse(expression).resolvingZone(local: local, rules: directory.rules(named:))
                return .calendar(resolved.spec, zone: resolved.zone)
            } catch {
                throw TocsinClientError(.invalidRequest, "invalid 'on_calendar': \(error.message) (column \(error.column) of the value)",
                                        field: "on_calendar", name: "org.freedesktop.DBus.Error.InvalidArgs")
            }
        case let .reminders(offsets, event):
            // Equal offsets are one reminder, as the daemon merges them.
            return .remindBefore(event: instant(event), offsets: Trigger.mergingEqualOffsets(offsets.map { TimeSpan(microseconds: Self.us($0)) }))
        }
    }

    /// Why a trigger has no firing after now, naming its own field as the daemon does.
    func neverFires(_ trigger: Trigger) -> TocsinClientError {
        switch trigger {
        case .at: return Self.invalidTrigger("at", "'at' is in the past; a past time is never delivered")
        case .remindBefore: return Self.invalidTrigger("remind_before", "every reminder of 'remind_before' is in the past")
        case let .every(_, _, _, until):
            return Self.invalidTrigger("every", until != nil ? "'every' never fires: 'until' is before the next firing"
                                                               : "'every' never fires: the next firing would be after the latest instant Tocsin schedules")
        case .calendar(let spec, _): return Self.invalidTrigger("on_calendar", "'on_calendar' expression '\(spec.normalized)' never elapses again")
        }
    }

    /// The earliest firing or snooze end at or before `limit`: an occurrence due while a snooze
    /// runs comes first, as the daemon delivers it.
    func nextDue(upTo limit: Instant) -> (String, Instant)? {
        var best: (String, Instant)?
        for (key, e) in entries {
            guard let t = [e.snoozedUntil, e.next?.instant].compactMap({ $0 }).min(), t <= limit else { continue }
            if best.map({ t < $0.1 || (t == $0.1 && key < $0.0) }) ?? true { best = (key, t) }
        }
        return best
    }

    func fireDue(_ key: String) {
        guard var e = entries[key] else { return }
        let now = instant(self.now)
        if let until = e.snoozedUntil, e.next.map({ until <= $0.instant }) ?? true {
            // A snooze ends by delivering the last firing again.
            e.snoozedUntil = nil
            entries[key] = e
            if let last = e.last { deliver(key, e.request.content, due: until, occurrence: last) }
            if e.next == nil { entries[key] = nil }
            return
        }
        guard let occurrence = e.next else { return }
        // A newer occurrence ends the snooze of the one before: it is delivered as usual.
        e.snoozedUntil = nil
        e.last = occurrence
        e.next = e.trigger.next(after: max(now, occurrence.instant), previous: occurrence)
        entries[key] = e
        deliver(key, e.request.content, due: occurrence.instant, occurrence: occurrence)
        if e.next == nil { entries[key] = nil }
    }

    func type(of backend: String) -> BackendType { backendTypes[backend] ?? .dbusSignal }

    /// Where a firing goes, as the daemon routes it: the backends named, else every configured
    /// one but the ringing ones (which only ring when named).
    func targets(_ content: NotificationContent) -> [String] {
        content.backends ?? backends.map { $0.filter { type(of: $0) != .sound }.sorted() } ?? []
    }

    /// Quiet hours routed per backend with the daemon's defaults: popups and sounds hold, the
    /// rest (`dbus-signal` among them) deliver; critical notifications and alarms pass. Only a
    /// `dbus-signal` backend's delivery is a `fired` event; a double configured without names
    /// stands for a daemon whose default backends include one.
    func deliver(_ key: String, _ content: NotificationContent, due: Instant, occurrence: Occurrence) {
        expireQuiet()
        lastContent[key] = content
        let targets = targets(content)
        let quietNow = quiet.active
        let passes = !quietNow || content.urgency == .critical || targets.contains { type(of: $0) == .sound }
        var signalled = backends == nil && content.backends == nil
        for b in targets {
            if passes || !type(of: b).holdsDuringQuiet {
                if type(of: b) == .dbusSignal { signalled = true }
            } else {
                heldKeys.insert(key)
            }
        }
        quiet.held = heldKeys.count
        let late = instant(now) > due
        append(.fired, key, title: content.title, due: date(due), occurrence: Int(occurrence.number), late: late, backends: targets)
        guard signalled else { return }
        emit(.fired(FiredNotification(
            key: key, title: content.title, body: content.body, due: date(due), fired: now, occurrence: Int(occurrence.number),
            late: late, userInfo: content.userInfo, before: occurrence.offset.map { .microseconds($0.microseconds) })))
    }

    /// A quiet period with an end is over once the clock reaches it, as the daemon's is.
    func expireQuiet() {
        if quiet.active, let until = quiet.until, now >= until { endQuiet() }
    }

    /// Cancelling or replacing a notification drops what quiet hours hold of it.
    func cancel(_ key: String, signalled: Bool = true) {
        guard let e = entries.removeValue(forKey: key) else { return }
        dropHeld(key)
        if signalled { emit(.cancelled(key: key)) }
        append(.cancelled, key, title: e.request.content.title)
    }

    func dropHeld(_ key: String) {
        heldKeys.remove(key)
        quiet.held = heldKeys.count
    }

    /// What was held goes to backends that emit no events (popups, sounds), so ending quiet
    /// emits none.
    func endQuiet() {
        quiet = QuietState(active: false, source: .none)
        heldKeys = []
    }

    func emit(_ event: NotificationEvent) {
        for (scope, continuation) in streams.values {
            let passes: Bool
            switch (scope, event.key) {
            case (_, nil), (.all, _): passes = true
            case (.mine, let key?): passes = keysHere.contains(key)
            case (.keys(let set), let key?): passes = set.contains(key)
            }
            if passes { continuation.yield(event) }
        }
    }

    func append(_ kind: HistoryEntry.Kind, _ key: String, title: String? = nil, due: Date? = nil, until: Date? = nil,
                occurrence: Int? = nil, late: Bool? = nil, backends: [String] = []) {
        let title = title ?? entries[key]?.request.content.title ?? lastContent[key]?.title ?? ""
        log.append(HistoryEntry(time: now, kind: kind, key: key, title: title, due: due, until: until, occurrence: occurrence,
                                late: late, backends: backends))
    }

    func dropStream(_ id: Int) { streams[id] = nil }
}
