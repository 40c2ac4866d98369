import CLibNotify
import Logging
import Synchronization
import TocsinCore
import TocsinTime
import TocsinModel

/// Identifies one popup: a key, within one backend instance (several `libnotify` instances share
/// the process's one libnotify).
struct PopupID: Hashable, Sendable {
    var instance: String
    var key: String
}

/// Where a backend instance's button presses go. Set at `start`, read on the GLib thread.
final class EventRoute: Sendable {
    private let sink = Mutex<(any BackendEventSink)?>(nil)
    let snooze: TimeSpan?
    let logger: Logger

    init(snooze: TimeSpan?, logger: Logger) {
        self.snooze = snooze
        self.logger = logger
    }

    func connect(_ s: any BackendEventSink) { sink.withLock { $0 = s } }
    func disconnect() { sink.withLock { $0 = nil } }

    func actionInvoked(_ action: String, key: String) {
        let event = ActionRouting.event(action: action, key: key, snooze: snooze)
        logger.debug("popup action", metadata: ["key": "\(key)", "action": "\(action)"])
        guard let s = sink.withLock({ $0 }) else {
            logger.warning("popup action arrived while the backend is stopped; dropped", metadata: ["key": "\(key)", "action": "\(action)"])
            return
        }
        s.send(event)
    }
}

/// A `NotifyNotification` we own one reference to; released (on the GLib thread, where every
/// `Popup` lives and dies) when the table lets go of it.
final class Popup {
    let notification: OpaquePointer
    /// What the object's signal and action callbacks point at. Kept apart from `Popup` so the
    /// GObject holding it does not keep its own owner alive.
    let callbacks: PopupCallbacks

    init(notification: OpaquePointer, callbacks: PopupCallbacks) {
        self.notification = notification
        self.callbacks = callbacks
    }

    deinit { g_object_unref(UnsafeMutableRawPointer(notification)) }
}

final class PopupCallbacks {
    let id: PopupID
    /// Replaced when a reloaded instance of the same name shows the key again, so its options apply.
    var route: EventRoute
    unowned let link: NotifyServerLink
    init(id: PopupID, route: EventRoute, link: NotifyServerLink) {
        self.id = id; self.route = route; self.link = link
    }
}

/// libnotify and the session bus as one server connection: confined to the GLib loop's thread
/// (every method runs there, asserted), so its state needs no lock. That confinement is what
/// the `@unchecked Sendable` rests on.
///
/// Per delivery it asks the bus who owns `org.freedesktop.Notifications`: that fails fast when
/// no server runs, and a new owner (a restarted or different server) means new capabilities and
/// that the old server's popup ids mean nothing any more.
final class NotifyServerLink: @unchecked Sendable {
    static let serverName = "org.freedesktop.Notifications"

    let loop: GLibLoop
    private let logger: Logger
    private var connection: OpaquePointer?
    private var owner: String?
    private var capabilities = ServerCapabilities([])
    private var popups: [PopupID: Popup] = [:]

    init(loop: GLibLoop, logger: Logger) {
        self.loop = loop
        self.logger = logger
    }

    /// Shows or replaces the popup for `id`. A ring shows it only if it is not open: a person
    /// who closed an alarm's popup while the sound rings on gets its buttons back at the next
    /// ring, and an open one is left as it is (replacing it every ring would make it jump).
    func show(_ firing: Firing, options: DesktopOptions, id: PopupID, route: EventRoute) -> Result<Void, DeliveryError> {
        assert(loop.isCurrent)
        if firing.reason == .ring, popups[id] != nil { return .success(()) }
        let caps: ServerCapabilities
        switch connect(appName: options.appName) {
        case .failure(let e): return .failure(e)
        case .success(let c): caps = c
        }
        let plan = PopupPlan(firing: firing, options: options, capabilities: caps)
        let popup: Popup
        if let existing = popups[id] {
            popup = existing
            popup.callbacks.route = route
            notify_notification_clear_actions(popup.notification)
            notify_notification_clear_hints(popup.notification)
            _ = notify_notification_update(popup.notification, plan.summary, plan.body, plan.icon)
        } else {
            guard let n = notify_notification_new(plan.summary, plan.body, plan.icon) else {
                return .failure(DeliveryError(.failed, "libnotify could not create a notification"))
            }
            let callbacks = PopupCallbacks(id: id, route: route, link: self)
            popup = Popup(notification: n, callbacks: callbacks)
            _ = tocsin_connect_closed(n, popupClosed, Unmanaged.passRetained(callbacks).toOpaque(), releaseClosedCallbacks)
        }
        apply(plan, to: popup)
        var error: UnsafeMutablePointer<GError>?
        guard notify_notification_show(popup.notification, &error) != 0 else {
            popups[id] = nil
            return .failure(DeliveryError(.unavailable, "the notification server refused the popup: \(consume(error))"))
        }
        popups[id] = popup
        return .success(())
    }

