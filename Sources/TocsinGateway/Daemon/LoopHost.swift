public import DBus
import TocsinCore
public import TocsinSystem

/// Tocsin's executor loop as the host of the daemon's bus connection: method calls are read,
/// handled and answered on the one thread that runs the center, with no hand-over between
/// threads (see `DBusLoopHost`).
public struct ExecutorLoopHost: DBusLoopHost {
    let loop: ExecutorLoop

    public init(_ loop: ExecutorLoop) { self.loop = loop }

    /// The process's global executor loop, when it is installed and so driven by the main
    /// thread; nil otherwise (a connection then keeps a thread of its own).
    public static var global: ExecutorLoopHost? {
        LoopExecutor.loop.map(ExecutorLoopHost.init)
    }

    public func enqueue(_ job: @escaping @Sendable () -> Void) { loop.enqueue(job) }
    public func watch(_ fd: Int32, _ handler: @escaping @Sendable () -> Void) { loop.watch(fd, handler) }
    public func unwatch(_ fd: Int32) { loop.unwatch(fd) }
}
