import CDBus
import CDispatch  // `pthread_attr_t()`: clang attributes the merged pthread types to CDispatch
import CTocsinSystem
import Dispatch
import Glibc
import Synchronization

/// A listening socket that peers connect to directly, with no bus daemon between them
/// (`dbus_server_listen`). Each accepted peer becomes a `DBusConnection` of its own.
///
/// What it is for: serving an API to one known client without a bus (a test that talks to the
/// daemon peer-to-peer, a benchmark that leaves the bus daemon's routing out). A peer connection
/// has no bus driver: no names, no `AddMatch`; every signal the peer emits arrives.
///
/// The listening socket is watched by a thread of its own, which sleeps in `epoll_wait` until a
/// peer connects or the server is closed. Closing (or dropping the last reference) stops it.
public final class DBusServer: Sendable {
    /// Where peers connect (`unix:path=...,guid=...`), as libdbus reports it.
    public let address: String
    private let core: ServerCore

    private init(address: String, core: ServerCore) {
        self.address = address
        self.core = core
    }

    deinit { core.stop() }

    /// Listens at `address` (`unix:tmpdir=/tmp` picks a fresh socket). Peers of the same user
    /// authenticate with EXTERNAL, as on a session bus.
    public static func listen(address: String = "unix:tmpdir=/tmp") async throws -> DBusServer {
        guard libdbusThreadsReady else { throw DBusError(.noMemory, "dbus_threads_init_default failed") }
        guard !address.utf8.contains(0) else { throw DBusError(.badAddress, "address contains NUL") }
        let core = ServerCore()
        let listening = try await core.start(address)
        return DBusServer(address: listening, core: core)
    }

    /// The next peer that connected (in the order they did), once its connection runs. Throws
    /// `Disconnected` when the server is closed, `CancellationError` when the task is cancelled.
    public func accept() async throws -> DBusConnection {
        let raw = try await core.nextPeer()
        return try await DBusConnection.adopt(accepted: raw)
    }

    /// Stops listening: once this returns, the socket is closed and nobody can connect. Peers
    /// already accepted keep their connections.
    public func close() { core.stop() }
}

/// The libdbus server and the thread that watches its socket.
///
/// `@unchecked Sendable`: `server` is touched only on the server's thread once it runs (and by
/// `start` before it does); the peer queue is a `Mutex`; the loop's own state is `EventLoop`'s.
final class ServerCore: @unchecked Sendable {
    let loop = EventLoop()
    private var server: OpaquePointer?

    private struct Peers {
        var ready: [RawHandle] = []
        var waiters: [UInt64: CheckedContinuation<RawHandle?, Never>] = [:]
        var nextWaiter: UInt64 = 0
        var closed = false
    }
    private let peers = Mutex(Peers())
    /// Signalled by the server thread once it has let go of the socket.
    private let stopped = DispatchSemaphore(value: 0)

    var contextPointer: UnsafeMutableRawPointer { Unmanaged.passUnretained(self).toOpaque() }

    /// Listens, installs the callbacks and starts the thread; returns the address.
    func start(_ address: String) async throws -> String {
        var err = CDBus.DBusError()
        dbus_error_init(&err)
        defer { dbus_error_free(&err) }
        guard let s = dbus_server_listen(address, &err) else {
            let message = err.message.map { String(cString: $0) } ?? "cannot listen at \(address)"
            throw DBusError(.failed, message)
        }
        let epfd = tocsin_epoll_create()
        let evfd = tocsin_eventfd_create()
        guard epfd >= 0, evfd >= 0 else {
            if epfd >= 0 { Glibc.close(epfd) }
            if evfd >= 0 { Glibc.close(evfd) }
            dbus_server_disconnect(s)
            dbus_server_unref(s)
            throw DBusError(.noMemory, "cannot create epoll/eventfd (errno \(errno))")
        }
        loop.epollFD = epfd
        loop.shared.withLock { $0.eventFD = evfd }
        _ = tocsin_epoll_add(epfd, evfd, TOCSIN_EPOLLIN)
        server = s
        let ctx = contextPointer
        dbus_server_set_new_connection_function(s, cbServerNewConnection, ctx, nil)
        _ = dbus_server_set_watch_functions(s, cbServerAddWatch, cbServerRemoveWatch, cbServerToggleWatch, ctx, nil)
        _ = dbus_server_set_timeout_functions(s, cbServerAddTimeout, cbServerRemoveTimeout, cbServerToggleTimeout, ctx, nil)
        let listening = dbus_server_get_address(s).map { p in
            defer { dbus_free(p) }
            return String(cString: p)
        } ?? address

        let rc = DBusThread.start { [self] in threadMain() }
        if rc != 0 {
            teardown()
            throw DBusError(.noMemory, "cannot start the D-Bus server thread (errno \(rc))")
        }
        return listening
    }

    /// Server thread: waits for peers until stopped, then lets go of the socket.
    func threadMain() {
        loop.loopThread.store(UInt(pthread_self()), ordering: .releasing)
        while true {
            if loop.shared.withLock({ $0.stopped }) { break }
            loop.reconcileWatches()
            var fd: Int32 = 0
            var events: UInt32 = 0
            let n = tocsin_epoll_wait(loop.epollFD, &fd, &events, 1, loop.nextTimeoutMs())
            if n > 0 {
                if fd == loop.shared.withLock({ $0.eventFD }) {
                    _ = tocsin_eventfd_drain(fd)
                } else {
                    loop.handleReady(fd: fd, events: events)
                }
            }
            loop.fireDueTimeouts()
        }
        teardown()
    }

