#if canImport(Glibc)
import Glibc
#endif

/// Reading a file a config names (the config itself, a password file) without letting the file
/// stop the reader: opened non-blocking, so a FIFO with no writer is refused instead of hanging
/// `tocsin check`, the daemon's start or a reload; anything but a regular file is refused; and
/// no more than `limit` bytes are read, so `/dev/zero` or a runaway generator cannot take memory.
public enum RegularFile: Sendable {
    public struct Problem: Error, Sendable, CustomStringConvertible {
        /// Why, in words that follow "cannot read FILE: ".
        public var message: String
        public var description: String { message }
    }

    /// Whether `path` names a regular file (following symlinks), or why not; never blocks.
    public static func check(_ path: String) -> Problem? {
        var st = stat()
        guard stat(path, &st) == 0 else { return Problem(message: String(cString: strerror(errno))) }
        return problem(mode: st.st_mode)
    }

    static func problem(mode: mode_t) -> Problem? {
        switch mode & S_IFMT {
        case S_IFREG: return nil
        case S_IFDIR: return Problem(message: "it is a directory")
        default: return Problem(message: "it is not a regular file")
        }
    }

    /// The whole file, if it is a regular file of at most `limit` bytes; `kind` names it in the
    /// size message ("a config file may have at most ...").
    public static func read(_ path: String, limit: Int, kind: String) -> Result<[UInt8], Problem> {
        func failure(_ what: String? = nil) -> Result<[UInt8], Problem> {
            .failure(Problem(message: what ?? String(cString: strerror(errno))))
        }
        let fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { return failure() }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0 else { return failure() }
        if let p = problem(mode: st.st_mode) { return .failure(p) }
        guard st.st_size <= limit else { return failure("it is \(st.st_size) bytes; \(kind) may have at most \(limit)") }
        var out: [UInt8] = []
        out.reserveCapacity(Int(st.st_size))
        var buf = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = buf.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, 65536) }
            if n < 0 {
                if errno == EINTR { continue }
                return failure()
            }
            if n == 0 { break }
            out.append(contentsOf: buf[0..<n])
            // The file may grow while it is read.
            if out.count > limit { return failure("it is more than \(limit) bytes; \(kind) may have at most that") }
        }
        return .success(out)
    }
}
