import CDBus
import CDispatch  // `pthread_attr_t()`: clang attributes the merged pthread types to CDispatch
import CTocsinSystem
import Glibc
import Synchronization

enum ConnectTarget: Sendable {
    case session, system
    case address(String, register: Bool)
    /// A peer a `DBusServer` accepted, already referenced for us.
    case accepted(RawHandle)

    /// No bus daemon between the two ends: no Hello, no names, no match rules.
    var isPeerToPeer: Bool {
        switch self {
        case .session, .system: return false
        case .address(_, let register): return !register
        case .accepted: return true
        }
    }
}

struct Subscription {
    let rule: MatchRule
    let continuation: AsyncStream<DBusSignal>.Continuation
}

/// The libdbus connection and everything only the loop thread may touch.
///
/// `@unchecked Sendable`: the `var`s below "Loop thread only" are confined to the loop thread
/// (other threads reach them through `onLoop` jobs; `startup` is set before the thread is
/// created); everything else is immutable, a `Mutex` or an `Atomic`.
final class ConnectionCore: @unchecked Sendable {
    let loop = EventLoop()
    let target: ConnectTarget
    /// When set, the connection runs on this loop's thread instead of a thread of its own.
    let host: (any DBusLoopHost)?
    /// Every `events` stream handed out; nil once the connection has ended.
    private let eventListeners = Mutex<[UInt64: AsyncStream<DBusConnection.Event>.Continuation]?>([:])
    private let nextListenerID = Atomic<UInt64>(0)
    let connected = Atomic<Bool>(false)
    /// The largest message this side sends: replies and signals built from values above it are
    /// refused (see `DBusWireSize`).
    let maxMessageSize = Atomic<Int>(DBusWireSize.messageMaximum)
    let uniqueNameBox = Mutex<String?>(nil)

    // Loop thread only.
    var conn: OpaquePointer?
    private var startup: CheckedContinuation<Void, any Error>?
    var objects: [ObjectPath: DBusExportedObject] = [:]
    var subscriptions: [UInt64: Subscription] = [:]
    private var disconnected = false
    /// Calls sent and not yet answered, so teardown can fail whatever libdbus left hanging.
    let outstanding = Mutex<[ObjectIdentifier: PendingReply]>([:])

    /// How long the bus has to authenticate us and answer `Hello`, in libdbus's milliseconds
    /// (`CDBUS_TIMEOUT_USE_DEFAULT`: its 25 s).
    let connectTimeoutMs: Int32

    init(target: ConnectTarget, host: (any DBusLoopHost)? = nil, connectTimeoutMs: Int32 = CDBUS_TIMEOUT_USE_DEFAULT) {
        self.target = target
        self.host = host
        self.connectTimeoutMs = connectTimeoutMs
    }

    /// A new stream of lifecycle events; one that starts after the end gets `.disconnected` at once.
    func makeEventStream() -> AsyncStream<DBusConnection.Event> {
        let (stream, continuation) = AsyncStream<DBusConnection.Event>.makeStream(bufferingPolicy: .unbounded)
        let id = nextListenerID.add(1, ordering: .relaxed).newValue
        let live = eventListeners.withLock { listeners -> Bool in
            guard listeners != nil else { return false }
            listeners?[id] = continuation
            return true
        }
        if live {
            continuation.onTermination = { [weak self] _ in
                _ = self?.eventListeners.withLock { $0?.removeValue(forKey: id) }
            }
        } else {
            continuation.yield(.disconnected)
            continuation.finish()
        }
        return stream
    }

    private func broadcast(_ event: DBusConnection.Event) {
        let listeners = eventListeners.withLock { $0.map { Array($0.values) } ?? [] }
        for c in listeners { c.yield(event) }
    }

    func announceDisconnected() {
        let listeners = eventListeners.withLock { l -> [AsyncStream<DBusConnection.Event>.Continuation] in
            defer { l = nil }
            return l.map { Array($0.values) } ?? []
        }
        for c in listeners {
            c.yield(.disconnected)
            c.finish()
        }
    }

    var contextPointer: UnsafeMutableRawPointer { Unmanaged.passUnretained(self).toOpaque() }

    /// Starts the loop thread, which opens the connection; returns once it is registered.
    func start() async throws {
        guard libdbusThreadsReady else { throw DBusError(.noMemory, "dbus_threads_init_default failed") }
        try await withCheckedThrowingContinuation { (c: CheckedContinuation<Void, any Error>) in
            self.startup = c
            let rc = DBusThread.start { [self] in threadMain() }
            if rc != 0 {
                self.startup = nil
                c.resume(throwing: DBusError(.noMemory, "cannot start D-Bus loop thread (errno \(rc))"))
            }
        }
    }