    /// Detaches the callbacks before closing, so libdbus never calls into a core going away,
    /// and fails whoever still waits for a peer.
    private func teardown() {
        if let s = server {
            dbus_server_set_new_connection_function(s, nil, nil, nil)
            _ = dbus_server_set_watch_functions(s, nil, nil, nil, nil, nil)
            _ = dbus_server_set_timeout_functions(s, nil, nil, nil, nil, nil)
            dbus_server_disconnect(s)
            dbus_server_unref(s)
            server = nil
        }
        let evfd = loop.shared.withLock { s -> Int32 in
            s.stopped = true
            defer { s.eventFD = -1 }
            return s.eventFD
        }
        if evfd >= 0 { Glibc.close(evfd) }
        if loop.epollFD >= 0 { Glibc.close(loop.epollFD) }
        loop.epollFD = -1
        let (waiters, orphans) = peers.withLock { p -> ([CheckedContinuation<RawHandle?, Never>], [RawHandle]) in
            p.closed = true
            defer { p.waiters = [:]; p.ready = [] }
            return (Array(p.waiters.values), p.ready)
        }
        for w in waiters { w.resume(returning: nil) }
        for raw in orphans {
            dbus_connection_close(raw.raw)
            dbus_connection_unref(raw.raw)
        }
        stopped.signal()
    }

    /// Any thread but the server's: asks the server thread to stop, and waits (the moment it
    /// takes to close a socket) until it has, so a peer that connects after `close()` or the
    /// last reference is refused rather than left waiting. libdbus is only touched on that thread.
    func stop() {
        let first = loop.shared.withLock { s -> Bool in
            guard !s.stopped else { return false }
            s.stopped = true
            _ = tocsin_eventfd_signal(s.eventFD)
            return true
        }
        if first { stopped.wait() }
    }

    /// Server thread: a peer connected; libdbus closes it unless we keep a reference.
    func accepted(_ connection: OpaquePointer) {
        dbus_connection_ref(connection)
        let raw = RawHandle(connection)
        let waiter = peers.withLock { p -> CheckedContinuation<RawHandle?, Never>? in
            if let first = p.waiters.keys.min() { return p.waiters.removeValue(forKey: first) }
            p.ready.append(raw)
            return nil
        }
        waiter?.resume(returning: raw)
    }

    func nextPeer() async throws -> RawHandle {
        let id = peers.withLock { p -> UInt64 in
            p.nextWaiter += 1
            return p.nextWaiter
        }
        let raw: RawHandle? = await withTaskCancellationHandler {
            await withCheckedContinuation { (c: CheckedContinuation<RawHandle?, Never>) in
                let now: RawHandle?? = peers.withLock { p in
                    if !p.ready.isEmpty { return .some(p.ready.removeFirst()) }
                    if p.closed || Task.isCancelled { return .some(nil) }
                    p.waiters[id] = c
                    return .none
                }
                if let now { c.resume(returning: now) }
            }
        } onCancel: {
            peers.withLock { $0.waiters.removeValue(forKey: id) }?.resume(returning: nil)
        }
        if let raw { return raw }
        try Task.checkCancellation()
        throw DBusError(.disconnected, "the D-Bus server is closed")
    }
}

// MARK: - C callbacks (plain global functions: libdbus may call them on any thread)

private func serverFrom(_ data: UnsafeMutableRawPointer?) -> ServerCore? {
    data.map { Unmanaged<ServerCore>.fromOpaque($0).takeUnretainedValue() }
}

func cbServerNewConnection(_ server: OpaquePointer?, _ connection: OpaquePointer?, _ data: UnsafeMutableRawPointer?) {
    guard let connection, let core = serverFrom(data) else { return }
    core.accepted(connection)
}

func cbServerAddWatch(_ watch: OpaquePointer?, _ data: UnsafeMutableRawPointer?) -> dbus_bool_t {
    guard let watch, let core = serverFrom(data) else { return 0 }
    core.loop.watchChanged(watch, removed: false)
    return 1
}

func cbServerRemoveWatch(_ watch: OpaquePointer?, _ data: UnsafeMutableRawPointer?) {
    guard let watch, let core = serverFrom(data) else { return }
    core.loop.watchChanged(watch, removed: true)
}

func cbServerToggleWatch(_ watch: OpaquePointer?, _ data: UnsafeMutableRawPointer?) {
    guard let watch, let core = serverFrom(data) else { return }
    core.loop.watchChanged(watch, removed: false)
}

func cbServerAddTimeout(_ timeout: OpaquePointer?, _ data: UnsafeMutableRawPointer?) -> dbus_bool_t {
    guard let timeout, let core = serverFrom(data) else { return 0 }
    core.loop.timeoutChanged(timeout, removed: false)
    return 1
}

func cbServerRemoveTimeout(_ timeout: OpaquePointer?, _ data: UnsafeMutableRawPointer?) {
    guard let timeout, let core = serverFrom(data) else { return }
    core.loop.timeoutChanged(timeout, removed: true)
}

func cbServerToggleTimeout(_ timeout: OpaquePointer?, _ data: UnsafeMutableRawPointer?) {
    guard let timeout, let core = serverFrom(data) else { return }
    core.loop.timeoutChanged(timeout, removed: false)
}
