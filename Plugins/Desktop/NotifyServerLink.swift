import CLibNotify
import Logging
import Synchronization
import TocsinCore
import TocsinTime
import TocsinModel
import TocsinSystem

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
    /// Its id on the server once shown, and its buttons' ids: what the record file keeps.
    var serverID: UInt32 = 0
    var actions: [String] = []

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
    /// Popups an earlier run showed on the current server and this one took over (after a
    /// crash), by their id there, until they are shown again (replaced), closed or the server goes.
    private var adopted: [UInt32: (instance: String, record: PopupRecord)] = [:]
    /// Where each instance's button presses go (for the popups it took over).
    private var routes: [String: EventRoute] = [:]
    /// Where each instance with a state directory records its popups.
    private var recordFiles: [String: String] = [:]
    /// The subscription to the server's signals for the popups taken over; 0 when none.
    private var subscription: UInt32 = 0

    init(loop: GLibLoop, logger: Logger) {
        self.loop = loop
        self.logger = logger
    }

    /// Shows or replaces the popup for `id`. A ring shows it only if it is not open: a person
    /// who closed an alarm's popup while the sound rings on gets its buttons back at the next
    /// ring, and an open one is left as it is (replacing it every ring would make it jump).
    /// `recordFile`: where the instance's popups are recorded, if it has a state directory.
    func show(_ firing: Firing, options: DesktopOptions, id: PopupID, route: EventRoute, recordFile: String?) -> Result<Void, DeliveryError> {
        assert(loop.isCurrent)
        routes[id.instance] = route
        if let recordFile { recordFiles[id.instance] = recordFile }
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
            // A popup an earlier run showed for the key is replaced in place (`replaces_id`).
            if let old = adoptedID(id) { tocsin_notification_set_id(n, old) }
            let callbacks = PopupCallbacks(id: id, route: route, link: self)
            popup = Popup(notification: n, callbacks: callbacks)
            _ = tocsin_connect_closed(n, popupClosed, Unmanaged.passRetained(callbacks).toOpaque(), releaseClosedCallbacks)
        }
        apply(plan, to: popup)
        var error: UnsafeMutablePointer<GError>?
        guard notify_notification_show(popup.notification, &error) != 0 else {
            if popups.removeValue(forKey: id) != nil { persist(id.instance) }
            return .failure(DeliveryError(.unavailable, "the notification server refused the popup: \(consume(error))"))
        }
        popups[id] = popup
        popup.serverID = tocsin_notification_get_id(popup.notification)
        popup.actions = plan.buttons.map(\.id)
        // libnotify routes its buttons from now on.
        if let old = adoptedID(id) { adopted[old] = nil }
        persist(id.instance)
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
        var changed = false
        if let popup = popups.removeValue(forKey: id) {
            closeOnServer(popup)
            changed = true
        }
        if let old = adoptedID(id) {
            adopted[old] = nil
            closeOnServer(id: old, key: id.key)
            changed = true
        }
        if changed { persist(id.instance) }
    }

    /// Closes every popup of one backend instance.
    func closeAll(instance: String) {
        assert(loop.isCurrent)
        let mine = popups.keys.filter { $0.instance == instance }
        for id in mine {
            if let p = popups.removeValue(forKey: id) { closeOnServer(p) }
        }
        for (old, a) in adopted where a.instance == instance {
            adopted[old] = nil
            closeOnServer(id: old, key: a.record.key)
        }
        persist(instance)
    }

    /// Closes the popup of `key` an earlier run showed, if it is still one taken over (not shown
    /// again since): its notification is no longer pending or ringing.
    func closeAdopted(instance: String, key: String) {
        assert(loop.isCurrent)
        guard let old = adoptedID(PopupID(instance: instance, key: key)) else { return }
        adopted[old] = nil
        closeOnServer(id: old, key: key)
        logger.info("closed a popup an earlier run left up; its notification is no longer pending or ringing", metadata: ["key": "\(key)", "id": "\(old)"])
        persist(instance)
    }

    private func adoptedID(_ id: PopupID) -> UInt32? {
        adopted.first { $0.value.instance == id.instance && $0.value.record.key == id.key }?.key
    }

    /// `CloseNotification(id)` for a popup libnotify never showed (one taken over): through a
    /// notification object given that id.
    private func closeOnServer(id: UInt32, key: String) {
        guard let c = connection, g_dbus_connection_is_closed(c) == 0, let n = notify_notification_new("Tocsin", nil, nil) else { return }
        defer { g_object_unref(UnsafeMutableRawPointer(n)) }
        tocsin_notification_set_id(n, id)
        var error: UnsafeMutablePointer<GError>?
        if notify_notification_close(n, &error) == 0 {
            logger.debug("closing a popup failed: \(consume(error))", metadata: ["key": "\(key)"])
        }
    }

    /// Takes over the popups an earlier run of `instance` recorded (after a crash), once the
    /// server is found: when the same server (the same unique name) still owns the name, their
    /// ids still name those popups, so their buttons are routed again and the key's next popup
    /// replaces its old one. Otherwise the records mean nothing and are dropped (never closed:
    /// the ids may be another server's popups). Returns the keys taken over.
    func adopt(_ contents: PopupRecords.Contents, instance: String, route: EventRoute, recordFile: String,
               appName: String) -> [String] {
        assert(loop.isCurrent)
        routes[instance] = route
        defer {
            recordFiles[instance] = recordFile
            persist(instance)
        }
        if case .failure(let e) = connect(appName: appName) {
            logger.notice("dropped the record of the popups an earlier run showed: \(e.message)", metadata: ["file": "\(recordFile)"])
            return []
        }
        let bus = connection.flatMap { tocsin_connection_guid($0) }.map { String(cString: $0) }
        guard owner == contents.server, let bus, contents.bus == bus else {
            logger.notice("dropped the record of the popups an earlier run showed: the notification server or the bus has restarted since",
                          metadata: ["file": "\(recordFile)", "recorded": "\(contents.server) on \(contents.bus ?? "an unnamed bus")",
                                     "now": "\(owner ?? "none") on \(bus ?? "?")"])
            return []
        }
        var keys: [String] = []
        for r in contents.popups where popups[PopupID(instance: instance, key: r.key)] == nil && adopted[r.id] == nil
            && adoptedID(PopupID(instance: instance, key: r.key)) == nil {
            adopted[r.id] = (instance, r)
            keys.append(r.key)
        }
        if !keys.isEmpty, subscription == 0, let c = connection, let owner {
            subscription = tocsin_subscribe_server_signals(c, owner, adoptedPopupSignal, Unmanaged.passUnretained(self).toOpaque(), nil)
        }
        if !keys.isEmpty {
            logger.info("took over the popups an earlier run showed", metadata: ["keys": "\(keys.joined(separator: ","))"])
        }
        return keys
    }

    /// A signal of the server (the one whose unique name was recorded) about a popup taken over:
    /// its button pressed, or it closed.
    fileprivate func serverSignal(id: UInt32, action: String?) {
        assert(loop.isCurrent)
        guard let a = adopted[id] else { return }
        guard let action else {
            adopted[id] = nil
            persist(a.instance)
            return
        }
        guard a.record.actions.contains(action) else {
            logger.debug("an action the popup did not have; ignored", metadata: ["key": "\(a.record.key)", "action": "\(action)"])
            return
        }
        routes[a.instance]?.actionInvoked(action, key: a.record.key)
    }

    /// Forgets every popup (the server or the bus went away: their ids mean nothing now).
    private func forgetPopups() {
        popups.removeAll()
        adopted.removeAll()
        if subscription != 0, let c = connection { tocsin_unsubscribe_server_signals(c, subscription) }
        subscription = 0
        for instance in recordFiles.keys { persist(instance) }
    }

    /// Writes the record file of `instance` from the table: its popups on the current server.
    private func persist(_ instance: String) {
        guard let path = recordFiles[instance] else { return }
        var records: [PopupRecord] = []
        for (id, p) in popups where id.instance == instance && p.serverID != 0 {
            records.append(PopupRecord(id: p.serverID, key: id.key, actions: p.actions))
        }
        for a in adopted.values where a.instance == instance { records.append(a.record) }
        let problem: String?
        if let owner, !records.isEmpty {
            let bus = connection.flatMap { tocsin_connection_guid($0) }.map { String(cString: $0) }
            let text = PopupRecords.render(.init(server: owner, bus: bus, popups: records.sorted { $0.id < $1.id }))
            problem = StateFile.replace(path, with: Array(text.utf8))
        } else {
            problem = StateFile.remove(path)
        }
        if let problem { logger.warning("cannot record the popups shown; after a crash their buttons would not work: \(problem)") }
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
        if popups[id]?.notification == n {
            popups[id] = nil
            persist(id.instance)
        }
    }

    // MARK: Server connection

    private func connect(appName: String) -> Result<ServerCapabilities, DeliveryError> {
        if let c = connection, g_dbus_connection_is_closed(c) != 0 {
            // The bus went away; libnotify's cached proxy is bound to the dead connection, so start over.
            logger.notice("the session bus connection closed; reconnecting for the next popup")
            forgetPopups()
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
            owner = current
            forgetPopups()
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
        let had = owner != nil
        owner = nil
        if had { forgetPopups() }
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

private func adoptedPopupSignal(_ id: UInt32, _ action: UnsafePointer<CChar>?, _ reason: UInt32, _ data: gpointer?) {
    guard let data else { return }
    let link = Unmanaged<NotifyServerLink>.fromOpaque(data).takeUnretainedValue()
    link.serverSignal(id: id, action: action.map { String(cString: $0) })
}

private func releaseClosedCallbacks(_ data: gpointer?, _ closure: OpaquePointer?) {
    if let data { Unmanaged<PopupCallbacks>.fromOpaque(data).release() }
}
