import FuzzSupport
import Synchronization
import TocsinTime

/// Zones whose rules make the search work hardest: none, a European and an American DST zone,
/// and Lord Howe's 30-minute shift. Loaded once; a missing one is left out rather than failing.
let fixedZones: [TimeZoneRules] = {
    let directory = ZoneInfoDirectory()
    var out: [TimeZoneRules] = [.utc]
    for name in ["Europe/Berlin", "America/New_York", "Australia/Lord_Howe"] {
        if let rules = try? directory.rules(named: name) { out.append(rules) }
    }
    return out
}()

/// Zones named inside expressions, read once each: the fuzzer tries the same few names often.
let namedZones = Mutex<[String: TimeZoneRules?]>([:])

func rules(named name: String) -> TimeZoneRules? {
    if let cached = namedZones.withLock({ $0[name] }) { return cached }
    let loaded = try? ZoneInfoDirectory().rules(named: name)
    namedZones.withLock { $0[name] = loaded }
    return loaded
}

let slowest: SlowestCall = {
    let s = SlowestCall(label: "nextElapse (CPU time)")
    ExitReport.register(s)
    return s
}()

/// One call may take at most this much CPU time. systemd's search gives up after 1000 rounds, so
/// even the worst expressions take a few tens of milliseconds under ASan and coverage
/// instrumentation; a second means the bound is broken (a hang in production, where the
/// scheduler actor would stall every notification behind it).
let budgetMicros: Int64 = 1_000_000

/// 2026-03-20 09:46:40 UTC, close to a DST change in Europe and just after one in America.
let fixedBase: Int64 = 1_774_000_000_000_000

/// The bytes are the expression, so seeds and the dictionary are plain text. A hash of them picks
/// a second base instant (1970-2150) and two zones, so each input tests a deterministic case.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = fuzzBytes(data, size)
    guard bytes.count <= 256 else { return -1 }
    let text = String(decoding: bytes, as: UTF8.self)
    let directory = ZoneInfoDirectory()
    let spec: CalendarSpec
    do {
        spec = try CalendarSpec.parse(text, zoneExists: { directory.hasZone(named: $0) })
    } catch {
        if error.column < 1 { fuzzFailure("calendar error column \(error.column) for '\(text)'") }
        return 0
    }

    // The normalized form is what `tocsin next` and List print; it must mean the same expression.
    let normalized = spec.normalized
    do {
        let again = try CalendarSpec.parse(normalized, zoneExists: { directory.hasZone(named: $0) })
        if again.normalized != normalized {
            fuzzFailure("'\(text)' normalizes to '\(normalized)', which normalizes to '\(again.normalized)'")
        }
    } catch {
        fuzzFailure("'\(text)' normalizes to '\(normalized)', which does not parse: \(error)")
    }

    var hash: UInt64 = 0xcbf2_9ce4_8422_2325
    for b in bytes { hash = (hash ^ UInt64(b)) &* 0x100_0000_01b3 }
    let secondBase = Int64(hash % 5_680_000_000) * 1_000_000 + Int64(hash >> 40 % 1_000_000)

    var zones: [TimeZoneRules] = []
    if let name = spec.timeZoneName {
        // The expression's own zone overrides the caller's.
        guard let named = rules(named: name) else { return 0 }
        zones = [named]
    } else {
        zones = [fixedZones[Int(hash % UInt64(fixedZones.count))], fixedZones[Int((hash >> 8) % UInt64(fixedZones.count))]]
    }
    for zone in zones {
        for base in [fixedBase, secondBase] {
            var cursor = Instant(microseconds: base)
            for _ in 0..<3 {
                let start = threadCPUMicroseconds()
                let next = spec.nextElapse(after: cursor, in: zone)
                let took = threadCPUMicroseconds() - start
                slowest.record(took, "'\(text)' after \(cursor.microseconds) in \(zone.identifier)")
                if took > budgetMicros {
                    fuzzFailure("nextElapse took \(took) µs for '\(text)' after \(cursor.microseconds) in \(zone.identifier)")
                }
                guard let next else { break }
                if next <= cursor {
                    fuzzFailure("'\(text)' in \(zone.identifier): next elapse \(next.microseconds) is not after \(cursor.microseconds)")
                }
                cursor = next
            }
        }
    }
    return 0
}

@_cdecl("fuzz_calendar_main")
public func entry(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> CInt {
    runFuzzer(argc, argv)
}
