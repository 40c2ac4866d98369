import FoundationEssentials
public import TocsinCore
import TocsinTime
public import TocsinModel
import TocsinSystem

/// Reads `[backend.NAME] type = "mqtt"`.
public struct MQTTBackendFactory: BackendFactory {
    public init() {}
    public var typeName: String { "mqtt" }
    public var optionKeys: [String] {
        ["url", "client_id", "topic_prefix", "username", "password_file", "ca_file", "cert_file", "key_file",
         "keepalive", "reconnect_max"]
    }

    public struct Options: Sendable, Hashable {
        public var host: String
        public var port: Int32
        public var tls: Bool
        public var clientID: String
        public var topicPrefix: String
        public var username: String?
        public var password: String?
        public var caFile: String?
        public var certFile: String?
        public var keyFile: String?
        public var keepaliveSeconds: Int32 = 60
        public var reconnectMaxSeconds: UInt32 = 30
        public init(host: String, port: Int32, tls: Bool = false, clientID: String, topicPrefix: String = "tocsin") {
            self.host = host; self.port = port; self.tls = tls; self.clientID = clientID; self.topicPrefix = topicPrefix
        }
    }

    /// `mqtt://host[:port]` (1883) or `mqtts://host[:port]` (8883); nil with the reason otherwise.
    public static func parseURL(_ s: String) -> Result<(host: String, port: Int32, tls: Bool), FleetMessage.DecodeError> {
        let tls: Bool
        let rest: Substring
        if s.hasPrefix("mqtt://") { tls = false; rest = s.dropFirst(7) }
        else if s.hasPrefix("mqtts://") { tls = true; rest = s.dropFirst(8) }
        else { return .failure(.init(description: "'url' must start with mqtt:// or mqtts://, found '\(s)'")) }
        let hostPort = rest.hasSuffix("/") ? rest.dropLast() : rest
        var host = String(hostPort), port: Int32 = tls ? 8883 : 1883
        if let colon = hostPort.lastIndex(of: ":"), !hostPort.hasSuffix("]") {
            host = String(hostPort[..<colon])
            guard let p = Int32(hostPort[hostPort.index(after: colon)...]), (1...65535).contains(p) else {
                return .failure(.init(description: "'url' has port '\(hostPort[hostPort.index(after: colon)...])'; it must be 1-65535"))
            }
            port = p
        }
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        guard !host.isEmpty, !host.contains("/"), !host.contains("@") else {
            return .failure(.init(description: "'url' must name a host (mqtt://HOST:PORT), found '\(s)'"))
        }
        return .success((host, port, tls))
    }

    /// Every key is read whatever another one holds: a key left unread is reported as unknown,
    /// and its own mistake would surface only once the first one was fixed.
    public func options(from reader: inout some FieldReader, environment: BackendEnvironment) -> Options? {
        let before = reader.issues.count
        var parsed: (host: String, port: Int32, tls: Bool)?
        if let url = reader.requiredString("url") {
            switch Self.parseURL(url) {
            case .success(let p): parsed = p
            case .failure(let e): reader.report("url", e.description)
            }
        }
        let clientID = reader.string("client_id") ?? "tocsin-" + (ProcessInfo.processInfo.hostName)
        // MQTT 3.1.1 allows 1-23 bytes everywhere; mosquitto takes up to 65535. Ours must be unique per machine.
        if clientID.isEmpty || clientID.utf8.count > 256 || clientID.contains(where: { $0.isWhitespace || $0 == "\0" }) {
            reader.report("client_id", "'client_id' must be 1-256 bytes without spaces")
        }
        var o = Options(host: parsed?.host ?? "", port: parsed?.port ?? 0, tls: parsed?.tls ?? false, clientID: clientID)
        Self.readTopicPrefix(&reader, into: &o)
        Self.readCredentials(&reader, into: &o)
        Self.readTLSFiles(&reader, into: &o, tls: parsed?.tls)
        Self.readTimers(&reader, into: &o)
        guard parsed != nil, reader.issues.count == before else { return nil }
        return o
    }

