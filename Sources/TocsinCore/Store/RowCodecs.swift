import TocsinModel
import TocsinTime
#if canImport(Glibc)
import Glibc
import TocsinSystem
#endif

// How values are laid out in the state database's columns: the one place that decides it, so
// the writer and the reader cannot disagree.

/// A row that cannot be read back (its zone is gone from the system, ...).
struct RowProblem: Error, CustomStringConvertible { var description: String }

/// Length-prefixed string lists: any string (quotes, commas, newlines) round-trips, no JSON needed.
enum ListCodec {
    static func encode(_ items: [String]) -> String {
        var out = ""
        for s in items { out += "\(s.utf8.count):"; out += s }
        return out
    }

    static func decode(_ text: String) -> [String]? {
        var out: [String] = []
        let bytes = Array(text.utf8)
        var i = 0
        while i < bytes.count {
            var n = 0
            while i < bytes.count, bytes[i] != UInt8(ascii: ":") {
                guard bytes[i] >= 48, bytes[i] <= 57 else { return nil }
                n = n * 10 + Int(bytes[i] - 48)
                i += 1
            }
            i += 1
            guard i + n <= bytes.count else { return nil }
            out.append(String(decoding: bytes[i..<(i + n)], as: UTF8.self))
            i += n
        }
        return out
    }
}

/// A text column's decoded value as the row before wrote it. Rows of one app share their backend
/// list and missed policy; comparing the bytes SQLite holds is cheaper than making the string and
/// decoding it again, a million times at start-up.
struct RepeatedText<Value> {
    private var last: (bytes: [UInt8]?, value: Value)?

    mutating func decode(_ q: SQLiteStatement, _ col: Int32, _ make: (String?) -> Value) -> Value {
        q.withText(col) { buf in
            if let last, Self.same(last.bytes, buf) { return last.value }
            let bytes = buf.map(Array.init)
            let value = make(bytes.map { String(decoding: $0, as: UTF8.self) })
            last = (bytes, value)
            return value
        }
    }

    private static func same(_ a: [UInt8]?, _ b: UnsafeBufferPointer<UInt8>?) -> Bool {
        guard let a, let b else { return a == nil && b == nil }
        guard a.count == b.count else { return false }
        // An empty buffer may have no address at all.
        guard let bp = b.baseAddress, !a.isEmpty else { return true }
        return a.withUnsafeBufferPointer { memcmp($0.baseAddress!, bp, b.count) == 0 }
    }
}

struct TriggerColumns {
    var kind: Int64, a: Int64?, b: Int64?, c: Int64?, d: Int64?, text: String?

    init(_ t: Trigger) {
        switch t {
        case .at(let i): kind = 1; a = i.microseconds; b = nil; c = nil; d = nil; text = nil
        case .every(let p, let s, let count, let until):
            kind = 2; a = p.microseconds; b = s.microseconds; c = count.map(Int64.init); d = until?.microseconds; text = nil
        case .calendar(let spec, _): kind = 3; a = nil; b = nil; c = nil; d = nil; text = CalendarText.encode(spec)
        case .remindBefore(let event, let offsets):
            kind = 4; a = event.microseconds; b = nil; c = nil; d = nil
            text = offsets.map { String($0.microseconds) }.joined(separator: ",")
        }
    }

    /// The columns are read only when `kind` uses them (autoclosures): start-up decodes a million
    /// rows, and each column read is a call into SQLite.
    static func decode(kind: Int64, a: @autoclosure () -> Int64?, b: @autoclosure () -> Int64?, c: @autoclosure () -> Int64?,
                       d: @autoclosure () -> Int64?, text: @autoclosure () -> String?, zone: @autoclosure () -> String,
                       zones: ZoneCache, calendars: inout [String: CalendarSpec]) -> Trigger? {
        switch kind {
        case 1: return a().map { .at(Instant(microseconds: $0)) }
        case 2:
            guard let a = a(), let b = b(), a > 0 else { return nil }
            return .every(period: TimeSpan(microseconds: a), starting: Instant(microseconds: b),
                          count: c().map { UInt32(clamping: $0) }, until: d().map { Instant(microseconds: $0) })
        case 3:
            guard let text = text() else { return nil }
            let spec: CalendarSpec
            if let cached = calendars[text] { spec = cached } else {
                guard let parsed = CalendarText.decode(text) else { return nil }
                if calendars.count < 4096 { calendars[text] = parsed }
                spec = parsed
            }
            guard let local = try? zones.rules(zone()),
                  let resolved = try? spec.resolvingZone(local: local, rules: zones.rules) else { return nil }
            return .calendar(resolved.spec, zone: resolved.zone)
        case 4:
            guard let a = a(), let text = text() else { return nil }
            let offsets = text.split(separator: ",").compactMap { Int64($0) }.map { TimeSpan(microseconds: $0) }
            return .remindBefore(event: Instant(microseconds: a), offsets: offsets)
        default: return nil
        }
    }
}

/// A calendar trigger's text column: the normalized expression, then the DST policies that are
/// not the default by name (`*-*-* 02:30:00;dst_gap=shift;dst_fold=both`). A normalized form never
/// holds `;`, and rows written before the policies existed read back with the defaults.
enum CalendarText {
    static func encode(_ spec: CalendarSpec) -> String {
        var text = spec.normalized
        if spec.dstGap != .skip { text += ";dst_gap=" + spec.dstGap.rawValue }
        if spec.dstFold != .first { text += ";dst_fold=" + spec.dstFold.rawValue }
        return text
    }

    static func decode(_ text: String) -> CalendarSpec? {
        let parts = text.split(separator: ";", omittingEmptySubsequences: false)
        guard var spec = try? CalendarSpec.parse(String(parts[0])) else { return nil }
        for part in parts.dropFirst() {
            let pair = part.split(separator: "=", maxSplits: 1).map(String.init)
            guard pair.count == 2 else { return nil }
            switch pair[0] {
            case "dst_gap": guard let g = DSTGapPolicy(rawValue: pair[1]) else { return nil }; spec.dstGap = g
            case "dst_fold": guard let f = DSTFoldPolicy(rawValue: pair[1]) else { return nil }; spec.dstFold = f
            default: return nil
            }
        }
        return spec
    }
}

struct AlertColumns {
    var kind: Int64, a: Int64?, b: Int64?
    init(_ s: AlertState) {
        switch s {
        case .idle: kind = 0; a = nil; b = nil
        case .ringing(let since, let rings): kind = 1; a = since.microseconds; b = Int64(rings)
        case .snoozed(let until): kind = 2; a = until.microseconds; b = nil
        case .unanswered(let rings): kind = 3; a = nil; b = Int64(rings)
        }
    }
    static func decode(kind: Int64, a: Int64?, b: Int64?) -> AlertState {
        switch kind {
        case 1: return .ringing(since: Instant(microseconds: a ?? 0), rings: UInt32(clamping: b ?? 0))
        case 2: return .snoozed(until: Instant(microseconds: a ?? 0))
        case 3: return .unanswered(rings: UInt32(clamping: b ?? 0))
        default: return .idle
        }
    }
}
