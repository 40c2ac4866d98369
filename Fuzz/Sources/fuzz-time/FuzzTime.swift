import FuzzSupport
import TocsinTime

let berlin = (try? ZoneInfoDirectory().rules(named: "Europe/Berlin")) ?? .utc

/// 2026-11-21 00:00:00 UTC: the `now` that `+<duration>` timestamps are relative to.
let now = Instant(seconds: 1_795_219_200)

/// The bytes as a duration and as a timestamp (the CLI and D-Bus fields take both). What parses
/// must print back to the same value: `List`, `tocsin list` and the log show the printed forms.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = fuzzBytes(data, size)
    guard bytes.count <= 256 else { return -1 }
    let text = String(decoding: bytes, as: UTF8.self)

    if let span = try? TimeSpan.parse(text), span.microseconds >= 0 {
        let printed = span.description
        guard let again = try? TimeSpan.parse(printed), again == span else {
            fuzzFailure("duration '\(text)' = \(span.microseconds) µs prints as '\(printed)', which parses differently")
        }
    }
    _ = try? TimeSpan.parsePositive(text)

    if let instant = try? Timestamp.parse(text, now: now) {
        // RFC 3339 has four-digit years: only instants in 0001...9999 can be printed and read back.
        let first: Int64 = -62_135_596_800_000_000, last: Int64 = 253_402_300_799_999_999
        if instant.microseconds >= first, instant.microseconds <= last {
            let utc = Timestamp.rfc3339UTC(instant)
            guard let again = try? Timestamp.parse(utc, now: now), again == instant else {
                fuzzFailure("timestamp '\(text)' = \(instant.microseconds) prints as '\(utc)', which parses differently")
            }
            _ = Timestamp.rfc3339(instant, in: berlin)
        }
    }

    // The written forms of a notification's time: what parses with a zone resolves to an instant
    // without trapping (a far date, a day count at the ends of the range), in both zones.
    if let written = try? Timestamp.parseWritten(text) {
        switch written {
        case .instant:
            break  // `Timestamp.parse` above read it and printed it back
        case .local(let c):
            _ = Timestamp.instant(of: c, in: berlin)
        case .day(let days, let time):
            _ = Timestamp.instant(days: days, at: time, from: now, in: berlin)
        }
    }
    return 0
}

@_cdecl("fuzz_time_main")
public func entry(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> CInt {
    runFuzzer(argc, argv)
}
