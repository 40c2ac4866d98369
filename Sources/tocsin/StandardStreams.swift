import Glibc

/// Writes straight to a descriptor, one `write(2)` loop per call: `tocsin watch` readers on a pipe
/// see each line as it happens, and the executable needs no Foundation (`FileHandle` lives in full
/// Foundation, which links ICU and its ~34 MB of data into a static build).
enum StandardStream: Int32, Sendable {
    case output = 1
    case error = 2

    func write(_ text: String) {
        var text = text
        text.withUTF8 { buffer in
            var offset = 0
            while offset < buffer.count {
                let n = Glibc.write(rawValue, buffer.baseAddress! + offset, buffer.count - offset)
                if n > 0 { offset += n } else if n < 0 && errno == EINTR { continue } else { return }
            }
        }
    }
}
