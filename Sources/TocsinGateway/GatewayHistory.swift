import DBus
import TocsinConfig
import TocsinCore
import TocsinTime
import TocsinModel

/// `History(a{sv} filter) -> aa{sv}`: the recorded events, newest first, as `tocsin history` shows them.
extension GatewayService {
    /// Reads the filter: `key` s, `since` x (unix microseconds), `limit` u (0: 100; at most 10000).
    /// Anything else is refused with the field named, as `Schedule` does.
    static func historyQuery(_ filter: DBusValue) throws(DBusError) -> HistoryQuery {
        var query = HistoryQuery()
        for (name, raw) in try filter.asStringDictionary() {
            let value = raw.unwrappedVariant
            func wrongType(_ wanted: String) -> DBusError {
                DBusError(.invalidArgs, "'\(name)' in the History filter must be \(wanted), found D-Bus type '\(value.type)'")
            }
            switch name {
            case "key":
                guard case .string(let key) = value else { throw wrongType("a string") }
                if let problem = NotificationFields.validateKey(key) { throw DBusError(.invalidArgs, "\(problem) in the History filter") }
                query.key = key
            case "since":
                guard case .int64(let us) = value else { throw wrongType("an int64 (unix microseconds)") }
                query.since = Instant(microseconds: us)
            case "limit":
                guard case .uint32(let n) = value else { throw wrongType("a uint32") }
                // Refused, not cut to the bound: a caller asking for more would not know it got less.
                guard n <= HistoryQuery.maxLimit else {
                    throw DBusError(.invalidArgs, "'limit' \(n) is over \(HistoryQuery.maxLimit), the most History returns per call; narrow it with 'since' or 'key'")
                }
                query.limit = n == 0 ? HistoryQuery.defaultLimit : Int(n)
            default:
                var message = "unknown key '\(Echo.capped(name))' in the History filter"
                if let s = Suggestion.closest(to: name, among: ["key", "since", "limit"]) { message += "; did you mean '\(s)'?" }
                throw DBusError(.invalidArgs, message + " (known: key, since, limit)")
            }
        }
        return query
    }

    /// The entries that fit one message, newest first: an answer never exceeds `[daemon] max_message_size`.
    static func history(_ center: TocsinCenter, filter: DBusValue, maxMessageSize: Int) async throws(DBusError) -> [DBusValue] {
        let query = try historyQuery(filter)
        let events = try await run { () throws(CenterError) in try await center.history(query) }
        let room = room(maxMessageSize)
        var used = 0
        var out: [DBusValue] = []
        out.reserveCapacity(events.count)
        for e in events {
            let v = encode(e)
            let size = DBusWireSize.size(of: v, at: 4 + used)
            if used + size > room { break }
            out.append(v)
            used += size
        }
        return [.array(.dictionary(key: .string, value: .variant), out)]
    }

    static func encode(_ e: HistoryEvent) -> DBusValue {
        var fields: [(String, DBusValue)] = [
            ("time", .int64(e.time.microseconds)),
            ("event", .string(e.kind.rawValue)),
            ("key", .string(e.key)),
            ("title", .string(e.title)),
            ("backends", .array(.string, (e.backends ?? []).map { .string($0) })),
        ]
        if let due = e.due { fields.append(("due", .int64(due.microseconds))) }
        if let until = e.until { fields.append(("until", .int64(until.microseconds))) }
        if let n = e.occurrence { fields.append(("occurrence", .uint32(n))) }
        if let late = e.late { fields.append(("late", .boolean(late))) }
        if let n = e.count { fields.append(("count", .uint32(n))) }
        return .vardict(fields)
    }
}
