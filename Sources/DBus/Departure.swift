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
// goes. The free function does nothing but count down and call the caller's closure, which
// must not call into libdbus: it may run inside libdbus, on whichever thread drops the last
// reference.

/// Counts down the messages of one send still inside this process.
final class DepartureTracker: Sendable {
    private let remaining: Atomic<Int>
    private let departed: @Sendable () -> Void

    init(count: Int, departed: @escaping @Sendable () -> Void) {
        remaining = Atomic(count)
        self.departed = departed
    }

    func messageLeft() {
        if remaining.subtract(1, ordering: .acquiringAndReleasing).newValue == 0 { departed() }
    }
}

/// The message data slot the trackers live in, allocated once per process (-1: libdbus had no
/// memory for it, and every message counts as departed when sent).
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
            Unmanaged<DepartureTracker>.fromOpaque(data).release()
            tracker.messageLeft()
            return
        }
    }
}
