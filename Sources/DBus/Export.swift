import CDBus
import Synchronization

/// An incoming method call, decoded on the loop thread and handed to a handler.
public struct DBusMethodCall: Sendable {
    public let message: DBusMessage
    public let path: ObjectPath
    public let interface: InterfaceName?
    public let member: MemberName
    public let sender: BusName?
    public let arguments: [DBusValue]
    public let signature: DBusSignature
    /// Set by `prepareReply`: the export sends it instead of marshalling the handler's values.
    let prepared = PreparedReply()

    /// libdbus only checks the wire format, so handlers check the shape they expect.
    /// Throws `InvalidArgs` naming both signatures, which the caller sees as the error reply.
    public func expect(_ expected: DBusSignature) throws(DBusError) {
        guard signature == expected else {
            throw DBusError(
                .invalidArgs,
                "\(interface.map { "\($0)." } ?? "")\(member) expects arguments '\(expected)', got '\(signature)'")
        }
    }

    /// The argument at `index`, or `InvalidArgs` when there are too few.
    public func argument(_ index: Int) throws(DBusError) -> DBusValue {
        guard arguments.indices.contains(index) else {
            throw DBusError(.invalidArgs, "\(member) needs at least \(index + 1) argument(s), got \(arguments.count)")
        }
        return arguments[index]
    }
}

/// Handles the method calls of one exported object. Throwing a `DBusError` sends that error;
/// any other error is sent as `org.freedesktop.DBus.Error.Failed`.
public protocol DBusMethodHandler: Sendable {
    func handle(_ call: DBusMethodCall) async throws -> [DBusValue]
}

/// Backs `org.freedesktop.DBus.Properties` for an exported object.
public protocol DBusPropertyProvider: Sendable {
    func get(interface: InterfaceName, name: String) async throws -> DBusValue
    func getAll(interface: InterfaceName) async throws -> [String: DBusValue]
    func set(interface: InterfaceName, name: String, value: DBusValue) async throws
}

/// One method of an interface table.
public struct DBusMethod: Sendable {
    public let name: MemberName
    public let input: DBusSignature
    public let output: DBusSignature
    public let body: @Sendable (DBusMethodCall) async throws -> [DBusValue]
    /// When false the method takes any arguments and checks them itself (an echo, say).
    public let checksSignature: Bool
    /// Argument names for introspection (what `gdbus introspect` and d-feet show); may be empty.
    public let inputNames: [String]
    public let outputNames: [String]

    public init(
        _ name: MemberName, input: DBusSignature = .empty, output: DBusSignature = .empty,
        inputNames: [String] = [], outputNames: [String] = [],
        checksSignature: Bool = true, body: @escaping @Sendable (DBusMethodCall) async throws -> [DBusValue]
    ) {
        self.name = name
        self.input = input
        self.output = output
        self.inputNames = inputNames
        self.outputNames = outputNames
        self.checksSignature = checksSignature
        self.body = body
    }
}

/// A signal an interface declares (for introspection only; emit with `DBusConnection.emit`).
public struct DBusSignalDeclaration: Sendable {
    public let name: MemberName
    public let signature: DBusSignature
    /// Argument names for introspection; may be empty.
    public let argumentNames: [String]
    public init(_ name: MemberName, signature: DBusSignature = .empty, argumentNames: [String] = []) {
        self.name = name
        self.signature = signature
        self.argumentNames = argumentNames
    }
}

/// A property an interface declares (for introspection; values come from the provider).
public struct DBusPropertyDeclaration: Sendable {
    public enum Access: String, Sendable { case read, write, readwrite }
    public let name: String
    public let type: DBusType
    public let access: Access
    public init(_ name: String, type: DBusType, access: Access = .read) {
        self.name = name
        self.type = type
        self.access = access
    }
}

/// An interface described as a table: routing, signature checks and introspection from one place.
public struct DBusInterface: Sendable {
    public let name: InterfaceName
    public var methods: [DBusMethod]
    public var signals: [DBusSignalDeclaration]
    public var properties: [DBusPropertyDeclaration]

    public init(
        _ name: InterfaceName, methods: [DBusMethod] = [], signals: [DBusSignalDeclaration] = [],
        properties: [DBusPropertyDeclaration] = []
    ) {
        self.name = name
        self.methods = methods
        self.signals = signals
        self.properties = properties
    }

