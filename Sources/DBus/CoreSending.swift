import CDBus
import Synchronization

/// What any thread may ask of the connection: sending, calling, running on the loop, closing.
extension ConnectionCore {
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

    /// `refused` is called for each message libdbus would not queue.
    func send(_ messages: [DBusMessage], refused: (@Sendable () -> Void)? = nil) {
        if loop.isOnLoopThread, let conn {
            for m in messages where !Self.sendNow(conn, m) { refused?() }
            return
        }
        loop.enqueue { conn in
            guard let conn else { return }
            for m in messages where !Self.sendNow(conn, m) { refused?() }
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
