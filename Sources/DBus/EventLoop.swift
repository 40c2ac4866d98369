import CDBus
import CTocsinSystem
import Glibc
import Synchronization

// MARK: - Threading design
//
// One thread per connection owns every libdbus call that touches the connection: opening it,
// sending, dispatching, pending-call bookkeeping. It sleeps in epoll_wait on the descriptors
// libdbus asks to watch plus one eventfd. Other threads never call into the connection; they
// append a job to a queue and write the eventfd, so a queued message goes out at once instead
// of waiting behind a blocking read. The epoll timeout comes only from libdbus timeouts that are
// enabled, so an idle connection sleeps indefinitely: no polling, no periodic wakeups.
//
// Method handlers are async and run on Swift's global executor, never on the loop thread; their
// replies come back through the job queue. A slow handler therefore cannot stall the loop.
//
// libdbus may still invoke the watch/timeout callbacks from another thread (for instance when a
// received message is freed elsewhere and the live-message counter crosses its limit), so the
// watch and timeout tables live behind a mutex and such callbacks wake the loop to re-read them.

/// `dbus_threads_init_default` must run before libdbus is used from more than one thread.
let libdbusThreadsReady: Bool = dbus_threads_init_default() != 0

/// A libdbus object pointer that may cross threads: libdbus objects are internally locked
/// once `dbus_threads_init_default` has run, and we only use them where libdbus allows.
struct RawHandle: @unchecked Sendable, Hashable {
    let raw: OpaquePointer
    init(_ raw: OpaquePointer) { self.raw = raw }
}

struct WatchRecord {
    var fd: Int32
    var flags: UInt32
    var enabled: Bool
}

struct TimeoutRecord {
    var intervalMs: Int64
    var enabled: Bool
    var deadlineMs: Int64
}

typealias LoopJob = @Sendable (OpaquePointer?) -> Void

struct LoopShared: ~Copyable {
    var jobs: [LoopJob] = []
    var watches: [RawHandle: WatchRecord] = [:]
    var timeouts: [RawHandle: TimeoutRecord] = [:]
    /// Set once the loop has exited; later jobs run at once with a nil connection.
    var stopped = false
    var eventFD: Int32 = -1
}

/// The state shared by the loop thread and the rest of the process.
///
/// `@unchecked Sendable`: fields marked "loop thread only" are touched only from the loop thread
/// (checked in debug builds); everything else is behind `shared` or atomic.
final class EventLoop: @unchecked Sendable {
    let shared = Mutex(LoopShared())
    let loopThread = Atomic<UInt>(0)
    /// Iterations of the loop (returns from epoll_wait): lets tests prove an idle loop sleeps.
    let iterations = Atomic<Int>(0)

    // Loop thread only.
    var epollFD: Int32 = -1
    /// A hosted connection's timerfd for libdbus timeouts (-1 on a connection's own thread,
    /// which sleeps in `epoll_wait` with the timeout instead).
    var timerFD: Int32 = -1
    /// Set while a hosted connection is inside `iterate`: changes made then are picked up
    /// before it returns, so they need no wake-up.
    var iterating = false
    /// Set when the loop thread has written the eventfd for a hosted connection since the host's
    /// last round began: until that round, which picks up every change made before it, further
    /// changes need no write. Once the socket is full, libdbus asks for a wake-up on every send
    /// while its outgoing queue is not empty, and toggles its write watch as the bus reads: for a
    /// burst of a thousand signals sent from a task, hundreds of writes otherwise.
    var wakePending = false
    /// Set once a hosted connection runs on its host (read by `wake` on any thread).
    let hosted = Atomic<Bool>(false)
    /// What the epoll set holds now; reconciled against the watch table every iteration.
    var registered: [Int32: UInt32] = [:]

    var isOnLoopThread: Bool {
        let t = loopThread.load(ordering: .acquiring)
        return t != 0 && pthread_equal(pthread_self(), pthread_t(t)) != 0
    }

    /// Queues work for the loop thread; runs it inline with a nil connection once the loop is gone.
    /// Only the job that finds the queue empty writes the eventfd: the loop drains the whole queue
    /// and re-checks it before sleeping, so a burst of replies costs one wake-up, not one each.
    func enqueue(_ job: @escaping LoopJob) {
        // The write stays under the lock: shutdown closes the eventfd under it.
        let runNow = shared.withLock { s -> Bool in
            if s.stopped { return true }
            if s.jobs.isEmpty { _ = tocsin_eventfd_signal(s.eventFD) }
            s.jobs.append(job)
            return false
        }
        if runNow { job(nil) }
    }