    public var introspectionXML: String {
        var x = "  <interface name=\"\(name)\">\n"
        for m in methods {
            x += "    <method name=\"\(m.name)\">\n"
            for (i, t) in m.input.types.enumerated() { x += argXML(t, name: m.inputNames[safe: i], direction: "in") }
            for (i, t) in m.output.types.enumerated() { x += argXML(t, name: m.outputNames[safe: i], direction: "out") }
            x += "    </method>\n"
        }
        for s in signals {
            x += "    <signal name=\"\(s.name)\">\n"
            for (i, t) in s.signature.types.enumerated() { x += argXML(t, name: s.argumentNames[safe: i], direction: nil) }
            x += "    </signal>\n"
        }
        for p in properties {
            x += "    <property name=\"\(xmlEscape(p.name))\" type=\"\(xmlEscape(p.type.description))\" access=\"\(p.access.rawValue)\"/>\n"
        }
        x += "  </interface>\n"
        return x
    }
}

private func argXML(_ type: DBusType, name: String?, direction: String?) -> String {
    var x = "      <arg type=\"\(xmlEscape(type.description))\""
    if let name { x += " name=\"\(xmlEscape(name))\"" }
    if let direction { x += " direction=\"\(direction)\"" }
    return x + "/>\n"
}

extension Array {
    fileprivate subscript(safe i: Int) -> Element? { indices.contains(i) ? self[i] : nil }
}

func xmlEscape(_ s: String) -> String {
    var out = ""
    for c in s {
        switch c {
        case "&": out += "&amp;"
        case "<": out += "&lt;"
        case ">": out += "&gt;"
        case "\"": out += "&quot;"
        case "'": out += "&apos;"
        default: out.append(c)
        }
    }
    return out
}

/// Routes calls to the methods of a set of interface tables.
public struct DBusInterfaceTableHandler: DBusMethodHandler {
    public let interfaces: [DBusInterface]
    public init(_ interfaces: [DBusInterface]) { self.interfaces = interfaces }

    public func handle(_ call: DBusMethodCall) async throws -> [DBusValue] {
        let candidates: [DBusInterface]
        if let name = call.interface {
            guard let iface = interfaces.first(where: { $0.name == name }) else {
                throw DBusError(.unknownInterface, "object \(call.path) has no interface \(name)")
            }
            candidates = [iface]
        } else {
            candidates = interfaces
        }
        for iface in candidates {
            guard let method = iface.methods.first(where: { $0.name == call.member }) else { continue }
            if method.checksSignature { try call.expect(method.input) }
            let result = try await method.body(call)
            if method.checksSignature, DBusSignature(result.map(\.type)) != method.output {
                throw DBusError(
                    .failed, "\(iface.name).\(call.member) produced '\(DBusSignature(result.map(\.type)))', declared '\(method.output)'")
            }
            return result
        }
        throw DBusError(
            .unknownMethod,
            "no method \(call.interface.map { "\($0)." } ?? "")\(call.member) with signature '\(call.signature)' on \(call.path)")
    }
}

/// What `DBusConnection.export` puts at a path.
public struct DBusExportedObject: Sendable {
    public let handler: any DBusMethodHandler
    /// The `<interface>` elements served by `Introspect` for this object.
    public let introspectionXML: String
    public let properties: (any DBusPropertyProvider)?

    /// A custom handler with hand-written introspection XML.
    public init(handler: any DBusMethodHandler, introspectionXML: String = "", properties: (any DBusPropertyProvider)? = nil) {
        self.handler = handler
        self.introspectionXML = introspectionXML
        self.properties = properties
    }

    /// Interface tables: unknown interfaces, unknown methods and wrong signatures are answered
    /// with the standard errors, and the XML is generated from the tables.
    public init(interfaces: [DBusInterface], properties: (any DBusPropertyProvider)? = nil) {
        self.handler = DBusInterfaceTableHandler(interfaces)
        self.introspectionXML = interfaces.map(\.introspectionXML).joined()
        self.properties = properties
    }
}

// MARK: - Routing (loop thread)

extension ConnectionCore {
    static let introspectHeader = """
        <!DOCTYPE node PUBLIC "-//freedesktop//DTD D-BUS Object Introspection 1.0//EN"
         "http://www.freedesktop.org/standards/dbus/1.0/introspect.dtd">

        """

    static let standardInterfacesXML = """
          <interface name="org.freedesktop.DBus.Peer">
            <method name="Ping"/>
            <method name="GetMachineId">
              <arg type="s" name="machine_uuid" direction="out"/>
            </method>
          </interface>
          <interface name="org.freedesktop.DBus.Introspectable">
            <method name="Introspect">
              <arg type="s" name="xml_data" direction="out"/>
            </method>
          </interface>

        """

    static let propertiesInterfaceXML = """
          <interface name="org.freedesktop.DBus.Properties">
            <method name="Get">
              <arg type="s" name="interface_name" direction="in"/>
              <arg type="s" name="property_name" direction="in"/>
              <arg type="v" name="value" direction="out"/>
            </method>
            <method name="GetAll">
              <arg type="s" name="interface_name" direction="in"/>
              <arg type="a{sv}" name="properties" direction="out"/>
            </method>
            <method name="Set">
              <arg type="s" name="interface_name" direction="in"/>
              <arg type="s" name="property_name" direction="in"/>
              <arg type="v" name="value" direction="in"/>
            </method>
            <signal name="PropertiesChanged">
              <arg type="s" name="interface_name"/>
              <arg type="a{sv}" name="changed_properties"/>
              <arg type="as" name="invalidated_properties"/>
            </signal>
          </interface>

        """