    // MARK: Loop thread

    func threadMain() {
        loop.loopThread.store(UInt(pthread_self()), ordering: .releasing)
        guard let conn = open() else { return }
        if let host {
            // Opened here, so a bus that accepts but never answers `Hello` cannot stall the host.
            // Until the host takes over, no thread counts as the loop's (this one's id may be reused).
            loop.loopThread.store(0, ordering: .releasing)
            host.enqueue { [self] in adopt(host) }
            return
        }
        finishStartup(.success(()))
        while iterate(conn, waiting: true) {}
        teardown(conn)
    }

    /// Creates the loop's descriptors and the connection, with our callbacks installed; on
    /// failure reports it to `start()` and returns nil.
    private func open() -> OpaquePointer? {
        let epfd = tocsin_epoll_create()
        let evfd = tocsin_eventfd_create()
        guard epfd >= 0, evfd >= 0 else {
            if epfd >= 0 { Glibc.close(epfd) }
            if evfd >= 0 { Glibc.close(evfd) }
            finishStartup(.failure(DBusError(.noMemory, "cannot create epoll/eventfd (errno \(errno))")))
            loop.shared.withLock { $0.stopped = true }
            announceDisconnected()
            return nil
        }
        loop.epollFD = epfd
        loop.shared.withLock { $0.eventFD = evfd }
        _ = tocsin_epoll_add(epfd, evfd, TOCSIN_EPOLLIN)

        let helloTo: String?
        do {
            (conn, helloTo) = try openConnection()
        } catch {
            shutdown(epfd: epfd, evfd: evfd)
            announceDisconnected()
            finishStartup(.failure(error))
            return nil
        }
        guard let conn else { return nil }
        dbus_connection_set_exit_on_disconnect(conn, 0)
        let ctx = contextPointer
        _ = dbus_connection_add_filter(conn, cbFilter, ctx, nil)
        _ = dbus_connection_set_watch_functions(conn, cbAddWatch, cbRemoveWatch, cbToggleWatch, ctx, nil)
        _ = dbus_connection_set_timeout_functions(conn, cbAddTimeout, cbRemoveTimeout, cbToggleTimeout, ctx, nil)
        dbus_connection_set_wakeup_main_function(conn, cbWakeupMain, ctx, nil)
        dbus_connection_set_dispatch_status_function(conn, cbDispatchStatus, ctx, nil)
        if let address = helloTo {
            do {
                try register(conn, address: address)
            } catch {
                teardown(conn)
                finishStartup(.failure(error))
                return nil
            }
        }
        if let name = dbus_bus_get_unique_name(conn) {
            let s = String(cString: name)
            uniqueNameBox.withLock { $0 = s }
        }
        connected.store(true, ordering: .releasing)
        return conn
    }

    /// Detaches our callbacks before dropping the connection, so libdbus never calls back into
    /// a core that is going away, and fails whatever was left waiting.
    func teardown(_ conn: OpaquePointer) {
        connected.store(false, ordering: .releasing)
        let ctx = contextPointer
        dbus_connection_remove_filter(conn, cbFilter, ctx)
        _ = dbus_connection_set_watch_functions(conn, nil, nil, nil, nil, nil)
        _ = dbus_connection_set_timeout_functions(conn, nil, nil, nil, nil, nil)
        dbus_connection_set_wakeup_main_function(conn, nil, nil, nil)
        dbus_connection_set_dispatch_status_function(conn, nil, nil, nil)
        if dbus_connection_get_is_connected(conn) != 0 { dbus_connection_close(conn) }
        self.conn = nil
        for box in outstanding.withLock({ Array($0.values) }) { box.abandon() }
        finishSubscriptions()
        objects = [:]
        shutdown(epfd: loop.epollFD, evfd: loop.shared.withLock { $0.eventFD })
        dbus_connection_unref(conn)
        announceDisconnected()
    }

    private func shutdown(epfd: Int32, evfd: Int32) {
        let leftover = loop.shared.withLock { s -> [LoopJob] in
            s.stopped = true
            s.eventFD = -1
            let jobs = s.jobs
            s.jobs = []
            return jobs
        }
        for job in leftover { job(nil) }
        Glibc.close(epfd)
        Glibc.close(evfd)
    }

    func finishStartup(_ result: Result<Void, any Error>) {
        let c = startup
        startup = nil
        c?.resume(with: result)
    }