    /// Wakes the loop. On its own thread that is needed only for a hosted connection changed
    /// outside its iteration (a reply sent by a task that could not all be written, say): the
    /// host calls it again once the eventfd is readable.
    func wake() {
        if isOnLoopThread {
            if !hosted.load(ordering: .relaxed) || iterating || wakePending { return }
            wakePending = true
        }
        shared.withLock { s in
            if !s.stopped { _ = tocsin_eventfd_signal(s.eventFD) }
        }
    }

    func takeJobs() -> [LoopJob] {
        shared.withLock { s in
            let jobs = s.jobs
            s.jobs = []
            return jobs
        }
    }

    // MARK: Watches

    func watchChanged(_ watch: OpaquePointer, removed: Bool) {
        let record = WatchRecord(
            fd: dbus_watch_get_unix_fd(watch), flags: dbus_watch_get_flags(watch),
            enabled: dbus_watch_get_enabled(watch) != 0)
        let handle = RawHandle(watch)
        shared.withLock { s in
            if removed { s.watches[handle] = nil } else { s.watches[handle] = record }
        }
        // On the loop thread the change is picked up before the next epoll_wait anyway.
        wake()
    }

    func timeoutChanged(_ timeout: OpaquePointer, removed: Bool) {
        let record = TimeoutRecord(
            intervalMs: Int64(dbus_timeout_get_interval(timeout)), enabled: dbus_timeout_get_enabled(timeout) != 0,
            deadlineMs: tocsin_monotonic_msec() + Int64(dbus_timeout_get_interval(timeout)))
        let handle = RawHandle(timeout)
        shared.withLock { s in
            if removed { s.timeouts[handle] = nil } else { s.timeouts[handle] = record }
        }
        wake()
    }

    /// Brings the epoll set in line with the enabled watches (several watches may share an fd).
    func reconcileWatches() {
        var wanted: [Int32: UInt32] = [:]
        shared.withLock { s in
            for (_, w) in s.watches where w.enabled && w.fd >= 0 {
                var events: UInt32 = 0
                if w.flags & DBUS_WATCH_READABLE.rawValue != 0 { events |= TOCSIN_EPOLLIN }
                if w.flags & DBUS_WATCH_WRITABLE.rawValue != 0 { events |= TOCSIN_EPOLLOUT }
                wanted[w.fd, default: 0] |= events
            }
        }
        for (fd, _) in registered where (wanted[fd] ?? 0) == 0 {
            _ = tocsin_epoll_remove(epollFD, fd)
            registered[fd] = nil
        }
        for (fd, events) in wanted where events != 0 {
            if let current = registered[fd] {
                // MOD fails if the kernel already dropped a closed fd whose number came back.
                if current != events, tocsin_epoll_modify(epollFD, fd, events) != 0 {
                    _ = tocsin_epoll_add(epollFD, fd, events)
                }
            } else {
                _ = tocsin_epoll_add(epollFD, fd, events)
            }
            registered[fd] = events
        }
    }

    /// Milliseconds until the earliest enabled libdbus timeout, or -1 to sleep until woken.
    func nextTimeoutMs() -> Int32 {
        let earliest = shared.withLock { s in
            s.timeouts.values.filter(\.enabled).map(\.deadlineMs).min()
        }
        guard let earliest else { return -1 }
        let delta = max(0, earliest - tocsin_monotonic_msec())
        return Int32(min(delta, Int64(Int32.max)))
    }

    func handleReady(fd: Int32, events: UInt32) {
        var flags: UInt32 = 0
        if events & TOCSIN_EPOLLIN != 0 { flags |= DBUS_WATCH_READABLE.rawValue }
        if events & TOCSIN_EPOLLOUT != 0 { flags |= DBUS_WATCH_WRITABLE.rawValue }
        if events & TOCSIN_EPOLLERR != 0 { flags |= DBUS_WATCH_ERROR.rawValue }
        if events & TOCSIN_EPOLLHUP != 0 { flags |= DBUS_WATCH_HANGUP.rawValue }
        let candidates = shared.withLock { s in
            s.watches.filter { $0.value.fd == fd && $0.value.enabled }.map(\.key)
        }
        let always = DBUS_WATCH_ERROR.rawValue | DBUS_WATCH_HANGUP.rawValue
        for watch in candidates {
            // A previous handle call may have removed or disabled this watch.
            guard let record = shared.withLock({ s in s.watches[watch] }), record.enabled else { continue }
            let relevant = flags & (record.flags | always)
            if relevant != 0 { _ = dbus_watch_handle(watch.raw, relevant) }
        }
    }

