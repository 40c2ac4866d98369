import CMosquitto
import Synchronization

/// What the network thread reports; called on libmosquitto's own thread, so it must not block.
protocol MosquittoDelegate: Sendable {
    func mosquittoConnected(_ rc: Int32)
    func mosquittoDisconnected(_ rc: Int32)
    func mosquittoMessage(topic: String, payload: [UInt8])
    /// The broker acknowledged the QoS 1 message `mid` (PUBACK).
    func mosquittoPublished(_ mid: Int32)
}

/// Why a libmosquitto call failed, with the library's own words.
struct MosquittoError: Error, Hashable, Sendable, CustomStringConvertible {
    var rc: Int32
    var what: String
    var description: String { "\(what): \(String(cString: mosquitto_strerror(rc)))" }
}

/// libmosquitto must be initialised once per process before any client exists; a `static let`
/// is initialised exactly once, thread-safely.
private enum MosquittoLibrary {
    static let initialised: Bool = { mosquitto_lib_init() == CMOSQ_ERR_SUCCESS }()
}

/// One libmosquitto client running its own network thread (`mosquitto_loop_start`).
///
/// libmosquitto rather than a Swift MQTT package: it comes from the broker's own project as a
/// Debian package, does TLS, persistent sessions and reconnect backoff itself, and its thread
/// sleeps until the keepalive is due (the idle-wakeup rule); no Swift MQTT client was known to
/// build on this toolchain without network access to fetch it.
///
/// The thread connects, reconnects with exponential backoff after the broker goes away, and
/// resends QoS 1 messages still unacknowledged; publishing while disconnected queues the message
/// in the client, which sends it on the next connection. That is why delivery never waits on
/// the broker. libmosquitto is thread-safe once the thread runs, so `publish` and `subscribe`
/// are called from any task.
final class MosquittoClient: @unchecked Sendable {
    // @unchecked: the handle is only used through libmosquitto calls that lock internally
    // (threaded mode); `delegate` is set once before the thread starts and never changed.
    private let handle: OpaquePointer
    private let context: MosquittoContext

    struct Settings: Sendable {
        var host: String
        var port: Int32
        var clientID: String
        var keepalive: Int32
        var username: String?
        var password: String?
        var caFile: String?
        var certFile: String?
        var keyFile: String?
        var reconnectDelay: UInt32
        var reconnectDelayMax: UInt32
    }

    init(_ s: Settings, delegate: any MosquittoDelegate) throws(MosquittoError) {
        guard MosquittoLibrary.initialised else { throw MosquittoError(rc: 1, what: "mosquitto_lib_init") }
        // clean_session = false: the broker keeps our subscription and queues QoS 1 messages for
        // us while we are away, so an acknowledge sent during our outage still reaches us.
        guard let h = mosquitto_new(s.clientID, false, nil) else {
            throw MosquittoError(rc: 1, what: "mosquitto_new")
        }
        handle = h
        context = MosquittoContext(delegate)
        mosquitto_user_data_set(h, Unmanaged.passUnretained(context).toOpaque())
        mosquitto_int_option(h, mosq_opt_t(rawValue: UInt32(CMOSQ_OPT_PROTOCOL_VERSION)), CMQTT_PROTOCOL_V311)
        if let u = s.username {
            try check(mosquitto_username_pw_set(h, u, s.password), "mosquitto_username_pw_set")
        }
        if s.caFile != nil || s.certFile != nil {
            try check(mosquitto_tls_set(h, s.caFile, nil, s.certFile, s.keyFile, nil), "mosquitto_tls_set")
        }
        mosquitto_connect_callback_set(h, mosquittoOnConnect)
        mosquitto_disconnect_callback_set(h, mosquittoOnDisconnect)
        mosquitto_message_callback_set(h, mosquittoOnMessage)
        mosquitto_publish_callback_set(h, mosquittoOnPublish)
        try check(mosquitto_reconnect_delay_set(h, s.reconnectDelay, s.reconnectDelayMax, true), "mosquitto_reconnect_delay_set")
    }

