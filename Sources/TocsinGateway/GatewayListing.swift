import DBus
import TocsinCore
import TocsinTime

/// `List` and `ListPage`: the replies that grow with the schedule, kept under the bus's message
/// size. `ListPage` fills a page up to `limit` notifications and up to the bytes a message may
/// have, and hands back the key to continue after; `List` keeps its one-reply shape for the
/// clients that use it, and refuses (before building the whole reply) when it would not fit.
extension GatewayService {
    /// Notifications per page when the caller passes 0, and the most it may ask for.
    public static let defaultPageSize = 1000
    public static let maxPageSize = 10_000

    /// The bytes left for the notifications of one reply: the header, the array's length, and a
    /// `next` key (at most 255 bytes) come off the bus's limit.
    /// The one array of notifications may hold at most 64 MiB whatever the message size.
    static func room(_ maxMessageSize: Int) -> Int {
        min(min(maxMessageSize, DBusWireSize.messageMaximum) - DBusWireSize.headerAllowance - 8 - 512, DBusWireSize.arrayMaximum)
    }

    static func listPage(_ center: TocsinCenter, after cursor: String, requested: UInt32,
                         maxMessageSize: Int, call: DBusMethodCall? = nil) async throws(DBusError) -> [DBusValue] {
        let limit = requested == 0 ? defaultPageSize : min(Int(requested), maxPageSize)
        let page = try await run { () throws(CenterError) in try await center.listPage(after: cursor, limit: limit) }
        let all = await center.defaultTargets
        let room = room(maxMessageSize)
        var used = 0
        var entries: [DBusValue] = []
        entries.reserveCapacity(page.items.count)
        for p in page.items {
            let v = encode(p, allBackends: all)
            let size = DBusWireSize.size(of: v, at: 4 + used)
            if used + size > room {
                guard !entries.isEmpty else {
                    throw DBusError(.limitsExceeded, "notification '\(p.notification.key)' alone is \(size) bytes, more than a message on this bus may carry ([daemon] max_message_size)")
                }
                break
            }
            entries.append(v)
            used += size
        }
        let cut = entries.count < page.items.count
        let next = (cut || page.more) ? page.items[entries.count - 1].notification.key : ""
        return await replying(call, [.array(.dictionary(key: .string, value: .variant), entries), .string(next)],
                              entries: entries.count, maxMessageSize: maxMessageSize)
    }

    /// Everything pending in one reply, soonest first (ringing ones first of all), as `List`
    /// always answered; walked in pages so that a schedule too large for one message is refused
    /// after at most a message's worth of work, not after building all of it.
    static func listAll(_ center: TocsinCenter, maxMessageSize: Int, call: DBusMethodCall? = nil) async throws(DBusError) -> [DBusValue] {
        let all = await center.defaultTargets
        let room = room(maxMessageSize)
        var used = 0
        var entries: [(next: Instant?, key: String, value: DBusValue)] = []
        var cursor = ""
        while true {
            // Small pages: each is one job of the loop, and firings and other calls run between them.
            let page = try await run { () throws(CenterError) in try await center.listPage(after: cursor, limit: listAllPageSize) }
            for p in page.items {
                let v = encode(p, allBackends: all)
                used += DBusWireSize.size(of: v, at: 4 + used)
                if used > room {
                    let pending = await center.activeCount
                    throw DBusError(.limitsExceeded, "List would return \(pending) notifications in more than the \(room) bytes one reply on this bus may carry; ListPage returns them in pages ('tocsin list' uses it)")
                }
                entries.append((p.nextFire, p.notification.key, v))
            }
            guard page.more, let last = page.items.last else { break }
            cursor = last.notification.key
        }
        let count = entries.count
        let collected = entries
        @Sendable func sort() -> [DBusValue] {
            var entries = collected
            entries.sort { a, b in
                switch (a.next, b.next) {
                case (nil, nil): return a.key < b.key
                case (nil, _): return true
                case (_, nil): return false
                case (let x?, let y?): return x != y ? x < y : a.key < b.key
                }
            }
            return entries.map(\.value)
        }
        let sorted = count > offLoopEntries ? await runOffLoop(sort) : sort()
        return await replying(call, [.array(.dictionary(key: .string, value: .variant), sorted)], entries: count, maxMessageSize: maxMessageSize)
    }

    static let listAllPageSize = 250
    /// Replies with more entries than this are marshalled away from the loop.
    static let offLoopEntries = 256

    /// A large reply is marshalled on a thread of its own (`prepareReply`), still inside the
    /// `ReplyGate`, so the gate bounds the memory of marshalling too; the values returned then
    /// only carry the signature. Small ones go back to the export as values.
    static func replying(_ call: DBusMethodCall?, _ values: [DBusValue], entries: Int, maxMessageSize: Int) async -> [DBusValue] {
        guard let call, entries > offLoopEntries else { return values }
        await call.prepareReply(values, maxMessageSize: maxMessageSize)
        return values.map { v in if case .array(let t, _) = v { return .array(t, []) }; return v }
    }
}
