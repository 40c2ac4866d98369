import TocsinConfig
import TocsinModel

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// toml-test's decoder protocol: TOML on stdin, tagged JSON on stdout and exit 0; for an invalid
/// document the rendered diagnostics on stderr and exit 1.
func readStandardInput() -> [UInt8] {
    var data: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 65536)
    while true {
        let n = chunk.withUnsafeMutableBytes { read(0, $0.baseAddress, $0.count) }
        if n > 0 {
            data.append(contentsOf: chunk[0..<n])
        } else if n == 0 || errno != EINTR {
            break
        }
    }
    return data
}

func writeAll(_ fd: Int32, _ text: String) {
    let bytes = Array(text.utf8)
    var offset = 0
    while offset < bytes.count {
        let n = bytes.withUnsafeBytes { raw -> Int in
            guard let base = raw.baseAddress else { return 0 }
            return write(fd, base + offset, raw.count - offset)
        }
        if n > 0 { offset += n } else if errno != EINTR { return }
    }
}

/// `--toml-version 1.0|1.1` (default 1.1), so both toml-test corpora can be run through it.
func requestedVersion() -> TOMLVersion {
    let args = Array(CommandLine.arguments.dropFirst())
    var version = TOMLVersion.default
    var i = 0
    while i < args.count {
        var text: String?
        if args[i] == "--toml-version", i + 1 < args.count {
            text = args[i + 1]
            i += 1
        } else if args[i].hasPrefix("--toml-version=") {
            text = String(args[i].dropFirst("--toml-version=".count))
        } else {
            writeAll(2, "toml-test-decoder: unknown argument '\(args[i])'; usage: toml-test-decoder [--toml-version 1.0|1.1]\n")
            exit(2)
        }
        guard let t = text, let v = TOMLVersion(t) else {
            writeAll(2, "toml-test-decoder: --toml-version: expected 1.0 or 1.1, found '\(text ?? "")'\n")
            exit(2)
        }
        version = v
        i += 1
    }
    return version
}

let version = requestedVersion()
let input = readStandardInput()
do {
    let table = try TOML.parse(input, file: "<stdin>", version: version)
    writeAll(1, TOMLTaggedJSON.encode(table))
    exit(0)
} catch {
    writeAll(2, error.rendered(source: String(decoding: input, as: UTF8.self)) + "\n")
    exit(1)
}
