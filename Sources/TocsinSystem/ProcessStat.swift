#if canImport(Glibc)
public import Glibc
#endif

/// What `/proc/PID/stat` says about a process that names it for its whole life: its start time
/// (field 22, clock ticks after boot), which tells a process from a later one given the same pid,
/// and its process group (field 5). Read past the `comm` field, which may itself hold spaces and
/// parentheses. The one reader of the file: the per-client quota (`ClientIdentities`) and the
/// players a crashed daemon left behind (`LeftoverProcessGroups`) both name processes this way.
public struct ProcessStat: Hashable, Sendable {
    public var processGroup: pid_t
    public var startTime: UInt64
    /// Ended and not yet reaped (state `Z`): its pid, and so its group's number, are still its own.
    public var isZombie = false

    public init(processGroup: pid_t, startTime: UInt64, isZombie: Bool = false) {
        self.processGroup = processGroup; self.startTime = startTime; self.isZombie = isZombie
    }

    /// nil when there is no such process (or `/proc` is not mounted).
    public static func read(_ pid: pid_t) -> ProcessStat? {
        guard pid > 0 else { return nil }
        let fd = open("/proc/\(pid)/stat", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 1024)
        let n = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
        guard n > 0 else { return nil }
        return parse(buffer[..<n])
    }

    /// The fields of one `stat` line.
    public static func parse(_ text: some Collection<UInt8>) -> ProcessStat? {
        let bytes = Array(text)
        guard let close = bytes.lastIndex(of: UInt8(ascii: ")")) else { return nil }
        // After ") " come fields 3, 4, ...: the process group is the 3rd of them, the start time the 20th.
        let fields = bytes[(close + 1)...].split(separator: UInt8(ascii: " "))
        guard fields.count >= 20,
              let group = Int32(String(decoding: fields[2], as: UTF8.self)),
              let start = UInt64(String(decoding: fields[19], as: UTF8.self)) else { return nil }
        return ProcessStat(processGroup: group, startTime: start, isZombie: fields[0].first == UInt8(ascii: "Z"))
    }

    /// This boot's id (`/proc/sys/kernel/random/boot_id`): start times count from the boot, so
    /// a record from an earlier boot names no process of this one.
    public static func bootID() -> String? {
        guard case .success(let bytes) = RegularFile.read("/proc/sys/kernel/random/boot_id", limit: 128, kind: "the boot id") else {
            return nil
        }
        let id = String(decoding: bytes, as: UTF8.self).trimmingTrailingWhitespace()
        return id.isEmpty ? nil : id
    }
}
