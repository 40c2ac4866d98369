#if canImport(Glibc)
import Glibc
#endif

/// A small file a backend keeps in the state directory about what it has running outside the
/// daemon (a sound player, a popup on the notification server), so that a daemon started after
/// a crash can find it. Replaced whole: written to a temporary file beside it and renamed over
/// it, so a crash at any point leaves the old contents or the new, never half of them. Not
/// synced: what it describes does not outlive the machine (a reboot ends the players, and the
/// notification server with them), so a power cut that loses the last rename loses nothing that
/// still exists.
///
/// What it holds is read back as untrusted input: the reader checks every field before acting
/// on it, and `read` refuses anything but a regular file of at most `limit` bytes.
public enum StateFile: Sendable {
    /// Replaces `path` with `contents` (mode 0600); the error's text on failure.
    public static func replace(_ path: String, with contents: [UInt8]) -> String? {
        let temporary = path + ".new"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { return "cannot create \(temporary): \(String(cString: strerror(errno)))" }
        var written = 0
        while written < contents.count {
            let n = contents.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + written, $0.count - written) }
            if n < 0 {
                if errno == EINTR { continue }
                let e = errno
                close(fd)
                unlink(temporary)
                return "cannot write \(temporary): \(String(cString: strerror(e)))"
            }
            written += n
        }
        close(fd)
        guard rename(temporary, path) == 0 else {
            let e = errno
            unlink(temporary)
            return "cannot rename \(temporary) to \(path): \(String(cString: strerror(e)))"
        }
        return nil
    }

    /// Removes `path` (and a temporary left by a crash during `replace`); nil when it is gone.
    @discardableResult
    public static func remove(_ path: String) -> String? {
        unlink(path + ".new")
        guard unlink(path) == 0 || errno == ENOENT else { return "cannot remove \(path): \(String(cString: strerror(errno)))" }
        return nil
    }

    /// What `path` holds: nil when there is no such file, the reason when it cannot be read.
    public static func read(_ path: String, limit: Int) -> Result<[UInt8], RegularFile.Problem>? {
        var st = stat()
        if lstat(path, &st) != 0, errno == ENOENT { return nil }
        return RegularFile.read(path, limit: limit, kind: "a state file")
    }
}
