import FuzzSupport
import TocsinConfig

/// Bytes as a config file through `ConfigLoader.load(bytes:file:)`: TOML parsing, then the
/// schema (backends, notifications, triggers, durations, zones). Failures are rendered with
/// their carets, as `tocsin check` prints them.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = fuzzBytes(data, size)
    switch ConfigLoader.load(bytes: bytes, file: "fuzz.toml") {
    case .success(let loaded):
        _ = loaded.configuration.notifications.count
    case .failure(let error):
        if error.diagnostics.isEmpty { fuzzFailure("ConfigLoader.load failed without a diagnostic") }
        _ = error.rendered
    }
    return 0
}

@_cdecl("fuzz_config_main")
public func entry(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> CInt {
    runFuzzer(argc, argv)
}
