#if canImport(Glibc)
import Glibc
#endif

/// One daemon per state directory. Two would each fire every notification in it, and two starting
/// together on a new directory both made its database, the loser failing with "disk I/O error"
/// instead of a reason.
///
/// A POSIX record lock (`fcntl`), not `flock`: it belongs to the process, so it goes with the
/// process however it ends (`kill -9` included), and a second store opened on the same directory
/// by the same process (the tests' simulated restart) is not refused.
package final class StateDirectoryLock {
    private let fd: Int32

    package init(directory: String) throws(StoreError) {
        let path = directory + "/lock"
        fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else {
            throw StoreError(.cannotOpen, "cannot open \(path): \(String(cString: strerror(errno)))")
        }
        var whole = Glibc.flock()
        whole.l_type = Int16(F_WRLCK)
        whole.l_whence = Int16(SEEK_SET)
        guard fcntl(fd, F_SETLK, &whole) != 0 else { return }
        let error = errno
        var holder = Glibc.flock()
        holder.l_type = Int16(F_WRLCK)
        holder.l_whence = Int16(SEEK_SET)
        let pid = fcntl(fd, F_GETLK, &holder) == 0 && holder.l_type != Int16(F_UNLCK) ? " (pid \(holder.l_pid))" : ""
        close(fd)
        if error == EACCES || error == EAGAIN {
            throw StoreError(.inUse, "another Tocsin daemon\(pid) is using the state directory \(directory)")
        }
        throw StoreError(.cannotOpen, "cannot lock \(path): \(String(cString: strerror(error)))")
    }

    deinit { close(fd) }
}