    /// Opens the socket; the bus address still owed a `Hello` when there is one. The handshake
    /// is left to `register`, which bounds it: libdbus's own (`dbus_bus_register`, and
    /// `dbus_bus_get_private` through it) flushes the `Hello` before waiting with its timeout,
    /// and that flush blocks without one until authentication is over, so a socket that accepts
    /// and never answers held the caller forever.
    private func openConnection() throws -> (OpaquePointer, helloTo: String?) {
        var err = CDBus.DBusError()
        dbus_error_init(&err)
        defer { dbus_error_free(&err) }
        func failure(_ fallback: String) -> DBusError {
            if dbus_error_is_set(&err) != 0 {
                return DBusError(
                    name: err.name.map { String(cString: $0) } ?? DBusError.Code.failed.name,
                    message: err.message.map { String(cString: $0) } ?? fallback)
            }
            return DBusError(.failed, fallback)
        }
        let address: String
        let register: Bool
        switch target {
        case .session:
            guard let found = Self.sessionBusAddress() else {
                // Only autolaunch is left, which starts a bus of its own (X11 and dbus-launch),
                // so libdbus does it, handshake included.
                guard let c = dbus_bus_get_private(DBUS_BUS_SESSION, &err) else { throw failure("cannot connect to session bus") }
                return (c, nil)
            }
            (address, register) = (found, true)
        case .system:
            (address, register) = (Self.systemBusAddress(), true)
        case .address(let a, let r):
            (address, register) = (a, r)
        case .accepted(let peer):
            return (peer.raw, nil)
        }
        guard !address.utf8.contains(0) else { throw DBusError(.badAddress, "address contains NUL") }
        guard let c = dbus_connection_open_private(address, &err) else { throw failure("cannot open \(address)") }
        return (c, register ? address : nil)
    }

    /// Where libdbus looks for the session bus before autolaunching (1.14,
    /// `_dbus_lookup_user_bus`): `DBUS_SESSION_BUS_ADDRESS`, else `$XDG_RUNTIME_DIR/bus` when it
    /// is a socket of this user. Nil when neither is there.
    static func sessionBusAddress() -> String? {
        if let env = getenv("DBUS_SESSION_BUS_ADDRESS") { return String(cString: env) }
        guard let dir = getenv("XDG_RUNTIME_DIR") else { return nil }
        let path = String(cString: dir) + "/bus"
        var st = stat()
        guard lstat(path, &st) == 0, st.st_uid == getuid(), st.st_mode & S_IFMT == S_IFSOCK,
              let escaped = dbus_address_escape_value(path) else { return nil }
        defer { dbus_free(escaped) }
        return "unix:path=" + String(cString: escaped)
    }

    /// `DBUS_SYSTEM_BUS_ADDRESS`, else the specification's well-known socket.
    static func systemBusAddress() -> String {
        if let env = getenv("DBUS_SYSTEM_BUS_ADDRESS") { return String(cString: env) }
        return "unix:path=/var/run/dbus/system_bus_socket"
    }

    /// Loop thread, before the connection is handed out: sends `Hello` as an ordinary call and
    /// runs the loop until it is answered. Its pending call's timeout starts now, while libdbus
    /// still authenticates, so one deadline covers the handshake and `Hello`.
    private func register(_ conn: OpaquePointer, address: String) throws {
        let hello = try DBusMessage.methodCall(
            destination: BusName(unchecked: "org.freedesktop.DBus"), path: ObjectPath(unchecked: "/org/freedesktop/DBus"),
            interface: .bus, member: MemberName(unchecked: "Hello"))
        let answer = Mutex<Result<DBusMessage, DBusError>?>(nil)
        call(hello, timeoutMs: connectTimeoutMs, box: PendingReply { r in answer.withLock { $0 = r } })
        // Dispatching here, not only in `iterate`: there it comes before the wait, so the round
        // that completes the call would then sleep with no timeout left to wake it.
        repeat {
            while dbus_connection_get_dispatch_status(conn) == DBUS_DISPATCH_DATA_REMAINS {
                _ = dbus_connection_dispatch(conn)
            }
        } while answer.withLock({ $0 }) == nil && iterate(conn, waiting: true)
        switch answer.withLock({ $0 }) {
        case .success(let reply):
            guard case .string(let name)? = try? reply.arguments().first, !name.utf8.contains(0),
                  dbus_bus_set_unique_name(conn, name) != 0 else {
                throw DBusError(.failed, "the bus at \(address) answered Hello without a unique name")
            }
        case .failure(let e) where e.code == .noReply && dbus_connection_get_is_connected(conn) != 0:
            let phase = dbus_connection_get_is_authenticated(conn) != 0 ? "did not answer Hello" : "did not complete authentication"
            throw DBusError(.timeout, "the bus at \(address) accepted the connection but \(phase) within \(Self.describe(milliseconds: connectTimeoutMs))")
        case .failure(let e) where e.code != .noReply:
            throw e
        case .failure, nil:
            throw DBusError(.disconnected, "the bus at \(address) closed the connection before answering Hello")
        }
    }

