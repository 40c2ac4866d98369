import CDBus
import CDispatch  // `pthread_attr_t()`: clang attributes the merged pthread types to CDispatch
import CTocsinSystem
import Glibc
import Synchronization

/// One outstanding method call: the libdbus pending call plus who to tell.
///
/// Completed exactly once, by the reply, the libdbus timeout (which arrives as a NoReply error
/// reply), a disconnect, or cancellation.
final class PendingReply: Sendable {
    typealias Completion = @Sendable (Result<DBusMessage, DBusError>) -> Void
    private struct State {
        var completion: Completion?
        var pending: RawHandle?
        var onDone: (@Sendable () -> Void)?
    }
    private let state: Mutex<State>

    init(_ completion: @escaping Completion) {
        state = Mutex(State(completion: completion, pending: nil))
    }

    /// Loop thread: remember the libdbus pending call (we own one reference to it).
    func attach(_ pending: OpaquePointer, onDone: @escaping @Sendable () -> Void) {
        let handle = RawHandle(pending)
        state.withLock {
            $0.pending = handle
            $0.onDone = onDone
        }
    }

    /// Loop thread, at teardown: a call libdbus never completed (it raced with the disconnect).
    func abandon() {
        let pending = state.withLock { $0.pending }
        if let pending { dbus_pending_call_cancel(pending.raw) }
        complete(.failure(DBusError(.disconnected, "connection closed before a reply arrived")))
    }

    var isCompleted: Bool { state.withLock { $0.completion == nil } }

    func complete(_ result: Result<DBusMessage, DBusError>) {
        let (completion, pending, onDone) = state.withLock { s -> (Completion?, RawHandle?, (@Sendable () -> Void)?) in
            defer { s.completion = nil; s.pending = nil; s.onDone = nil }
            return (s.completion, s.pending, s.onDone)
        }
        if let pending { dbus_pending_call_unref(pending.raw) }
        onDone?()
        completion?(result)
    }

    /// Loop thread, from the notify callback during dispatch.
    func completeFromLibDBus() {
        let pending = state.withLock { $0.pending }
        guard let pending, let reply = dbus_pending_call_steal_reply(pending.raw) else {
            complete(.failure(DBusError(.noReply, "no reply")))
            return
        }
        let message = DBusMessage(owning: reply)
        if message.kind == .error {
            complete(.failure(message.asError))
        } else {
            complete(.success(message))
        }
    }

    /// Loop thread: give up on the call (task cancelled).
    func cancel() {
        let pending = state.withLock { $0.pending }
        if let pending { dbus_pending_call_cancel(pending.raw) }
        complete(.failure(DBusError(.cancelled, "call cancelled")))
    }
}

enum ConnectTarget: Sendable {
    case session, system
    case address(String, register: Bool)
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
    /// Every `events` stream handed out; nil once the connection has ended.
    private let eventListeners = Mutex<[UInt64: AsyncStream<DBusConnection.Event>.Continuation]?>([:])
    private let nextListenerID = Atomic<UInt64>(0)
    let connected = Atomic<Bool>(false)
    /// The largest message this side sends: replies and signals built from values above it are
    /// refused (see `DBusWireSize`).
    let maxMessageSize = Atomic<Int>(DBusWireSize.messageMaximum)
    let uniqueNameBox = Mutex<String?>(nil)

    // Loop thread only.
    private var conn: OpaquePointer?
    private var startup: CheckedContinuation<Void, any Error>?
    var objects: [ObjectPath: DBusExportedObject] = [:]
    var subscriptions: [UInt64: Subscription] = [:]
    private var disconnected = false
    /// Calls sent and not yet answered, so teardown can fail whatever libdbus left hanging.
    let outstanding = Mutex<[ObjectIdentifier: PendingReply]>([:])

