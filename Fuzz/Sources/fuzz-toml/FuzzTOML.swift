import FuzzSupport
import TocsinConfig
import TocsinModel

/// Any bytes into the TOML parser, in both modes: it promises to throw diagnostics, never crash
/// or hang. A document it accepts is also rendered as toml-test JSON (walks every value it built)
/// and its diagnostics, when refused, are rendered against the source (line/column arithmetic on
/// arbitrary text, including invalid UTF-8).
/// TOML 1.1 only adds to 1.0, and 1.0 mode reads on as 1.1 after naming a 1.1 feature, so:
/// what 1.0 accepts, 1.1 accepts with the same value; what only 1.1 accepts, 1.0 rejects with
/// nothing but messages naming 1.1 features.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = fuzzBytes(data, size)
    let v11 = render(bytes, .v1_1)
    let v10 = render(bytes, .v1_0)
    switch (v10, v11) {
    case (.success(let a), .success(let b)):
        // `!=` on the renderings: nan renders as "nan" in both, so equal values compare equal.
        if a != b { fuzzFailure("TOML 1.0 and 1.1 modes decode the same document differently") }
    case (.success, .failure):
        fuzzFailure("TOML 1.0 mode accepts a document that 1.1 mode rejects")
    case (.failure(let rejected), .success):
        // Past the error limit, the parser stops with a message of its own.
        let other = rejected.diagnostics.filter { !$0.message.contains("only in TOML 1.1") && !$0.message.hasPrefix("too many errors") }
        if !other.isEmpty {
            fuzzFailure("a TOML 1.1 document is rejected in 1.0 mode for something other than a 1.1 feature")
        }
    case (.failure, .failure):
        break
    }
    return 0
}

private struct Rejected: Error { var diagnostics: [Diagnostic] }

private func render(_ bytes: [UInt8], _ version: TOMLVersion) -> Result<String, Rejected> {
    do {
        let table = try TOML.parse(bytes, file: "fuzz.toml", version: version)
        return .success(TOMLTaggedJSON.encode(table))
    } catch {
        if error.diagnostics.isEmpty { fuzzFailure("TOML.parse threw no diagnostic") }
        _ = error.rendered(source: String(decoding: bytes, as: UTF8.self))
        return .failure(Rejected(diagnostics: error.diagnostics))
    }
}

@_cdecl("fuzz_toml_main")
public func entry(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> CInt {
    runFuzzer(argc, argv)
}
