import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif

/// sd_notify(3) without libsystemd: one datagram to `$NOTIFY_SOCKET` per state change, so a
/// `Type=notify` unit knows when the bus name is owned, when a reload runs and when we stop.
struct SystemdNotifier: Sendable {
    let socketPath: String?

    init(environment: [String: String]) {
        let p = environment["NOTIFY_SOCKET"] ?? ""
        socketPath = (p.hasPrefix("/") || p.hasPrefix("@")) ? p : nil
    }

    func ready(status: String? = nil) { send("READY=1" + (status.map { "\nSTATUS=\($0)" } ?? "")) }
    func reloading() {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        send("RELOADING=1\nMONOTONIC_USEC=\(Int64(ts.tv_sec) * 1_000_000 + Int64(ts.tv_nsec) / 1000)")
    }
    func stopping() { send("STOPPING=1") }
    func status(_ s: String) { send("STATUS=\(s)") }

    func send(_ message: String) {
        guard let path = socketPath else { return }
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return }
        defer { close(fd) }
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        var bytes = Array(path.utf8)
        // An abstract socket is written with a leading '@' and addressed with a leading NUL.
        if bytes.first == UInt8(ascii: "@") { bytes[0] = 0 }
        let capacity = MemoryLayout.size(ofValue: addr.sun_path)
        guard bytes.count < capacity else { return }
        withUnsafeMutableBytes(of: &addr.sun_path) { raw in
            for (i, b) in bytes.enumerated() { raw[i] = b }
        }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count)
        let payload = Array(message.utf8)
        _ = withUnsafePointer(to: &addr) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa in
                payload.withUnsafeBytes { sendto(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL), sa, length) }
            }
        }
    }
}
