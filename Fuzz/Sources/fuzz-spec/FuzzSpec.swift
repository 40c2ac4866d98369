import DBus
import FuzzSupport
import TocsinConfig
import TocsinGateway
import TocsinModel

let fieldNames = (NotificationFields.all + NotificationFields.dbusOnly).map(\.name)

/// Values that get past the field parsers' first check, so the fuzzer explores what lies beyond.
let examples = [
    "Tea", "3min", "90s", "1h 30min", "0", "-5s", "Mon..Fri 09:25", "*-*-* 02:30", "daily",
    "2027-03-14T18:00:00+01:00", "@1774745000", "+15min", "Europe/Berlin", "UTC", "../etc",
    "skip", "fire-once", "fire-all", "low", "normal", "critical", "log", "events", "desktop",
    "alarm", "standup", "key with space", "",
]

/// A `Schedule`/`PostNow` request built from the bytes, decoded as the gateway decodes each
/// (`decode` with a required trigger, `decodePost`). Refusals are `InvalidArgs` errors; nothing
/// else may come out, and nothing may trap.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    var builder = DBusValueBuilder(fuzzBytes(data, size), fieldNames: fieldNames, exampleStrings: examples)
    let isPost = builder.cursor.bool()
    let request = builder.spec()
    do {
        let spec = isPost ? try SpecDecoding.decodePost(request) : try SpecDecoding.decode(request, requireTrigger: true)
        // PostNow takes no trigger: an accepted one keeps the default the decoder starts from.
        if isPost, spec.trigger != NotificationSpec().trigger {
            fuzzFailure("PostNow accepted a trigger: \(spec.trigger)")
        }
        // An accepted key goes into SQLite, D-Bus signals and log fields: the limits must have held.
        if let key = spec.key, let problem = NotificationFields.validateKey(key) {
            fuzzFailure("accepted key '\(key)' the validator refuses: \(problem)")
        }
        if spec.actions.count > SpecLimits().maxActions || spec.userInfo.count > SpecLimits().maxUserInfoEntries {
            fuzzFailure("accepted \(spec.actions.count) actions and \(spec.userInfo.count) user_info entries")
        }
    } catch {
        if error.name != DBusError(.invalidArgs, "").name {
            fuzzFailure("SpecDecoding.decode threw \(error.name), not InvalidArgs")
        }
    }
    return 0
}

@_cdecl("fuzz_spec_main")
public func entry(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> CInt {
    runFuzzer(argc, argv)
}
