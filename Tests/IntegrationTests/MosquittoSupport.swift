import Foundation
import Glibc
import Synchronization
import TocsinTesting

/// A real mosquitto broker on 127.0.0.1 at a port chosen at run time, with persistence in a
/// temporary directory, so it can be killed and started again on the same port and state.
final class MosquittoBroker: Sendable {
    let dir: TemporaryDirectory
    let port: Int32
    let confPath: String
    /// The CA that signed the broker's certificate, when it listens with TLS.
    let caFile: String?
    let process: Mutex<TestProcess?>

    private init(dir: TemporaryDirectory, port: Int32, confPath: String, caFile: String?) {
        self.dir = dir; self.port = port; self.confPath = confPath; self.caFile = caFile; self.process = Mutex(nil)
    }

    var url: String { (caFile == nil ? "mqtt" : "mqtts") + "://127.0.0.1:\(port)" }

    /// `user`: only this user, with `password`, may connect (mosquitto's own password file).
    /// `tls`: the listener speaks TLS with a certificate for 127.0.0.1 from a CA made here.
    static func start(user: (name: String, password: String)? = nil, tls: Bool = false) async throws -> MosquittoBroker {
        let dir = TemporaryDirectory(prefix: "tocsin-mosquitto")
        let port = try freeLoopbackPort()
        var access = "allow_anonymous true"
        if let user {
            let file = dir.path + "/passwd"
            let made = try await TestProcess.run("mosquitto_passwd", ["-b", "-c", file, user.name, user.password])
            guard made.status == .exited(0) else { throw TestProcessError("mosquitto_passwd: \(made.stderrText)") }
            access = "allow_anonymous false\npassword_file \(file)"
        }
        var caFile: String?
        if tls {
            let d = dir.path
            _ = try dir.write("ext.cnf", "subjectAltName=IP:127.0.0.1\n")
            for argv in [
                ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", "\(d)/ca.key",
                 "-out", "\(d)/ca.crt", "-days", "1", "-subj", "/CN=Tocsin test CA"],
                ["req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", "\(d)/server.key",
                 "-out", "\(d)/server.csr", "-subj", "/CN=127.0.0.1"],
                ["x509", "-req", "-in", "\(d)/server.csr", "-CA", "\(d)/ca.crt", "-CAkey", "\(d)/ca.key", "-CAcreateserial",
                 "-out", "\(d)/server.crt", "-days", "1", "-extfile", "\(d)/ext.cnf"],
            ] {
                let r = try await TestProcess.run("openssl", argv)
                guard r.status == .exited(0) else { throw TestProcessError("openssl \(argv[0]): \(r.stderrText)") }
            }
            access += "\ncafile \(d)/ca.crt\ncertfile \(d)/server.crt\nkeyfile \(d)/server.key"
            caFile = "\(d)/ca.crt"
        }
        // autosave_on_changes with an interval of 1: every session, subscription and queued message
        // is on disk before a kill -9, as a broker configured for durability keeps them. Started
        // as root, mosquitto drops to its own user unless told `user` (it could not write the
        // temporary directory and would persist nothing); not as root, `user` is ignored.
        let user = getpwuid(getuid()).flatMap { $0.pointee.pw_name.map { String(cString: $0) } } ?? "root"
        let conf = try dir.write("mosquitto.conf", """
            listener \(port) 127.0.0.1
            \(access)
            user \(user)
            persistence true
            persistence_location \(dir.path)/
            autosave_on_changes true
            autosave_interval 1
            log_dest stderr
            log_type all

            """)
        let b = MosquittoBroker(dir: dir, port: port, confPath: conf, caFile: caFile)
        try await b.run()
        return b
    }

    /// Starts the broker process and waits until it reports it is listening.
    func run() async throws {
        let p = try TestProcess("/usr/sbin/mosquitto", ["-c", confPath])
        process.withLock { $0 = p }
        try await p.waitForStderr(containing: " running", timeout: .seconds(15))
    }

    /// Waits until `client`'s `subscriptions` SUBSCRIBEs are acknowledged and the broker has saved
    /// its database after the last one (`autosave_on_changes`), so a kill -9 from then on keeps
    /// that session. Without it a crash can come between the SUBACK and the save; the restarted
    /// broker then no longer knows the subscription, and what another client publishes before
    /// `client` reconnects and subscribes again is dropped (as MQTT says for a lost session).
    func waitUntilSaved(subscriptionsOf client: String, count subscriptions: Int, timeout: Duration) async throws {
        guard let p = process.withLock({ $0 }) else { throw TestProcessError("the broker is not running") }
        try await p.output.wait("\(subscriptions) subscriptions of \(client) saved", timeout: timeout) { out in
            let log = out.stderrText
            let acks = log.ranges(of: "Sending SUBACK to \(client)")
            guard acks.count >= subscriptions else { return false }
            return log[acks[subscriptions - 1].upperBound...].contains("Saving in-memory database")
        }
    }

    /// kill -9, as a crashing broker or a pulled plug.
    func crash() async throws {
        let p = process.withLock { $0 }
        try await p?.kill()
    }

    func stop() async {
        let p = process.withLock { $0 }
        p?.signal(SIGTERM)
        if (try? await p?.waitForExit(timeout: .seconds(10))) == nil { _ = try? await p?.kill() }
    }

    /// The broker's log so far (every connect and message, `log_type all`).
    var log: String { process.withLock { $0 }?.output.value.stderrText ?? "" }
}

/// A port the kernel had free on 127.0.0.1 a moment ago (bind to port 0, read it, close).
func freeLoopbackPort() throws -> Int32 {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw TestProcessError("socket: errno \(errno)") }
    defer { close(fd) }
    var addr = sockaddr_in()
    addr.sin_family = sa_family_t(AF_INET)
    addr.sin_port = 0
    addr.sin_addr.s_addr = inet_addr("127.0.0.1")
    let bound = withUnsafePointer(to: &addr) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard bound == 0 else { throw TestProcessError("bind: errno \(errno)") }
    var len = socklen_t(MemoryLayout<sockaddr_in>.size)
    let named = withUnsafeMutablePointer(to: &addr) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) }
    }
    guard named == 0 else { throw TestProcessError("getsockname: errno \(errno)") }
    return Int32(UInt16(bigEndian: addr.sin_port))
}
