import TocsinModel
import TocsinSystem

/// One popup on the server, as the record file holds it: enough to route its buttons and to
/// replace or close it after a restart.
struct PopupRecord: Hashable, Sendable {
    /// Its id on the server.
    var id: UInt32
    var key: String
    /// The ids of its buttons (`dismiss`, `snooze`, the notification's own, `default`): an
    /// action the popup did not have is not routed.
    var actions: [String]
}

/// The popups one `libnotify` backend instance has up, kept in `libnotify-NAME.popups` in the
/// state directory, so that a daemon started after a `kill -9` or a crash can take them over:
/// route their buttons, replace them at the next ring instead of opening a second popup, and
/// close those whose notification is no longer pending or ringing. Popup ids mean something only
/// to the server that gave them, so the file names it by its unique bus name and the bus's GUID
/// (a restarted bus hands out `:1.0` again): a server or bus that restarted since makes the
/// records worthless, and they are dropped, never closed (the ids may be another app's popups).
///
/// The format, one record a line, fields separated by one space (action ids in hex, since a
/// notification's own may hold any character):
///
///     tocsin-popups 1
///     server UNIQUE-NAME
///     bus GUID
///     popup ID KEY HEX-ACTION,HEX-ACTION,...
///
/// A file that does not read exactly so is ignored with a warning and removed.
enum PopupRecords {
    static let header = "tocsin-popups 1"
    static let maxRecords = 4096
    static let maxBytes = 1024 * 1024

    static func file(directory: String, backend: String) -> String { directory + "/libnotify-\(backend).popups" }

    struct Contents: Equatable {
        var server: String
        /// The bus's GUID; nil when the file did not say (nothing is taken over then).
        var bus: String? = nil
        var popups: [PopupRecord]
    }

    static func render(_ c: Contents) -> String {
        var text = header + "\nserver \(c.server)\n"
        if let bus = c.bus { text += "bus \(bus)\n" }
        for p in c.popups {
            let actions = p.actions.map { hex(Array($0.utf8)) }.joined(separator: ",")
            text += "popup \(p.id) \(p.key) \(actions.isEmpty ? "-" : actions)\n"
        }
        return text
    }

    struct ParseError: Error, Equatable, CustomStringConvertible {
        var description: String
        init(_ d: String) { description = d }
    }

    static func parse(_ bytes: [UInt8]) -> Result<Contents, ParseError> {
        guard let text = String(validating: bytes, as: UTF8.self) else { return .failure(ParseError("not UTF-8")) }
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        guard lines.last == "" else { return .failure(ParseError("the last line is not complete")) }
        lines.removeLast()
        guard lines.count >= 2, lines[0] == Substring(header) else {
            return .failure(ParseError("the first lines are not '\(header)' and the server's"))
        }
        let server = lines[1].split(separator: " ", omittingEmptySubsequences: false)
        guard server.count == 2, server[0] == "server", isUniqueName(server[1]) else {
            return .failure(ParseError("line 2: a server line is 'server :UNIQUE.NAME'"))
        }
        var popups: [PopupRecord] = []
        var seen: Set<UInt32> = []
        var bus: String?
        var first = 2
        if lines.count > 2, lines[2].hasPrefix("bus ") {
            let g = lines[2].dropFirst(4)
            guard g.utf8.count == 32, g.utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) }) else {
                return .failure(ParseError("line 3: a bus line is 'bus GUID' (32 hex digits)"))
            }
            bus = String(g)
            first = 3
        }
        for (n, line) in lines.enumerated().dropFirst(first) {
            let fields = line.split(separator: " ", omittingEmptySubsequences: false)
            func bad(_ why: String) -> Result<Contents, ParseError> { .failure(ParseError("line \(n + 1): \(why)")) }
            guard fields.count == 4, fields[0] == "popup", let id = UInt32(fields[1]), id > 0,
                  fields[1].utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else {
                return bad("a popup line is 'popup ID KEY ACTIONS'")
            }
            let key = String(fields[2])
            if let problem = NotificationFields.validateKey(key) { return bad(problem) }
            var actions: [String] = []
            if fields[3] != "-" {
                for h in fields[3].split(separator: ",", omittingEmptySubsequences: false) {
                    guard let bytes = unhex(h), let a = String(validating: bytes, as: UTF8.self), !a.isEmpty else {
                        return bad("an action is its id's UTF-8 in hex")
                    }
                    actions.append(a)
                }
            }
            guard seen.insert(id).inserted else { return bad("popup \(id) twice") }
            popups.append(PopupRecord(id: id, key: key, actions: actions))
            guard popups.count <= maxRecords else { return bad("more than \(maxRecords) popups") }
        }
        return .success(Contents(server: String(server[1]), bus: bus, popups: popups))
    }

    /// A unique bus name as the bus hands them out: `:` then dot-separated elements of
    /// letters, digits, `_` and `-`.
    static func isUniqueName(_ s: Substring) -> Bool {
        guard s.hasPrefix(":"), s.utf8.count >= 4, s.utf8.count <= 255 else { return false }
        let elements = s.dropFirst().split(separator: ".", omittingEmptySubsequences: false)
        return elements.count >= 2 && elements.allSatisfy { e in
            !e.isEmpty && e.unicodeScalars.allSatisfy { $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "_" || $0 == "-") }
        }
    }

    static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        for b in bytes { out.append(digits[Int(b >> 4)]); out.append(digits[Int(b & 15)]) }
        return String(decoding: out, as: UTF8.self)
    }

    static func unhex(_ s: Substring) -> [UInt8]? {
        let u = Array(s.utf8)
        guard !u.isEmpty, u.count % 2 == 0, u.count <= 512 else { return nil }
        func v(_ c: UInt8) -> UInt8? {
            switch c {
            case 0x30...0x39: c - 0x30
            case 0x61...0x66: c - 0x61 + 10
            default: nil
            }
        }
        var out: [UInt8] = []
        var i = 0
        while i < u.count {
            guard let hi = v(u[i]), let lo = v(u[i + 1]) else { return nil }
            out.append(hi << 4 | lo)
            i += 2
        }
        return out
    }

    /// What an earlier run left: nil when there is no file, the reason (after removing it) when
    /// it cannot be read or is not in the format.
    static func read(_ path: String) -> Result<Contents, ParseError>? {
        guard let read = StateFile.read(path, limit: maxBytes) else { return nil }
        let result: Result<Contents, ParseError>
        switch read {
        case .failure(let p): result = .failure(ParseError(p.message))
        case .success(let bytes): result = parse(bytes)
        }
        if case .failure = result { StateFile.remove(path) }
        return result
    }
}
