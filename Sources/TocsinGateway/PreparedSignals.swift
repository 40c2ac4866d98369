import DBus
import Glibc
import TocsinCore
import TocsinTime

/// `Fired` signals built ahead of their instant (`BusLink.firedPreparer`), by key, each with the
/// firing it was built for. `BusLink.firedEmitter` sends one only for an identical firing: a
/// firing that went out late, was replaced, or was routed elsewhere by quiet hours since is built
/// again.
struct PreparedSignals {
    private var entries: [String: (firing: Firing, message: DBusMessage)] = [:]
    /// Signals sent as they were prepared; for tests.
    private(set) var used = 0

    var count: Int { entries.count }

    /// How many are kept: twice what the center claims ahead at once. Those of claims a request
    /// dropped are never sent; when they would pass this, all are dropped (the emitter then
    /// builds what it finds missing).
    static let limit = 2 * TocsinCenter.aheadLimit

    /// A signal is stale once its firing's instant is this far behind the firings being prepared
    /// or sent: its claim was dropped, and nothing of it goes out. (Firings are claimed at most
    /// `CenterOptions.claimAhead` before their instant and released at it.)
    static let staleAfter = TimeSpan.seconds(60)

    func isPrepared(_ f: Firing) -> Bool { entries[f.key].map { Self.identical($0.firing, f) } ?? false }

    mutating func insert(_ built: [(Firing, DBusMessage)]) {
        if let earliest = built.lazy.map(\.0.fired).min() { evict(before: earliest - Self.staleAfter) }
        if entries.count + built.count > Self.limit { entries = [:] }
        for (f, m) in built { entries[f.key] = (f, m) }
    }

    /// The signals prepared for `firings` (nil where there is none for an identical firing). An
    /// entry of their keys built for anything else is dropped, as are stale ones.
    mutating func take(_ firings: [Firing]) -> [DBusMessage?] {
        let ready = firings.map { f -> DBusMessage? in
            guard let p = entries.removeValue(forKey: f.key), Self.identical(p.firing, f) else { return nil }
            used += 1
            return p.message
        }
        if let earliest = firings.lazy.map(\.fired).min() { evict(before: earliest - Self.staleAfter) }
        // A dictionary keeps its capacity when emptied: a burst's would stay allocated.
        if entries.isEmpty { entries = [:] }
        return ready
    }

    private mutating func evict(before instant: Instant) {
        guard entries.contains(where: { $0.value.firing.fired < instant }) else { return }
        entries = entries.filter { $0.value.firing.fired >= instant }
    }

    /// Equal, and with the same bytes in every string the signal carries: `String ==` also holds
    /// for canonically equivalent spellings (a precomposed "é" and "e" with a combining accent),
    /// which a replaced notification may differ by.
    static func identical(_ a: Firing, _ b: Firing) -> Bool {
        guard a == b else { return false }
        // Compared in place where the bytes are contiguous (native and small strings): a
        // burst compares several strings for each of its thousand signals at its instant.
        func same(_ s: String, _ t: String) -> Bool {
            let inPlace = s.utf8.withContiguousStorageIfAvailable { a in
                t.utf8.withContiguousStorageIfAvailable { b in
                    a.count == b.count && (a.isEmpty || memcmp(a.baseAddress!, b.baseAddress!, a.count) == 0)
                }
            }
            return (inPlace ?? nil) ?? s.utf8.elementsEqual(t.utf8)
        }
        let x = a.notification, y = b.notification
        return same(x.key, y.key) && same(x.title, y.title) && same(x.body, y.body)
            && a.backends.elementsEqual(b.backends, by: same)
            && x.userInfo.allSatisfy { k, v in
                guard let i = y.userInfo.index(forKey: k) else { return false }
                return same(k, y.userInfo[i].key) && same(v, y.userInfo[i].value)
            }
    }
}
