import CFuzzEntry

/// Hands control to libFuzzer.
///
/// SwiftPM links an executable target with `--defsym main=<module>_main` (so tests can link the
/// module), and a `-parse-as-library` module defines no such symbol. Each target therefore
/// defines `<module>_main` itself and calls this, which runs libFuzzer's own driver: the same
/// command line, corpus handling and crash reports as libFuzzer's `main`.
public func runFuzzer(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> CInt {
    tocsin_fuzz_run(argc, argv)
}
