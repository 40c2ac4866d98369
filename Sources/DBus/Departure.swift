import CDBus
import Synchronization

// MARK: - Knowing when a sent message has left the process
//
// `dbus_connection_send` only queues: libdbus writes what the socket takes at once and keeps the
// rest until the bus reads. A process killed meanwhile loses what is still queued, so a caller
// that records a message as delivered (the `dbus-signal` backend's firings) must wait until it
// is out. libdbus offers no per-message write callback, but it drops its reference to a message
// once the message is written (or once the connection that held it is gone), and a message's
// data slot is freed with the message: a tracker in that slot learns when the last reference
// goes. libdbus frees a message the same way when it drops its outgoing queue (the connection
// closed or lost), so the last one's departure is followed by a job on the loop that asks libdbus
// whether the connection is still up: a message that left a live connection was written. The
// free function itself only counts down and queues that job: it may run inside libdbus, on
// whichever thread drops the last reference, and must not call into libdbus.

/// Counts down the messages of one send still inside this process.
final class DepartureTracker: Sendable {
    private let remaining: Atomic<Int>
    /// Set for a message libdbus never queued (no memory, or a slot it could not give): it leaves
    /// when Swift lets go of it, on a live connection, unwritten.
    private let refused = Atomic<Bool>(false)
    private let loop: EventLoop
    private let departed: @Sendable (_ written: Bool) -> Void

    init(count: Int, loop: EventLoop, departed: @escaping @Sendable (_ written: Bool) -> Void) {
        remaining = Atomic(count)
        self.loop = loop
        self.departed = departed
    }

    func messageRefused() { refused.store(true, ordering: .releasing) }

    func messageLeft() {
        guard remaining.subtract(1, ordering: .acquiringAndReleasing).newValue == 0 else { return }
        // A loop that has stopped runs the job at once, with no connection: dropped.
        loop.enqueue { [self] conn in
            let connected = conn.map { dbus_connection_get_is_connected($0) != 0 } ?? false
            departed(connected && !refused.load(ordering: .acquiring))
        }
    }
}

/// The message data slot the trackers live in, allocated once per process (-1: libdbus had no
/// memory for it, and every send counts as not written).
let departureSlot: Int32 = {
    var slot: Int32 = -1
    return dbus_message_allocate_data_slot(&slot) != 0 ? slot : -1
}()

/// libdbus's free function for the slot: called once per tracked message, when it is finalized.
func departureFreed(_ data: UnsafeMutableRawPointer?) {
    guard let data else { return }
    Unmanaged<DepartureTracker>.fromOpaque(data).takeRetainedValue().messageLeft()
}

extension DBusMessage {
    /// Puts `tracker` in this message's slot; it hears of the message when libdbus frees it.
    func track(_ tracker: DepartureTracker) {
        let data = Unmanaged.passRetained(tracker).toOpaque()
        guard departureSlot >= 0, dbus_message_set_data(raw, departureSlot, data, departureFreed) != 0 else {
            // Not tracked, so not known to be written.
            Unmanaged<DepartureTracker>.fromOpaque(data).release()
            tracker.messageRefused()
            tracker.messageLeft()
            return
        }
    }
}

extension DBusConnection {
    /// Closes the connection once everything queued on it so far has been written, or after
    /// `limit`, whichever comes first, and returns once it has ended: a graceful stop should not
    /// drop the signals of a burst the bus is still reading (closing drops libdbus's queue). The
    /// last thing queued is a `Peer.Ping` that asks for no reply: messages leave in order, so
    /// once it has departed everything before it has. Returns even when the calling task is
    /// cancelled (a stopping service's is): the wait is a task of its own.
    public func closeWhenFlushed(atMost limit: Duration) async {
        do {
            let marker = try DBusMessage.methodCall(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                                                    interface: .peer, member: "Ping")
            dbus_message_set_no_reply(marker.raw, 1)
            let deadline = Task { [self] in
                guard (try? await Task.sleep(for: limit)) != nil else { return }
                close()
            }
            send([marker], departed: { [self] _ in
                deadline.cancel()
                close()
            })
        } catch {
            close()
        }
        await Task { await waitUntilDisconnected() }.value
    }
}