    /// `2s`, `1500ms`: a deadline as the errors that name it show it.
    static func describe(milliseconds ms: Int32) -> String {
        if ms == CDBUS_TIMEOUT_USE_DEFAULT { return "libdbus's default of 25s" }
        return ms % 1000 == 0 ? "\(ms / 1000)s" : "\(ms)ms"
    }

    /// One round of the loop: queued jobs, dispatch, then the descriptors. `waiting` blocks in
    /// `epoll_wait` until something happens (the connection's own thread); a hosted connection
    /// only takes what is ready. Returns false once the connection has ended.
    func iterate(_ conn: OpaquePointer, waiting: Bool) -> Bool {
        for job in loop.takeJobs() { job(conn) }
        while dbus_connection_get_dispatch_status(conn) == DBUS_DISPATCH_DATA_REMAINS {
            _ = dbus_connection_dispatch(conn)
        }
        if disconnected { return false }
        if dbus_connection_get_is_connected(conn) == 0,
           dbus_connection_get_dispatch_status(conn) == DBUS_DISPATCH_COMPLETE { return false }
        if loop.shared.withLock({ !$0.jobs.isEmpty }) { return true }
        loop.reconcileWatches()
        let timeout = waiting ? loop.nextTimeoutMs() : 0
        var fds = (Int32(0), Int32(0), Int32(0), Int32(0), Int32(0), Int32(0), Int32(0), Int32(0))
        var evs = (UInt32(0), UInt32(0), UInt32(0), UInt32(0), UInt32(0), UInt32(0), UInt32(0), UInt32(0))
        let n = withUnsafeMutableBytes(of: &fds) { f in
            withUnsafeMutableBytes(of: &evs) { e in
                tocsin_epoll_wait(loop.epollFD, f.baseAddress!.assumingMemoryBound(to: Int32.self),
                                  e.baseAddress!.assumingMemoryBound(to: UInt32.self), 8, timeout)
            }
        }
        loop.iterations.add(1, ordering: .relaxed)
        if n > 0 {
            let eventFD = loop.shared.withLock { $0.eventFD }
            withUnsafeBytes(of: fds) { f in
                withUnsafeBytes(of: evs) { e in
                    for i in 0..<Int(n) {
                        let fd = f.load(fromByteOffset: i * 4, as: Int32.self)
                        if fd == eventFD {
                            _ = tocsin_eventfd_drain(fd)
                        } else if fd == loop.timerFD {
                            _ = tocsin_timerfd_read(fd)  // due timeouts are handled below
                        } else {
                            loop.handleReady(fd: fd, events: e.load(fromByteOffset: i * 4, as: UInt32.self))
                        }
                    }
                }
            }
        }
        loop.fireDueTimeouts()
        return true
    }

    /// Loop thread: every incoming message passes here first. Returns true when handled.
    func filter(_ message: DBusMessage) -> Bool {
        switch message.kind {
        case .signal:
            if message.interface?.rawValue == "org.freedesktop.DBus.Local",
               message.member?.rawValue == "Disconnected" {
                disconnected = true
                connected.store(false, ordering: .releasing)
                return true
            }
            if message.sender?.rawValue == "org.freedesktop.DBus", message.interface == .bus,
               let member = message.member?.rawValue, member == "NameAcquired" || member == "NameLost",
               let first = try? message.arguments().first, case .string(let raw) = first,
               let name = BusName(validating: raw), !name.isUnique {
                broadcast(member == "NameAcquired" ? .nameAcquired(name) : .nameLost(name))
            }
            deliverSignal(message)
            return false
        case .methodCall:
            routeMethodCall(message)
            return true
        default:
            return false
        }
    }

    private func deliverSignal(_ message: DBusMessage) {
        guard !subscriptions.isEmpty else { return }
        var decoded: DBusSignal?
        for (_, sub) in subscriptions where sub.rule.matches(message) {
            if decoded == nil {
                guard let path = message.path, let iface = message.interface, let member = message.member,
                      let args = try? message.arguments() else { return }
                decoded = DBusSignal(
                    sender: message.sender, destination: message.destination, path: path, interface: iface,
                    member: member, arguments: args)
            }
            if let decoded { sub.continuation.yield(decoded) }
        }
    }

    private func finishSubscriptions() {
        for (_, sub) in subscriptions { sub.continuation.finish() }
        subscriptions = [:]
    }
}
