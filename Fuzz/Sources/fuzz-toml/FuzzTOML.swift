import FuzzSupport
import TocsinConfig

/// Any bytes into the TOML parser: it promises to throw diagnostics, never crash or hang.
/// A document it accepts is also rendered as toml-test JSON (walks every value it built) and
/// its diagnostics, when refused, are rendered against the source (line/column arithmetic on
/// arbitrary text, including invalid UTF-8).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = fuzzBytes(data, size)
    do {
        let table = try TOML.parse(bytes, file: "fuzz.toml")
        _ = TOMLTaggedJSON.encode(table)
    } catch {
        if error.diagnostics.isEmpty { fuzzFailure("TOML.parse threw no diagnostic") }
        _ = error.rendered(source: String(decoding: bytes, as: UTF8.self))
    }
    return 0
}

@_cdecl("fuzz_toml_main")
public func entry(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> CInt {
    runFuzzer(argc, argv)
}
