public import TocsinTime
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The reads `NotificationFields` makes of the surface a notification comes from.
///
/// The config file answers them from a TOML table, with positions (`TableReader`); the D-Bus API
/// answers them straight from the call's `a{sv}` (TocsinGateway's `DBusFieldReader`), so a
/// `Schedule` call is never dressed up as a TOML document. Both surfaces still share every rule
/// and message: the field table and its checks live in `NotificationFields`, and the derived
/// reads (`requiredString`, `choice`, `duration`, string forms of times) in the extension below.
public protocol FieldReader {
    /// How the table is named in messages: `[[notification]] #3`, `the notification spec`.
    var context: String { get }
    var issues: [FieldIssue] { get }
    /// Where problems that concern no single key are reported.
    var tableLocation: SourceLocation { get }
    func has(_ key: String) -> Bool
    func location(of key: String) -> SourceLocation
    func valueLocation(of key: String) -> SourceLocation
    /// Where element `index` of the array under `key` is written (the value's place if unknown).
    func elementLocation(of key: String, at index: Int) -> SourceLocation
    /// Records a problem at the key's value (`atValue`) or at the key itself.
    mutating func report(_ key: String, _ message: String, atValue: Bool)
    mutating func report(_ issue: FieldIssue)
    /// Marks a key as known without reading it (for keys read by someone else).
    mutating func accept(_ key: String)
    mutating func string(_ key: String) -> String?
    mutating func bool(_ key: String) -> Bool?
    mutating func integer(_ key: String, in range: ClosedRange<Int64>) -> Int64?
    mutating func stringArray(_ key: String) -> [String]?
    /// A table of string values, in the order written.
    mutating func stringTable(_ key: String) -> [(key: String, value: String)]?
    /// A date-time: the file's own TOML date-times, or a string in the CLI/D-Bus forms.
    mutating func timeValue(_ key: String) -> TimeValue?
    /// Runs a TocsinTime parser on the key's text; a failure is reported at the offending column
    /// where the surface has columns.
    mutating func parse<T>(_ key: String, _ text: String, _ body: (String) throws(TimeSyntaxError) -> T) -> T?
    /// Reports every key that was never read, suggesting the closest known one.
    mutating func finish(known: [String])
}

extension FieldReader {
    public mutating func report(_ key: String, _ message: String) {
        report(key, message, atValue: true)
    }

    public mutating func requiredString(_ key: String) -> String? {
        if !has(key) {
            report(FieldIssue(field: key, location: tableLocation, message: "missing required key '\(key)' in \(context)"))
            accept(key)
            return nil
        }
        return string(key)
    }

    /// One of a fixed set of words.
    ///
    /// Always inlined: `NotificationFields.decode` is generic over the reader and is not
    /// specialized for the D-Bus one, so an outlined `choice` looked up the metadata of `T?` and
    /// `(String, T)` on every call, four times per `Schedule` even with none of the keys given.
    /// Inlined, `T` is the caller's concrete type.
    @inline(__always)
    public mutating func choice<T>(_ key: String, _ options: [(String, T)]) -> T? {
        guard let s = string(key) else { return nil }
        if let hit = options.first(where: { $0.0 == s }) { return hit.1 }
        let names = options.map { "'\($0.0)'" }.joined(separator: ", ")
        report(key, "'\(key)' must be one of \(names), found '\(s)'")
        return nil
    }

    /// A systemd.time(7) span such as `15min`; `positive` refuses zero and negative spans, and
    /// every span longer than `TimeLimit.longestSpan` is refused.
    public mutating func duration(_ key: String, positive: Bool) -> TimeSpan? {
        guard let s = string(key) else { return nil }
        let span = parse(key, s) { text throws(TimeSyntaxError) in
            positive ? try TimeSpan.parsePositive(text) : try TimeSpan.parse(text)
        }
        return span.flatMap { within(key, $0, text: s) }
    }

    /// `span` when it fits `TimeLimit`, else reported (with the text as written) and nil; at
    /// `location` (an array's element) when given, else at the key's value.
    public mutating func within(_ key: String, _ span: TimeSpan, text: String, at location: SourceLocation? = nil) -> TimeSpan? {
        if TimeLimit.fits(span) { return span }
        let message = TimeLimit.pastLatest(field: key, value: text.trimmingCharacters(in: .whitespaces))
        if let location { report(FieldIssue(field: key, location: location, message: message)) } else { report(key, message) }
        return nil
    }

