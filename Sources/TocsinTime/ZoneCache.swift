import Synchronization

/// Zone rules by name, loaded once each: a million notifications in one zone share one table.
/// Shared by the center (resolving requests) and the store thread (decoding rows), hence the lock.
///
/// Also the one answer to "is this a zone name" for every surface (the config check, `Schedule`,
/// `[quiet]`): `zone(named:in:)` and its message.
public final class ZoneCache: Sendable {
    public let directory: ZoneInfoDirectory
    private let cache = Mutex<[String: TimeZoneRules]>([:])
    public init(directory: ZoneInfoDirectory = ZoneInfoDirectory()) { self.directory = directory }

    /// The rules of `name`, with the directory's own message when it is no zone.
    public func rules(_ name: String) throws(TimeSyntaxError) -> TimeZoneRules {
        if let r = cache.withLock({ $0[name] }) { return r }
        let r = try directory.rules(named: name)
        cache.withLock { $0[name] = r }
        return r
    }

    /// The rules of a zone a user named, or `unknown time zone 'NAME'` (with a hint when the name
    /// is an offset or malformed) followed by ` in PLACE`
    /// (`[daemon]`, `[[quiet.window]] #2`): the wording every surface shows, whatever the
    /// directory found wrong with the name.
    public func zone(named name: String, in place: String? = nil) throws(TimeSyntaxError) -> TimeZoneRules {
        do { return try rules(name) } catch {
            throw TimeSyntaxError(.unknownTimeZone, ZoneInfoDirectory.unknownZoneMessage(name, in: place), column: 1)
        }
    }
}