    private func apply(_ plan: PopupPlan, to popup: Popup) {
        let n = popup.notification
        notify_notification_set_app_name(n, plan.appName)
        notify_notification_set_timeout(n, plan.timeout.expireTimeout)
        let urgency: NotifyUrgency = switch plan.urgency {
        case .low: NOTIFY_URGENCY_LOW
        case .normal: NOTIFY_URGENCY_NORMAL
        case .critical: NOTIFY_URGENCY_CRITICAL
        }
        notify_notification_set_urgency(n, urgency)
        if let category = plan.category { notify_notification_set_category(n, category) }
        for (name, value) in plan.hints.sorted(by: { $0.key < $1.key }) {
            switch value {
            case .string(let s): notify_notification_set_hint_string(n, name, s)
            case .bool(let b): notify_notification_set_hint(n, name, g_variant_new_boolean(b ? 1 : 0))
            }
        }
        for b in plan.buttons {
            let data = Unmanaged.passRetained(popup.callbacks).toOpaque()
            notify_notification_add_action(n, b.id, b.label, popupAction, data, releaseActionCallbacks)
        }
    }

    /// Closes the popup for `id` if there is one; cheap for keys never shown.
    func close(_ id: PopupID) {
        assert(loop.isCurrent)
        guard let popup = popups.removeValue(forKey: id) else { return }
        closeOnServer(popup)
    }

    /// Closes every popup of one backend instance.
    func closeAll(instance: String) {
        assert(loop.isCurrent)
        let mine = popups.keys.filter { $0.instance == instance }
        for id in mine {
            if let p = popups.removeValue(forKey: id) { closeOnServer(p) }
        }
    }

    private func closeOnServer(_ popup: Popup) {
        guard let c = connection, g_dbus_connection_is_closed(c) == 0 else { return }
        var error: UnsafeMutablePointer<GError>?
        if notify_notification_close(popup.notification, &error) == 0 {
            logger.debug("closing a popup failed: \(consume(error))", metadata: ["key": "\(popup.callbacks.id.key)"])
        }
    }

    /// The server reported the popup closed (expired, dismissed, or after an action): forget it,
    /// so the next firing of the key opens a fresh popup and the table never grows without bound.
    fileprivate func closed(_ id: PopupID, _ n: OpaquePointer) {
        if popups[id]?.notification == n { popups[id] = nil }
    }

    // MARK: Server connection

    private func connect(appName: String) -> Result<ServerCapabilities, DeliveryError> {
        if let c = connection, g_dbus_connection_is_closed(c) != 0 {
            // The bus went away; libnotify's cached proxy is bound to the dead connection, so start over.
            logger.notice("the session bus connection closed; reconnecting for the next popup")
            popups.removeAll()
            if notify_is_initted() != 0 { notify_uninit() }
            g_object_unref(UnsafeMutableRawPointer(c))
            connection = nil
            owner = nil
        }
        let bus: OpaquePointer
        if let c = connection {
            bus = c
        } else {
            var error: UnsafeMutablePointer<GError>?
            guard let c = g_bus_get_sync(G_BUS_TYPE_SESSION, nil, &error) else {
                return .failure(DeliveryError(.unavailable, "cannot connect to the session bus: \(consume(error))"))
            }
            // GLib's shared session connection would raise SIGTERM when the bus goes away; the
            // daemon outlives bus restarts.
            g_dbus_connection_set_exit_on_close(c, 0)
            connection = c
            bus = c
        }
        if notify_is_initted() == 0, notify_init(appName) == 0 {
            return .failure(DeliveryError(.permanent, "libnotify refused to initialise with app name '\(appName)'"))
        }
        var error: UnsafeMutablePointer<GError>?
        guard let raw = tocsin_get_name_owner(bus, Self.serverName, 5000, &error) else {
            let detail = consume(error)
            if detail.contains("NameHasNoOwner") || detail.contains("no owner") {
                forgetServer()
                return .failure(DeliveryError(.unavailable, "no notification server on the session bus (nobody owns \(Self.serverName))"))
            }
            return .failure(DeliveryError(.unavailable, "cannot ask the session bus for the notification server: \(detail)"))
        }
        let current = String(cString: raw)
        g_free(raw)
        if current != owner {
            // Popup ids are per server: a restarted server would read our stale ids as someone else's popups.
            popups.removeAll()
            owner = current
            capabilities = queryCapabilities()
            logger.info("notification server found", metadata: ["owner": "\(current)",
                                                                "capabilities": "\(capabilities.names.sorted().joined(separator: ","))"])
            if !capabilities.actions {
                logger.warning("the notification server offers no buttons (no 'actions' capability): alarms can be acknowledged or snoozed only with 'tocsin ack'/'tocsin snooze' or over D-Bus")
            }
        }
        return .success(capabilities)
    }

