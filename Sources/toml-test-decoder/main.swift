import TocsinConfig

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

let input = readStandardInput()
do {
    let table = try TOML.parse(input, file: "<stdin>")
    writeAll(1, TOMLTaggedJSON.encode(table))
    exit(0)
} catch {
    writeAll(2, error.rendered(source: String(decoding: input, as: UTF8.self)) + "\n")
    exit(1)
}
