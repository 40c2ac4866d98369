/// Offsets of the first invalid UTF-8 sequences (at most `limit`). Validating once up front lets
/// the parser turn byte ranges into `String`s without per-string checks or silent repair; the
/// command line's arguments are checked with it too (`InvalidArgumentEncoding`).
package func invalidUTF8Offsets(_ buf: UnsafeBufferPointer<UInt8>, limit: Int = 10) -> [Int] {
    guard let base = buf.baseAddress else { return [] }
    var bad: [Int] = []
    var i = 0
    let n = buf.count
    while i < n {
        // ASCII fast path, eight bytes at a time.
        while i + 8 <= n {
            let word = UnsafeRawPointer(base + i).loadUnaligned(as: UInt64.self)
            if word & 0x8080_8080_8080_8080 != 0 { break }
            i += 8
        }
        guard i < n else { break }
        let b = buf[i]
        if b < 0x80 { i += 1; continue }
        var len = 0
        var lo: UInt8 = 0x80, hi: UInt8 = 0xBF
        switch b {
        case 0xC2...0xDF: len = 2
        case 0xE0: len = 3; lo = 0xA0
        case 0xE1...0xEC, 0xEE...0xEF: len = 3
        case 0xED: len = 3; hi = 0x9F
        case 0xF0: len = 4; lo = 0x90
        case 0xF1...0xF3: len = 4
        case 0xF4: len = 4; hi = 0x8F
        default: len = 0
        }
        var ok = len > 0 && i + len <= n
        if ok {
            let second = buf[i + 1]
            ok = second >= lo && second <= hi
            var k = 2
            while ok, k < len {
                ok = buf[i + k] & 0xC0 == 0x80
                k += 1
            }
        }
        if ok {
            i += len
        } else {
            bad.append(i)
            if bad.count >= limit { break }
            i += 1
            while i < n, buf[i] & 0xC0 == 0x80 { i += 1 }
        }
    }
    return bad
}