    func introspect(_ path: ObjectPath) -> String? {
        let object = objects[path]
        var children = Set<String>()
        let depth = path.components.count
        for p in objects.keys where p.isDescendant(of: path) {
            children.insert(String(p.components[depth]))
        }
        guard object != nil || !children.isEmpty else { return nil }
        var xml = Self.introspectHeader + "<node>\n"
        if let object {
            xml += Self.standardInterfacesXML
            if object.properties != nil { xml += Self.propertiesInterfaceXML }
            xml += object.introspectionXML
        }
        for c in children.sorted() { xml += "  <node name=\"\(c)\"/>\n" }
        xml += "</node>\n"
        return xml
    }

    func reply(_ call: DBusMessage, _ result: Result<[DBusValue], DBusError>) {
        if call.noReplyExpected { return }
        let message: DBusMessage?
        switch result {
        case .success(let values):
            if let problem = DBusWireSize.problem(values, limit: maxMessageSize.load(ordering: .relaxed)) {
                // Sent, it would make the bus drop this connection: answer with what went wrong.
                let member = call.member.map { "\($0)" } ?? "the method"
                message = DBusMessage.error(replyingTo: call, DBusError(.limitsExceeded, "the reply of \(member) is too large to send: \(problem)"))
                break
            }
            do {
                message = try DBusMessage.methodReturn(replyingTo: call, arguments: values)
            } catch {
                // The handler produced something unsendable (bad UTF-8, NUL, ...): say so.
                message = DBusMessage.error(replyingTo: call, DBusError(.failed, "reply could not be encoded: \(error.message)"))
            }
        case .failure(let error):
            message = DBusMessage.error(replyingTo: call, error.fitting(maxMessageSize.load(ordering: .relaxed)))
        }
        if let message { send(message) }
    }

    func routeMethodCall(_ message: DBusMessage) {
        guard let path = message.path, let member = message.member else { return }
        let iface = message.interface

        if member.rawValue == "Introspect", iface == nil || iface == .introspectable {
            if let xml = introspect(path) {
                reply(message, .success([.string(xml)]))
            } else {
                reply(message, .failure(DBusError(.unknownObject, "no object at \(path)")))
            }
            return
        }
        guard let object = objects[path] else {
            reply(message, .failure(DBusError(.unknownObject, "no object at \(path)")))
            return
        }
        let arguments: [DBusValue]
        do {
            arguments = try message.arguments()
        } catch {
            reply(message, .failure(error))
            return
        }
        let call = DBusMethodCall(
            message: message, path: path, interface: iface, member: member, sender: message.sender,
            arguments: arguments, signature: message.signature)

        if iface == .properties {
            guard let provider = object.properties else {
                reply(message, .failure(DBusError(.unknownInterface, "object \(path) has no properties")))
                return
            }
            Task { [self] in
                let result: Result<[DBusValue], DBusError>
                do {
                    result = .success(try await Self.handleProperties(call, provider))
                } catch {
                    result = .failure(DBusError.from(error))
                }
                reply(message, result)
            }
            return
        }
        let handler = object.handler
        Task { [self] in
            let result: Result<[DBusValue], DBusError>
            do {
                result = .success(try await handler.handle(call))
            } catch {
                result = .failure(DBusError.from(error))
            }
            if case .success = result, let prepared = call.prepared.take() {
                if !message.noReplyExpected { send(prepared) }
                return
            }
            reply(message, result)
        }
    }

    static func handleProperties(_ call: DBusMethodCall, _ provider: any DBusPropertyProvider) async throws -> [DBusValue] {
        switch call.member.rawValue {
        case "Get":
            try call.expect("ss")
            let iface = try InterfaceName(try call.arguments[0].asString())
            let value = try await provider.get(interface: iface, name: try call.arguments[1].asString())
            return [.variant(value)]
        case "GetAll":
            try call.expect("s")
            let iface = try InterfaceName(try call.arguments[0].asString())
            let all = try await provider.getAll(interface: iface)
            return [.vardict(all.sorted { $0.key < $1.key }.map { ($0.key, $0.value) })]
        case "Set":
            try call.expect("ssv")
            let iface = try InterfaceName(try call.arguments[0].asString())
            try await provider.set(
                interface: iface, name: try call.arguments[1].asString(), value: call.arguments[2].unwrappedVariant)
            return []
        default:
            throw DBusError(.unknownMethod, "no method org.freedesktop.DBus.Properties.\(call.member)")
        }
    }
}
