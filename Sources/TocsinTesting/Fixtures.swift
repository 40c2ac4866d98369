import Foundation
import Glibc

/// A private directory (0700) per test, removed when the value goes away.
public final class TemporaryDirectory: Sendable {
    public let path: String

    public init(prefix: String = "tocsin-test") {
        let base = FileManager.default.temporaryDirectory.path
        path = base + "/\(prefix)-\(UUID().uuidString)"
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true,
                                                 attributes: [.posixPermissions: 0o700])
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }

    /// Writes `text` to a file in the directory and returns its path. The file is written under
    /// another name, close-on-exec, and renamed into place: a test that runs it as a program must
    /// not find it held open for writing by a child another test spawned meanwhile (`execve`
    /// refuses such a file with ETXTBSY, "Text file busy"; Foundation's atomic write leaves the
    /// descriptor inheritable, and a child started meanwhile, a `sleep 30` say, holds it as long
    /// as it lives).
    @discardableResult
    public func write(_ name: String, _ text: String, mode: UInt32 = 0o644) throws -> String {
        let p = path + "/" + name
        let partial = p + ".partial-\(UUID().uuidString)"
        let fd = open(partial, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode)
        guard fd >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        let bytes = Array(text.utf8)
        var done = 0
        while done < bytes.count {
            let n = bytes[done...].withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else {
                let e = errno
                close(fd)
                throw POSIXError(POSIXErrorCode(rawValue: e) ?? .EIO)
            }
            done += n
        }
        close(fd)
        // open's mode is filtered by the umask; a script must be executable whatever it is.
        guard fchmodat(AT_FDCWD, partial, mode, 0) == 0, rename(partial, p) == 0 else {
            throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
        }
        return p
    }

    /// A `/bin/sh` script, executable from the moment it appears.
    @discardableResult
    public func script(_ name: String, _ body: String) throws -> String {
        try write(name, "#!/bin/sh\n" + body + "\n", mode: 0o755)
    }
}

/// Where `swift build` put this package's executables: next to the running test binary.
public enum Products: Sendable {
    public static var directory: String {
        let exe = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        var dir = URL(fileURLWithPath: exe).deletingLastPathComponent()
        // The test binary may live inside a `.xctest` bundle directory.
        while dir.path.hasSuffix(".xctest") || dir.lastPathComponent == "MacOS" { dir.deleteLastPathComponent() }
        return dir.path
    }

    /// The path of a built executable product, e.g. `tocsin`.
    public static func executable(_ name: String) -> String { directory + "/" + name }
}

/// A Unix socket that takes connections and never reads or answers: a bus that is stopped,
/// wedged or not a bus at all. Nothing accepts, the kernel completes each connection from the
/// listen backlog, so a client sees it accepted. Closed when the value goes away.
public final class SilentUnixSocket: Sendable {
    public let path: String
    /// `unix:path=...`, as a D-Bus address.
    public var address: String { "unix:path=\(path)" }
    private let fd: Int32

    /// Listens at `path` (shorter than `sun_path`, 108 bytes).
    public init(path: String) throws {
        self.path = path
        fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw SilentSocketError(what: "socket", errno: errno) }
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: addr.sun_path) else {
            close(fd)
            throw SilentSocketError(what: "path too long", errno: ENAMETOOLONG)
        }
        withUnsafeMutableBytes(of: &addr.sun_path) { raw in
            for (i, b) in bytes.enumerated() { raw[i] = b }
        }
        let bound = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard bound == 0, listen(fd, 64) == 0 else {
            let e = errno
            close(fd)
            throw SilentSocketError(what: "bind/listen \(path)", errno: e)
        }
    }

    deinit {
        close(fd)
        unlink(path)
    }
}

public struct SilentSocketError: Error, CustomStringConvertible {
    public let what: String
    public let errno: Int32
    public var description: String { "\(what): errno \(errno)" }
}
