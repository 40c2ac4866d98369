/// `dst_gap`: what happens to a local time that a DST change skips (spring forward).
public enum DSTGapPolicy: String, Hashable, Sendable, CaseIterable {
    /// systemd's behaviour: the skipped time does not fire that day.
    case skip
    /// Fire at the first valid instant after the gap (the instant of the change).
    case shift
}

/// `dst_fold`: which occurrences of a local time that a DST change repeats (fall back) fire.
public enum DSTFoldPolicy: String, Hashable, Sendable, CaseIterable {
    /// systemd's behaviour: only the first occurrence.
    case first
    /// Both occurrences.
    case both
}

extension CalendarSpec {
    /// The largest change of UTC offset any zone has made (Antarctica/Troll's is 2 h); bounds how
    /// far before `instant` a change can still produce an occurrence after it.
    private static let maxOffsetChange: Int64 = 3 * 3600
    /// 2200-01-01T00:00:00Z: systemd's search ends in 2199.
    private static let searchEnd: Int64 = 7_258_118_400

    /// The first elapse strictly after `instant`, or nil when it never elapses again.
    ///
    /// With the default policies (`skip`, `first`) this is exactly systemd's answer, quirks included.
    /// The other policies only add instants to systemd's sequence (the earliest of both wins), so
    /// they can never lose a firing systemd would make: `shift` adds the instant of a change for
    /// every gap in which the expression matches a skipped local time, `both` adds both instants of
    /// every repeated local time it matches. The added instants are found by running the expression
    /// on wall-clock time (as if in UTC) inside each gap or fold. An expression forced to standard
    /// or summer time (`... CET`) or running in UTC sees no gaps or folds, so the policies do nothing.
    ///
    /// When the expression names a zone (`timeZoneName`), `zone` must be that zone's rules; `UTC` needs none.
    public func nextElapse(after instant: Instant, in zone: TimeZoneRules) -> Instant? {
        let systemd = systemdPastItsValve(after: instant, in: zone)
        guard dstGap == .shift || dstFold == .both, !utc, dst < 0 else { return systemd }
        var wall = self
        wall.utc = true
        wall.zone = nil
        wall.dstGap = .skip
        wall.dstFold = .first
        let after = instant.microseconds
        var best = systemd?.microseconds
        func offer(_ t: Int64) { if t > after, best.map({ t < $0 }) ?? true { best = t } }
        /// The first wall-clock match in [from, to) (wall microseconds), or nil.
        func wallMatch(from: Int64, to: Int64) -> Int64? {
            guard let w = wall.systemdNextElapse(after: Instant(microseconds: from - 1), in: .utc)?.microseconds,
                  w < to else { return nil }
            return w
        }
        var cursor = CivilMath.floorDiv(after, 1_000_000) - Self.maxOffsetChange
        while let change = zone.nextOffsetChange(after: cursor, before: Self.searchEnd) {
            let t = change.at
            // Every instant a change adds lies within maxOffsetChange of it.
            if let b = best, (t - Self.maxOffsetChange) * 1_000_000 > b { break }
            let from = Int64(change.from), to = Int64(change.to)
            if to > from {
                // Gap: local [t+from, t+to) does not exist; `shift` fires it at t.
                if dstGap == .shift, t * 1_000_000 > after,
                   wallMatch(from: (t + from) * 1_000_000, to: (t + to) * 1_000_000) != nil {
                    offer(t * 1_000_000)
                }
            } else if dstFold == .both {
                // Fold: local [t+to, t+from) happens twice, first at offset `from`, then at `to`.
                let start = (t + to) * 1_000_000, end = (t + from) * 1_000_000
                if let w = wallMatch(from: max(start, after + from * 1_000_000 + 1), to: end) { offer(w - from * 1_000_000) }
                if let w = wallMatch(from: max(start, after + to * 1_000_000 + 1), to: end) { offer(w - to * 1_000_000) }
            }
            cursor = t
        }
        return best.map { Instant(microseconds: $0) }
    }
}

extension CalendarSpec {
    /// systemd's answer; where its search gives up circling on a local time that a DST gap
    /// skips, the search again from the gap's far side. systemd does that when a gap does not
    /// start on the hour (Pacific/Chatham's 02:45 → 03:45) and then schedules nothing, which for
    /// a daemon would end a notification for good after one firing. The search visits
    /// candidates in order, so nothing before the gap matched: starting at its far side finds the
    /// first elapse that exists, as `skip` means. A give-up with no gap to explain it stays
    /// systemd's answer, none.
    func systemdPastItsValve(after instant: Instant, in zone: TimeZoneRules) -> Instant? {
        var from = instant
        for _ in 0..<8 {
            switch systemdSearch(after: from, in: zone) {
            case .found(let t): return t
            case .never: return nil
            case .gaveUp(let wall):
                guard let gap = zone.gap(holding: wall), gap * 1_000_000 > from.microseconds else { return nil }
                from = Instant(microseconds: gap * 1_000_000 - 1)
            }
        }
        return nil
    }
}

extension TimeZoneRules {
    /// The instant of the change whose gap skips local wall time `wall` (seconds as if in UTC),
    /// or nil when that local time exists.
    func gap(holding wall: Int64) -> Int64? {
        var cursor = wall - 86_400
        while let change = nextOffsetChange(after: cursor, before: wall + 86_400) {
            let from = Int64(change.from), to = Int64(change.to)
            if to > from, wall >= change.at + from, wall < change.at + to { return change.at }
            cursor = change.at
        }
        return nil
    }

    /// The first instant (unix seconds) after `seconds` and before `limit` at which the UTC offset
    /// changes, with the offsets before and after; changes of only the name or DST flag are passed over.
    func nextOffsetChange(after seconds: Int64, before limit: Int64) -> (at: Int64, from: Int, to: Int)? {
        var cursor = seconds
        let offset = offsetAndDST(seconds).offset
        while cursor < limit {
            if let span = constantSpan(around: cursor) {
                guard span.end != .max, span.end < limit else { return nil }
                cursor = span.end
                let next = offsetAndDST(cursor).offset
                if next != offset { return (cursor, offset, next) }
                continue
            }
            // The footer's yearly rule: probe day by day, then bisect to the second.
            let probe = min(cursor + 86_400, limit)
            if offsetAndDST(probe).offset != offset {
                var lo = cursor, hi = probe
                while hi - lo > 1 {
                    let mid = lo + (hi - lo) / 2
                    if offsetAndDST(mid).offset == offset { lo = mid } else { hi = mid }
                }
                return (hi, offset, offsetAndDST(hi).offset)
            }
            if probe == limit { return nil }
            cursor = probe
        }
        return nil
    }
}
