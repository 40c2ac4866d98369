import CDBus
import CTocsinSystem
import Glibc
import Synchronization

/// A thread with an event loop that a connection can run on instead of a thread of its own.
///
/// A daemon whose work all happens on one loop thread pays, per method call, two hand-overs
/// between the connection's thread and that loop (each a wake-up and a context switch), and one
/// more thread competing for the cores. Hosted, the connection's messages are read, dispatched
/// and answered on the loop thread itself; handlers' tasks are enqueued without a wake-up and
/// their replies are written straight to the socket.
///
/// The connection is still opened on a thread of its own, so a bus that accepts the socket but
/// never answers `Hello` cannot stall the host.
public protocol DBusLoopHost: Sendable {
    /// Runs `job` on the host's thread, after what is already queued.
    func enqueue(_ job: @escaping @Sendable () -> Void)
    /// Calls `handler` on the host's thread whenever `fd` is readable (level-triggered).
    func watch(_ fd: Int32, _ handler: @escaping @Sendable () -> Void)
    /// Stops calling the handler of `fd`; called on the host's thread.
    func unwatch(_ fd: Int32)
}

extension ConnectionCore {
    /// Host thread: takes the connection over from the thread that opened it. The connection's
    /// epoll set (its socket, the eventfd other threads write, a timerfd for libdbus timeouts)
    /// is one descriptor the host watches: readable whenever any of them is.
    func adopt(_ host: any DBusLoopHost) {
        loop.loopThread.store(UInt(pthread_self()), ordering: .releasing)
        loop.hosted.store(true, ordering: .releasing)
        // Without the timerfd libdbus's timeouts would never fire and a call nobody answers would
        // wait forever: refuse to start instead.
        let timer = tocsin_timerfd_create_monotonic()
        guard timer >= 0, conn != nil else {
            finishStartup(.failure(DBusError(.noMemory, "cannot create a timerfd for the hosted connection (errno \(errno))")))
            if timer >= 0 { Glibc.close(timer) }
            if let conn { teardown(conn) }
            return
        }
        loop.timerFD = timer
        _ = tocsin_epoll_add(loop.epollFD, timer, TOCSIN_EPOLLIN)
        let epfd = loop.epollFD
        host.watch(epfd) { [self] in hostedRound(host) }
        finishStartup(.success(()))
        hostedRound(host)
    }

    /// Host thread: rounds while work is immediately there, a bounded number so other work on
    /// the host is not starved (what is left keeps the eventfd readable), then arms the timerfd
    /// for the next libdbus timeout. Ends the connection when it is gone.
    private func hostedRound(_ host: any DBusLoopHost) {
        guard let conn else { return }
        loop.iterating = true
        loop.wakePending = false
        var rounds = 0
        var alive = true
        while true {
            alive = iterate(conn, waiting: false)
            rounds += 1
            guard alive else { break }
            let more = dbus_connection_get_dispatch_status(conn) == DBUS_DISPATCH_DATA_REMAINS
                || loop.shared.withLock { !$0.jobs.isEmpty }
            if !more { break }
            if rounds == 16 {
                loop.shared.withLock { s in _ = tocsin_eventfd_signal(s.eventFD) }
                break
            }
        }
        loop.iterating = false
        guard alive else {
            host.unwatch(loop.epollFD)
            Glibc.close(loop.timerFD)
            loop.timerFD = -1
            teardown(conn)
            return
        }
        // What the last round's reads, writes and timeouts changed must be in the epoll set
        // before the host sleeps: a thread of its own would reconcile before its next wait.
        loop.reconcileWatches()
        let ms = loop.nextTimeoutMs()
        if ms < 0 {
            _ = tocsin_timerfd_disarm(loop.timerFD)
        } else {
            _ = tocsin_timerfd_arm_absolute_nsec(loop.timerFD, tocsin_monotonic_nsec() + Int64(ms) * 1_000_000)
        }
    }
}