    private static func readTopicPrefix(_ reader: inout some FieldReader, into o: inout Options) {
        guard let prefix = reader.string("topic_prefix") else { return }
        guard !prefix.isEmpty, !prefix.contains("+"), !prefix.contains("#"), !prefix.hasSuffix("/"), !prefix.contains("\0") else {
            reader.report("topic_prefix", "'topic_prefix' must be a non-empty topic without '+', '#' or a trailing '/'")
            return
        }
        o.topicPrefix = prefix
    }

    /// `username`, and the password from the first line of `password_file` (never in the config itself).
    private static func readCredentials(_ reader: inout some FieldReader, into o: inout Options) {
        o.username = reader.string("username")
        guard let file = reader.string("password_file") else { return }
        // A `username` of the wrong type is reported at its value; "needs 'username'" would be a second, false, error.
        guard reader.has("username") else {
            reader.report("password_file", "'password_file' needs 'username'")
            return
        }
        switch RegularFile.read(file, limit: 64 << 10, kind: "a password file") {
        case .success(let bytes):
            guard let text = String(validating: bytes, as: UTF8.self) else {
                reader.report("password_file", "cannot read password_file '\(file)': it is not UTF-8 text")
                return
            }
            o.password = String(text.prefix { $0 != "\n" && $0 != "\r" })
        case .failure(let problem):
            reader.report("password_file", "cannot read password_file '\(file)': \(problem.message)")
        }
    }

    /// `ca_file`, `cert_file`, `key_file`: consistent with the url's scheme and each readable now,
    /// so a mistake is reported by `tocsin check` rather than by the TLS library on connect.
    /// `tls`: the url's scheme, nil when the url is missing or invalid (reported already).
    private static func readTLSFiles(_ reader: inout some FieldReader, into o: inout Options, tls: Bool?) {
        o.caFile = reader.string("ca_file")
        o.certFile = reader.string("cert_file")
        o.keyFile = reader.string("key_file")
        if (o.certFile == nil) != (o.keyFile == nil) {
            reader.report(o.certFile == nil ? "key_file" : "cert_file", "'cert_file' and 'key_file' go together")
        }
        if tls == true, o.caFile == nil {
            reader.report("url", "an mqtts:// url needs 'ca_file' (the broker's CA certificate)")
        }
        if tls == false, o.caFile != nil || o.certFile != nil {
            // Unused without TLS: whether they can be read does not matter then.
            reader.report(o.caFile != nil ? "ca_file" : "cert_file", "TLS files need an mqtts:// url")
            return
        }
        for (key, path) in [("ca_file", o.caFile), ("cert_file", o.certFile), ("key_file", o.keyFile)] {
            guard let path else { continue }
            // A FIFO would block the TLS library's open of it, wherever that runs.
            if let problem = RegularFile.check(path) {
                reader.report(key, "cannot read \(key) '\(path)': \(problem.message)")
            } else if !FileManager.default.isReadableFile(atPath: path) {
                reader.report(key, "cannot read \(key) '\(path)'")
            }
        }
    }

    /// `keepalive` and `reconnect_max`, whole seconds within what the protocol and libmosquitto take.
    private static func readTimers(_ reader: inout some FieldReader, into o: inout Options) {
        if let k = reader.duration("keepalive", positive: true) {
            let s = k.microseconds / 1_000_000
            if (5...65535).contains(s) {
                o.keepaliveSeconds = Int32(s)
            } else {
                reader.report("keepalive", "'keepalive' is \(k); it must be between 5s and 18h 12min 15s")
            }
        }
        if let r = reader.duration("reconnect_max", positive: true) {
            let s = r.microseconds / 1_000_000
            if (1...3600).contains(s) {
                o.reconnectMaxSeconds = UInt32(s)
            } else {
                reader.report("reconnect_max", "'reconnect_max' is \(r); it must be between 1s and 1h")
            }
        }
    }

    public func make(name: String, options: Options, environment: BackendEnvironment) -> any DeliveryBackend {
        MQTTBackend(name: name, options: options, subscribes: environment.fleetBackend == name,
                    stateDirectory: environment.stateDirectory, logger: environment.logger)
    }
}
