import Glibc
import Synchronization
import TocsinModel
import TocsinSystem

/// One running player, as the record file holds it.
struct PlayerRecord: Hashable, Sendable {
    var group: RecordedProcessGroup
    var key: String
}

/// The players of one sound backend name, kept in `sound-NAME.players` in the state directory
/// while they run, so that a daemon started after a `kill -9` or a crash can stop what the dead
/// one left playing (its cap and its acknowledge lived only in its memory).
///
/// One ledger per file in the process, shared by the instances of that name: a reload that
/// changes the table starts the new instance while the old one's players still play (it stops
/// them right after), and both must write the same file without undoing each other. The first
/// instance to start in the process takes what the file held before (an earlier run's players);
/// later ones find nothing to take, since what the file then holds is this process's own.
///
/// The format, one record a line, fields separated by one space:
///
///     tocsin-players 1
///     boot BOOT-ID
///     player PID PGID START-TIME KEY
///
/// A file that does not read exactly so is ignored with a warning and removed: it is never
/// trusted beyond naming process groups that are checked again before anything is signalled
/// (`LeftoverProcessGroups`).
final class PlayerLedger: Sendable {
    static let header = "tocsin-players 1"
    /// More than any daemon runs at once; a longer file is not ours.
    static let maxRecords = 1024
    static let maxBytes = 128 * 1024
    /// This boot's id, read once.
    static let boot = ProcessStat.bootID()

    private struct State {
        var players: [pid_t: PlayerRecord] = [:]
        var taken = false
    }

    let path: String
    private let state = Mutex(State())
    private static let ledgers = Mutex<[String: PlayerLedger]>([:])

    private init(path: String) { self.path = path }

    static func file(directory: String, backend: String) -> String { directory + "/sound-\(backend).players" }

    /// The process's ledger for `path`.
    static func shared(path: String) -> PlayerLedger {
        ledgers.withLock { all in
            if let l = all[path] { return l }
            let l = PlayerLedger(path: path)
            all[path] = l
            return l
        }
    }

    /// What happened when the file was read.
    enum Taken: Equatable {
        case records([PlayerRecord])
        /// The file could not be read or was not in the format; removed.
        case malformed(String)
        /// It was written in an earlier boot: its processes are gone; removed.
        case earlierBoot
    }

    /// The first call in the process reads what an earlier run left (and keeps it in the file
    /// until `forget` drops each record); later calls get no records.
    func takeLeftovers() -> Taken {
        state.withLock { s -> Taken in
            if s.taken { return .records([]) }
            s.taken = true
            guard let read = StateFile.read(path, limit: Self.maxBytes) else { return .records([]) }
            let taken: Taken
            switch read {
            case .failure(let problem): taken = .malformed(problem.message)
            case .success(let bytes):
                switch Self.parse(bytes, boot: Self.boot) {
                case .success(nil): taken = .earlierBoot
                case .success(let records?):
                    for r in records { s.players[r.group.pid] = r }
                    return .records(records)
                case .failure(let why): taken = .malformed(why.description)
                }
            }
            StateFile.remove(path)
            return taken
        }
    }

    /// Records a running player; the error's text when the file could not be written.
    func add(_ record: PlayerRecord) -> String? {
        state.withLock { s in
            s.players[record.group.pid] = record
            return write(s)
        }
    }

    /// Drops the player with `pid` (it ended, or was stopped).
    func forget(_ pid: pid_t) -> String? {
        state.withLock { s in
            guard s.players.removeValue(forKey: pid) != nil else { return nil }
            return write(s)
        }
    }

    private func write(_ s: State) -> String? {
        if s.players.isEmpty { return StateFile.remove(path) }
        return StateFile.replace(path, with: Array(Self.render(s.players.values.sorted { $0.group.pid < $1.group.pid }, boot: Self.boot).utf8))
    }

    static func render(_ records: [PlayerRecord], boot: String?) -> String {
        var text = header + "\n"
        if let boot { text += "boot \(boot)\n" }
        for r in records {
            text += "player \(r.group.pid) \(r.group.processGroup) \(r.group.startTime) \(r.key)\n"
        }
        return text
    }

    /// The records of a file; nil when it was written in another boot than `boot`; the reason
    /// when it is not in the format.
    static func parse(_ bytes: [UInt8], boot: String?) -> Result<[PlayerRecord]?, ParseError> {
        guard let text = String(validating: bytes, as: UTF8.self) else { return .failure(ParseError("not UTF-8")) }
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        guard lines.last == "" else { return .failure(ParseError("the last line is not complete")) }
        lines.removeLast()
        guard lines.first == Substring(header) else { return .failure(ParseError("the first line is not '\(header)'")) }
        var records: [PlayerRecord] = []
        var fileBoot: String?
        for (n, line) in lines.enumerated().dropFirst() {
            let fields = line.split(separator: " ", omittingEmptySubsequences: false)
            func bad(_ why: String) -> Result<[PlayerRecord]?, ParseError> { .failure(ParseError("line \(n + 1): \(why)")) }
            switch fields.first {
            case "boot":
                guard n == 1, fields.count == 2, !fields[1].isEmpty,
                      fields[1].utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) || $0 == 0x2D }) else {
                    return bad("a boot line is the second line, one id of hex digits and dashes")
                }
                fileBoot = String(fields[1])
            case "player":
                guard fields.count == 5, let pid = decimal(fields[1]), let group = decimal(fields[2]),
                      let start = UInt64(fields[3]), fields[3].allSatisfy(\.isASCII) else {
                    return bad("a player line is 'player PID PGID START-TIME KEY'")
                }
                let key = String(fields[4])
                if let problem = NotificationFields.validateKey(key) { return bad(problem) }
                records.append(PlayerRecord(group: RecordedProcessGroup(pid: pid, processGroup: group, startTime: start), key: key))
                guard records.count <= maxRecords else { return bad("more than \(maxRecords) players") }
            default:
                return bad("unknown line")
            }
        }
        if let fileBoot, let boot, fileBoot != boot { return .success(nil) }
        return .success(records)
    }

    /// A positive pid in decimal digits (no sign, no spaces).
    private static func decimal(_ s: Substring) -> pid_t? {
        guard !s.isEmpty, s.utf8.count <= 10, s.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        return pid_t(s)
    }

    struct ParseError: Error, Equatable, CustomStringConvertible {
        var description: String
        init(_ d: String) { description = d }
    }
}