    /// Why a popup could not be shown now, nil when a server owns the name. Asks the bus, as
    /// `show` does, but never initialises libnotify or shows anything.
    func serverProblem() -> String? {
        assert(loop.isCurrent)
        let bus: OpaquePointer
        // A connection of its own when the link has none (or a closed one): replacing the link's
        // is `show`'s job, which also resets libnotify's proxy bound to the old one.
        var own: OpaquePointer?
        if let c = connection, g_dbus_connection_is_closed(c) == 0 {
            bus = c
        } else {
            var error: UnsafeMutablePointer<GError>?
            guard let c = g_bus_get_sync(G_BUS_TYPE_SESSION, nil, &error) else {
                return "no session bus (\(consume(error)))"
            }
            // As in `connect`: GLib would raise SIGTERM when the shared bus connection closes.
            g_dbus_connection_set_exit_on_close(c, 0)
            own = c
            bus = c
        }
        defer { if let own { g_object_unref(UnsafeMutableRawPointer(own)) } }
        var error: UnsafeMutablePointer<GError>?
        guard let raw = tocsin_get_name_owner(bus, Self.serverName, 5000, &error) else {
            let detail = consume(error)
            if detail.contains("NameHasNoOwner") || detail.contains("no owner") { return "no notification server" }
            return "cannot ask the session bus for the notification server: \(detail)"
        }
        g_free(raw)
        return nil
    }

    private func forgetServer() {
        if owner != nil { popups.removeAll() }
        owner = nil
    }

    private func queryCapabilities() -> ServerCapabilities {
        var names: [String] = []
        let list = notify_get_server_caps()
        var node = list
        while let n = node {
            if let s = n.pointee.data { names.append(String(cString: s.assumingMemoryBound(to: CChar.self))) }
            node = n.pointee.next
        }
        if let list { tocsin_free_string_list(list) }
        return ServerCapabilities(names)
    }
}

/// Takes a GError's message and frees it.
func consume(_ error: UnsafeMutablePointer<GError>?) -> String {
    guard let error else { return "unknown error" }
    let message = error.pointee.message.map { String(cString: $0) } ?? "unknown error"
    g_error_free(error)
    return message
}

// MARK: C callbacks (global functions; context travels as an Unmanaged PopupCallbacks)

private func popupAction(_ n: OpaquePointer?, _ action: UnsafeMutablePointer<CChar>?, _ data: gpointer?) {
    guard let data, let action else { return }
    let callbacks = Unmanaged<PopupCallbacks>.fromOpaque(data).takeUnretainedValue()
    callbacks.route.actionInvoked(String(cString: action), key: callbacks.id.key)
}

private func releaseActionCallbacks(_ data: gpointer?) {
    if let data { Unmanaged<PopupCallbacks>.fromOpaque(data).release() }
}

private func popupClosed(_ n: OpaquePointer?, _ data: gpointer?) {
    guard let data, let n else { return }
    let callbacks = Unmanaged<PopupCallbacks>.fromOpaque(data).takeUnretainedValue()
    callbacks.link.closed(callbacks.id, n)
}

private func releaseClosedCallbacks(_ data: gpointer?, _ closure: OpaquePointer?) {
    if let data { Unmanaged<PopupCallbacks>.fromOpaque(data).release() }
}