    /// `value` when its instant fits `TimeLimit` (a relative one: its span), else reported and nil.
    public mutating func within(_ key: String, _ value: TimeValue, text: String) -> TimeValue? {
        let shown = text.trimmingCharacters(in: .whitespaces)
        switch value {
        case .relative(let d): return within(key, d, text: shown).map { _ in value }
        case .instant(let t):
            guard let refusal = TimeLimit.refusal(of: t, field: key, value: shown) else { return value }
            report(key, refusal)
            return nil
        case .local, .day: return value  // resolved (and checked) with its zone at scheduling
        }
    }

    /// The string forms of a time every surface accepts: `+15min` (relative to scheduling),
    /// RFC 3339, `@unix`, and systemd's absolute timestamps (`2026-12-24 18:00`, `18:00`,
    /// `tomorrow`: `Timestamp.parseWritten`), those without a zone read in the notification's.
    public mutating func timeValue(_ key: String, text s: String) -> TimeValue? {
        let trimmed = s.trimmingCharacters(in: .whitespaces)
        if trimmed.hasPrefix("+") {
            let value = parse(key, String(trimmed.dropFirst())) { t throws(TimeSyntaxError) -> TimeValue in
                .relative(try TimeSpan.parse(t))
            }
            return value.flatMap { within(key, $0, text: s) }
        }
        let value = parse(key, s) { t throws(TimeSyntaxError) -> TimeValue in
            switch try Timestamp.parseWritten(t) {
            case .instant(let i): return .instant(i)
            case .local(let c): return .local(c)
            case .day(let days, let time): return .day(days: days, time: time)
            }
        }
        return value.flatMap { within(key, $0, text: s) }
    }

    /// NUL cannot travel over D-Bus or into argv and environments; refused at the door on every surface.
    public mutating func refusingNUL(_ key: String, _ s: String) -> String? {
        if Self.containsNUL(s) {
            report(key, "'\(key)' must not contain a NUL character")
            return nil
        }
        return s
    }

    /// `refusingNUL` for a string inside an array or table (an argv element, an action's id or
    /// label, a `user_info` entry): these reach the same places, and are reported where they are
    /// written rather than at the start of the whole value. `name` is how a key is called.
    public mutating func refusingNUL(_ field: String, _ s: String, at location: SourceLocation, name: String? = nil) -> String? {
        if Self.containsNUL(s) {
            report(FieldIssue(field: field, location: location, message: "\(name ?? "'\(field)'") must not contain a NUL character"))
            return nil
        }
        return s
    }

    /// With `memchr` over the contiguous bytes: `utf8.contains` steps String's generic index,
    /// about 25 instructions a byte, and every string field of every call passes through here,
    /// on the loop that fires. A client's 4 MB string cost the debug daemon (the one the tests
    /// run) 30 ms in a generic byte loop, long enough to make a firing due meanwhile late.
    public static func containsNUL(_ s: String) -> Bool {
        var bytes = s
        return bytes.withUTF8 { b in
            guard let base = b.baseAddress else { return false }
            return memchr(base, 0, b.count) != nil
        }
    }

    /// Reports the keys of `present` that were never read, suggesting the closest known one.
    ///
    /// A report shows the first `Diagnostic.reportLimit` issues, in the order of their locations
    /// (a config's) or as found (a backend's; D-Bus replies are never cut). An unknown key with
    /// that many issues of this reader located before it is never shown either way, so no
    /// suggestion is searched for it: for 400,000 unknown keys the searches were four fifths of
    /// `tocsin check`'s time. `keys` come in the order of their locations, as a table holds them.
    public mutating func reportUnknown(_ keys: some Sequence<(key: String, location: SourceLocation)>, known: [String]) {
        let found = issues.map(\.location).sorted()
        var foundBefore = 0  // issues found before this call, located before the current key
        var unknownSeen = 0, unknownBefore = 0, previous: SourceLocation?
        for (key, location) in keys {
            while foundBefore < found.count, found[foundBefore] < location { foundBefore += 1 }
            if let p = previous, p < location { unknownBefore = unknownSeen }
            previous = location
            unknownSeen += 1
            var message = "unknown key '\(Echo.capped(key))' in \(context)"
            if foundBefore + unknownBefore < Diagnostic.reportLimit, let s = Suggestion.closest(to: key, among: known) {
                message += "; did you mean '\(s)'?"
            }
            report(FieldIssue(field: key, location: location, message: message))
        }
    }
}