    func fireDueTimeouts() {
        let now = tocsin_monotonic_msec()
        let due = shared.withLock { s -> [RawHandle] in
            var due: [RawHandle] = []
            for (t, var r) in s.timeouts where r.enabled && r.deadlineMs <= now {
                r.deadlineMs = now + max(1, r.intervalMs)
                s.timeouts[t] = r
                due.append(t)
            }
            return due
        }
        for t in due {
            guard shared.withLock({ s in s.timeouts[t]?.enabled ?? false }) else { continue }
            _ = dbus_timeout_handle(t.raw)
        }
    }
}

// MARK: - C callbacks (plain global functions: libdbus may call them on any thread)

func loopFrom(_ data: UnsafeMutableRawPointer?) -> EventLoop? {
    data.map { Unmanaged<ConnectionCore>.fromOpaque($0).takeUnretainedValue().loop }
}

func cbAddWatch(_ watch: OpaquePointer?, _ data: UnsafeMutableRawPointer?) -> dbus_bool_t {
    guard let watch, let loop = loopFrom(data) else { return 0 }
    loop.watchChanged(watch, removed: false)
    return 1
}

func cbRemoveWatch(_ watch: OpaquePointer?, _ data: UnsafeMutableRawPointer?) {
    guard let watch, let loop = loopFrom(data) else { return }
    loop.watchChanged(watch, removed: true)
}

func cbToggleWatch(_ watch: OpaquePointer?, _ data: UnsafeMutableRawPointer?) {
    guard let watch, let loop = loopFrom(data) else { return }
    loop.watchChanged(watch, removed: false)
}

func cbAddTimeout(_ timeout: OpaquePointer?, _ data: UnsafeMutableRawPointer?) -> dbus_bool_t {
    guard let timeout, let loop = loopFrom(data) else { return 0 }
    loop.timeoutChanged(timeout, removed: false)
    return 1
}

func cbRemoveTimeout(_ timeout: OpaquePointer?, _ data: UnsafeMutableRawPointer?) {
    guard let timeout, let loop = loopFrom(data) else { return }
    loop.timeoutChanged(timeout, removed: true)
}

func cbToggleTimeout(_ timeout: OpaquePointer?, _ data: UnsafeMutableRawPointer?) {
    guard let timeout, let loop = loopFrom(data) else { return }
    loop.timeoutChanged(timeout, removed: false)
}

func cbWakeupMain(_ data: UnsafeMutableRawPointer?) {
    loopFrom(data)?.wake()
}

func cbDispatchStatus(_ conn: OpaquePointer?, _ status: DBusDispatchStatus, _ data: UnsafeMutableRawPointer?) {
    if status == DBUS_DISPATCH_DATA_REMAINS { loopFrom(data)?.wake() }
}

func cbFilter(_ conn: OpaquePointer?, _ message: OpaquePointer?, _ data: UnsafeMutableRawPointer?) -> DBusHandlerResult {
    guard let message, let data else { return DBUS_HANDLER_RESULT_NOT_YET_HANDLED }
    let core = Unmanaged<ConnectionCore>.fromOpaque(data).takeUnretainedValue()
    return core.filter(DBusMessage(retaining: message)) ? DBUS_HANDLER_RESULT_HANDLED : DBUS_HANDLER_RESULT_NOT_YET_HANDLED
}

func cbPendingNotify(_ pending: OpaquePointer?, _ data: UnsafeMutableRawPointer?) {
    guard let data else { return }
    let box = Unmanaged<PendingReply>.fromOpaque(data).takeUnretainedValue()
    box.completeFromLibDBus()
}

func cbReleasePending(_ data: UnsafeMutableRawPointer?) {
    guard let data else { return }
    Unmanaged<PendingReply>.fromOpaque(data).release()
}
