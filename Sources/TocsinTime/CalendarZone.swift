/// Which zone a calendar expression runs in.
///
/// systemd reads a trailing word against the process's zone: `UTC`, then an abbreviation of
/// that zone (`daily CET` in Europe/Berlin is local time with DST forced off, not the zone file
/// `CET`), then a zone file. Tocsin's "process zone" is the notification's zone, known only when
/// the request is resolved, so `tocsin next`, the config, D-Bus requests and the state store all
/// call this one function with their zone rather than deciding at parse time.
extension CalendarSpec {
    /// The spec with its trailing word given its meaning against `local`, and the zone to search in.
    ///
    /// `rules` looks up a zone file by name (the caller's cache or `ZoneInfoDirectory.rules(named:)`);
    /// a word that is neither an abbreviation of `local` nor a zone is `unknownTimeZone` with its column.
    public func resolvingZone(local: TimeZoneRules, rules: (String) throws(TimeSyntaxError) -> TimeZoneRules)
        throws(TimeSyntaxError) -> (spec: CalendarSpec, zone: TimeZoneRules) {
        if utc { return (self, .utc) }
        guard let word = zone else { return (self, local) }
        // glibc's tzname: the standard name, then the DST one; systemd compares ignoring case.
        let names = local.tzNames
        for (j, name) in [names.0, names.1].enumerated() where !name.isEmpty && name.lowercased() == word.lowercased() {
            var resolved = self
            resolved.zone = nil
            resolved.dst = Int8(j)
            resolved.dstName = name
            return (resolved, local)
        }
        do {
            return (self, try rules(word))
        } catch {
            // A word without a slash was most likely meant as an abbreviation (`CEST` in a New
            // York notification): name the zone it was read against and the ones it has.
            var message = "unknown time zone '\(word)'"
            if !word.contains("/") {
                let own = [names.0, names.1].filter { !$0.isEmpty }
                let shown = own.enumerated().filter { own.firstIndex(of: $0.element) == $0.offset }.map(\.element)
                message += " (neither a zone name nor an abbreviation of \(local.identifier)"
                    + (shown.isEmpty ? ")" : ": \(shown.joined(separator: ", ")))")
            }
            throw TimeSyntaxError(.unknownTimeZone, message, column: zoneColumn.value)
        }
    }
}