    init(target: ConnectTarget) {
        self.target = target
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

    private func announceDisconnected() {
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
            var attr = pthread_attr_t()
            pthread_attr_init(&attr)
            pthread_attr_setdetachstate(&attr, Int32(PTHREAD_CREATE_DETACHED))
            var tid = pthread_t()
            let arg = Unmanaged.passRetained(self).toOpaque()
            let rc = pthread_create(&tid, &attr, cbThreadMain, arg)
            pthread_attr_destroy(&attr)
            if rc != 0 {
                Unmanaged<ConnectionCore>.fromOpaque(arg).release()
                self.startup = nil
                c.resume(throwing: DBusError(.noMemory, "cannot start D-Bus loop thread (errno \(rc))"))
            }
        }
    }

    // MARK: Loop thread

    func threadMain() {
        loop.loopThread.store(UInt(pthread_self()), ordering: .releasing)
        let epfd = tocsin_epoll_create()
        let evfd = tocsin_eventfd_create()
        guard epfd >= 0, evfd >= 0 else {
            if epfd >= 0 { Glibc.close(epfd) }
            if evfd >= 0 { Glibc.close(evfd) }
            finishStartup(.failure(DBusError(.noMemory, "cannot create epoll/eventfd (errno \(errno))")))
            loop.shared.withLock { $0.stopped = true }
            announceDisconnected()
            return
        }
        loop.epollFD = epfd
        loop.shared.withLock { $0.eventFD = evfd }
        _ = tocsin_epoll_add(epfd, evfd, TOCSIN_EPOLLIN)

        do {
            conn = try openConnection()
        } catch {
            shutdown(epfd: epfd, evfd: evfd)
            announceDisconnected()
            finishStartup(.failure(error))
            return
        }
        guard let conn else { return }
        dbus_connection_set_exit_on_disconnect(conn, 0)
        let ctx = contextPointer
        _ = dbus_connection_add_filter(conn, cbFilter, ctx, nil)
        _ = dbus_connection_set_watch_functions(conn, cbAddWatch, cbRemoveWatch, cbToggleWatch, ctx, nil)
        _ = dbus_connection_set_timeout_functions(conn, cbAddTimeout, cbRemoveTimeout, cbToggleTimeout, ctx, nil)
        dbus_connection_set_wakeup_main_function(conn, cbWakeupMain, ctx, nil)
        dbus_connection_set_dispatch_status_function(conn, cbDispatchStatus, ctx, nil)
        if let name = dbus_bus_get_unique_name(conn) {
            let s = String(cString: name)
            uniqueNameBox.withLock { $0 = s }
        }
        connected.store(true, ordering: .releasing)
        finishStartup(.success(()))

        runLoop(conn: conn)

        // Teardown: detach our callbacks before dropping the connection so libdbus never calls
        // back into a core that is going away.
        connected.store(false, ordering: .releasing)
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
        shutdown(epfd: epfd, evfd: evfd)
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

    private func finishStartup(_ result: Result<Void, any Error>) {
        let c = startup
        startup = nil
        c?.resume(with: result)
    }

    private func openConnection() throws -> OpaquePointer {
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
        switch target {
        case .session:
            guard let c = dbus_bus_get_private(DBUS_BUS_SESSION, &err) else { throw failure("cannot connect to session bus") }
            return c
        case .system:
            guard let c = dbus_bus_get_private(DBUS_BUS_SYSTEM, &err) else { throw failure("cannot connect to system bus") }
            return c
        case .address(let address, let register):
            guard !address.utf8.contains(0) else { throw DBusError(.badAddress, "address contains NUL") }
            guard let c = dbus_connection_open_private(address, &err) else { throw failure("cannot open \(address)") }
            if register, dbus_bus_register(c, &err) == 0 {
                dbus_connection_close(c)
                dbus_connection_unref(c)
                throw failure("Hello failed on \(address)")
            }
            return c
        }
    }

    private func runLoop(conn: OpaquePointer) {
        var fds = [Int32](repeating: 0, count: 32)
        var evs = [UInt32](repeating: 0, count: 32)
        while true {
            for job in loop.takeJobs() { job(conn) }
            while dbus_connection_get_dispatch_status(conn) == DBUS_DISPATCH_DATA_REMAINS {
                _ = dbus_connection_dispatch(conn)
            }
            if disconnected { return }
            if dbus_connection_get_is_connected(conn) == 0,
               dbus_connection_get_dispatch_status(conn) == DBUS_DISPATCH_COMPLETE { return }
            if loop.shared.withLock({ !$0.jobs.isEmpty }) { continue }
            loop.reconcileWatches()
            let timeout = loop.nextTimeoutMs()
            let n = fds.withUnsafeMutableBufferPointer { f in
                evs.withUnsafeMutableBufferPointer { e in
                    tocsin_epoll_wait(loop.epollFD, f.baseAddress, e.baseAddress, 32, timeout)
                }
            }
            loop.iterations.add(1, ordering: .relaxed)
            if n > 0 {
                for i in 0..<Int(n) {
                    if fds[i] == loop.shared.withLock({ $0.eventFD }) {
                        _ = tocsin_eventfd_drain(fds[i])
                    } else {
                        loop.handleReady(fd: fds[i], events: evs[i])
                    }
                }
            }
            loop.fireDueTimeouts()
        }
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

    // MARK: Sending (any thread)

    /// Sends without waiting for a reply. On the loop thread it goes straight to libdbus.
    func send(_ message: DBusMessage) {
        if loop.isOnLoopThread, let conn {
            Self.sendNow(conn, message)
            return
        }
        loop.enqueue { conn in
            if let conn { Self.sendNow(conn, message) }
        }
    }

    func send(_ messages: [DBusMessage]) {
        if loop.isOnLoopThread, let conn {
            for m in messages { Self.sendNow(conn, m) }
            return
        }
        loop.enqueue { conn in
            guard let conn else { return }
            for m in messages { Self.sendNow(conn, m) }
        }
    }

    @discardableResult
    static func sendNow(_ conn: OpaquePointer, _ message: DBusMessage) -> Bool {
        // libdbus aborts when asked to send descriptors over a transport that cannot carry them.
        if message.containsUnixFDs, dbus_connection_can_send_type(conn, CDBUS_TYPE_UNIX_FD) == 0 { return false }
        return dbus_connection_send(conn, message.raw, nil) != 0
    }

    /// Sends a method call and reports the reply (or error) through `box` exactly once.
    func call(_ message: DBusMessage, timeoutMs: Int32, box: PendingReply) {
        loop.enqueue { conn in
            if box.isCompleted { return }  // cancelled before it was sent
            guard let conn, dbus_connection_get_is_connected(conn) != 0 else {
                box.complete(.failure(DBusError(.disconnected, "connection is closed")))
                return
            }
            if message.containsUnixFDs, dbus_connection_can_send_type(conn, CDBUS_TYPE_UNIX_FD) == 0 {
                box.complete(.failure(DBusError(.notSupported, "this connection cannot pass file descriptors")))
                return
            }
            var pending: OpaquePointer?
            guard dbus_connection_send_with_reply(conn, message.raw, &pending, timeoutMs) != 0 else {
                box.complete(.failure(DBusError(.noMemory, "cannot send")))
                return
            }
            guard let pending else {
                box.complete(.failure(DBusError(.disconnected, "connection is closed")))
                return
            }
            let key = ObjectIdentifier(box)
            box.attach(pending) { [weak self] in _ = self?.outstanding.withLock { $0.removeValue(forKey: key) } }
            self.outstanding.withLock { $0[key] = box }
            // The notify callback owns one retain of the box, released by libdbus's free function.
            let retained = Unmanaged.passRetained(box).toOpaque()
            if dbus_pending_call_set_notify(pending, cbPendingNotify, retained, cbReleasePending) == 0 {
                Unmanaged<PendingReply>.fromOpaque(retained).release()
                box.cancel()
                return
            }
            // Completion only happens during dispatch on this thread, but be defensive.
            if dbus_pending_call_get_completed(pending) != 0 { box.completeFromLibDBus() }
        }
    }

    /// Loop thread (via a job) or at once once closed: runs `body` with the connection.
    func onLoop(_ body: @escaping @Sendable (ConnectionCore, OpaquePointer?) -> Void) {
        loop.enqueue { [self] conn in body(self, conn) }
    }

    func close() {
        loop.enqueue { conn in
            if let conn, dbus_connection_get_is_connected(conn) != 0 { dbus_connection_close(conn) }
        }
    }
}
