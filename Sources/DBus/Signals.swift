/// A received signal.
public struct DBusSignal: Sendable, Hashable {
    public let sender: BusName?
    public let destination: BusName?
    public let path: ObjectPath
    public let interface: InterfaceName
    public let member: MemberName
    public let arguments: [DBusValue]
}

/// A bus match rule (`AddMatch`), also evaluated locally to route signals to subscribers.
///
/// Local matching compares type, interface, member, path, path namespace, destination and
/// string arguments exactly. A well-known `sender` cannot be compared locally (messages carry
/// the owner's unique name), so it is left to the bus, which only forwards matching signals;
/// another, broader subscription on the same connection may then also see them.
public struct MatchRule: Sendable, Hashable, CustomStringConvertible {
    public var sender: BusName?
    public var interface: InterfaceName?
    public var member: MemberName?
    public var path: ObjectPath?
    public var pathNamespace: ObjectPath?
    public var destination: BusName?
    /// `argN='value'` for string arguments.
    public var arguments: [Int: String]

    public init(
        sender: BusName? = nil, interface: InterfaceName? = nil, member: MemberName? = nil,
        path: ObjectPath? = nil, pathNamespace: ObjectPath? = nil, destination: BusName? = nil,
        arguments: [Int: String] = [:]
    ) {
        self.sender = sender
        self.interface = interface
        self.member = member
        self.path = path
        self.pathNamespace = pathNamespace
        self.destination = destination
        self.arguments = arguments
    }

    /// The rule text sent to the bus. Argument values are quoted with the match-rule escape
    /// for `'`; names and paths are validated types and cannot contain quotes or commas.
    public var description: String {
        var parts = ["type='signal'"]
        if let sender { parts.append("sender='\(sender)'") }
        if let interface { parts.append("interface='\(interface)'") }
        if let member { parts.append("member='\(member)'") }
        if let path { parts.append("path='\(path)'") }
        if let pathNamespace { parts.append("path_namespace='\(pathNamespace)'") }
        if let destination { parts.append("destination='\(destination)'") }
        for (n, value) in arguments.sorted(by: { $0.key < $1.key }) {
            parts.append("arg\(n)='" + value.replacingAll("'", with: "'\\''") + "'")
        }
        return parts.joined(separator: ",")
    }

    func validate() throws(DBusError) {
        for (n, v) in arguments {
            guard (0...63).contains(n) else { throw DBusError(.matchRuleInvalid, "argument index \(n) out of 0...63") }
            try validateStringForWire(v)
        }
        if description.utf8.count > 1024 { throw DBusError(.matchRuleInvalid, "match rule longer than 1024 bytes") }
    }

    func matches(_ m: DBusMessage) -> Bool {
        guard m.kind == .signal else { return false }
        if let sender, sender.isUnique || sender.rawValue == "org.freedesktop.DBus", m.sender != sender { return false }
        if let interface, m.interface != interface { return false }
        if let member, m.member != member { return false }
        if let path, m.path != path { return false }
        if let pathNamespace, let p = m.path, p != pathNamespace, !p.isDescendant(of: pathNamespace) { return false }
        if let destination, m.destination != destination { return false }
        if !arguments.isEmpty {
            guard let args = try? m.arguments() else { return false }
            for (n, value) in arguments {
                guard n < args.count, case .string(let s) = args[n], s == value else { return false }
            }
        }
        return true
    }
}

extension String {
    func replacingAll(_ target: Character, with replacement: String) -> String {
        var out = ""
        for c in self {
            if c == target { out += replacement } else { out.append(c) }
        }
        return out
    }
}