    /// Starts connecting and the network thread. A broker that is down now is not an error:
    /// the thread keeps trying with backoff. Returns why the first attempt failed, for the log.
    func start(host: String, port: Int32, keepalive: Int32) throws(MosquittoError) -> MosquittoError? {
        // A failed first attempt (refused, unreachable) still records host and port, and the
        // network thread retries them.
        let rc = mosquitto_connect_async(handle, host, port, keepalive)
        try check(mosquitto_loop_start(handle), "mosquitto_loop_start")
        return rc == CMOSQ_ERR_SUCCESS ? nil : MosquittoError(rc: rc, what: "connect")
    }

    /// Queues a message; its message id when libmosquitto took it (sent now or on the next
    /// connection), for matching `mosquittoPublished`.
    func publish(topic: String, payload: [UInt8], qos: Int32) -> Result<Int32, MosquittoError> {
        var mid: Int32 = 0
        let rc = payload.withUnsafeBytes { buf in
            mosquitto_publish(handle, &mid, topic, Int32(buf.count), buf.baseAddress, qos, false)
        }
        // NO_CONN: queued in the client's out queue (QoS > 0), sent after the reconnect.
        if rc == CMOSQ_ERR_SUCCESS || (rc == CMOSQ_ERR_NO_CONN && qos > 0) { return .success(mid) }
        return .failure(MosquittoError(rc: rc, what: "mosquitto_publish"))
    }

    func subscribe(_ pattern: String, qos: Int32) -> Result<Void, MosquittoError> {
        let rc = mosquitto_subscribe(handle, nil, pattern, qos)
        return rc == CMOSQ_ERR_SUCCESS ? .success(()) : .failure(MosquittoError(rc: rc, what: "mosquitto_subscribe"))
    }

    /// Disconnects cleanly and joins the network thread.
    func stop() {
        mosquitto_disconnect(handle)
        mosquitto_loop_stop(handle, false)
    }

    deinit {
        mosquitto_loop_stop(handle, true)
        mosquitto_destroy(handle)
    }
}

private func check(_ rc: Int32, _ what: String) throws(MosquittoError) {
    if rc != CMOSQ_ERR_SUCCESS { throw MosquittoError(rc: rc, what: what) }
}

/// The callbacks' context: the delegate, held strongly by the client for its whole life, so the
/// unretained pointer libmosquitto hands back stays valid until `mosquitto_destroy`.
private final class MosquittoContext: Sendable {
    let delegate: any MosquittoDelegate
    init(_ d: any MosquittoDelegate) { delegate = d }
}

private func delegate(_ obj: UnsafeMutableRawPointer?) -> (any MosquittoDelegate)? {
    guard let obj else { return nil }
    return Unmanaged<MosquittoContext>.fromOpaque(obj).takeUnretainedValue().delegate
}

func mosquittoOnConnect(_ mosq: OpaquePointer?, _ obj: UnsafeMutableRawPointer?, _ rc: Int32) {
    delegate(obj)?.mosquittoConnected(rc)
}

func mosquittoOnDisconnect(_ mosq: OpaquePointer?, _ obj: UnsafeMutableRawPointer?, _ rc: Int32) {
    delegate(obj)?.mosquittoDisconnected(rc)
}

func mosquittoOnMessage(_ mosq: OpaquePointer?, _ obj: UnsafeMutableRawPointer?, _ message: UnsafePointer<mosquitto_message>?) {
    guard let m = message?.pointee, let topic = m.topic else { return }
    let bytes: [UInt8]
    if let p = m.payload, m.payloadlen > 0 {
        bytes = Array(UnsafeRawBufferPointer(start: p, count: Int(m.payloadlen)))
    } else {
        bytes = []
    }
    delegate(obj)?.mosquittoMessage(topic: String(cString: topic), payload: bytes)
}

func mosquittoOnPublish(_ mosq: OpaquePointer?, _ obj: UnsafeMutableRawPointer?, _ mid: Int32) {
    delegate(obj)?.mosquittoPublished(mid)
}
