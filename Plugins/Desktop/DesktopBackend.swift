import CLibNotify
import Logging
import Synchronization
public import TocsinCore
import TocsinTime
public import TocsinModel
import TocsinSystem

/// `type = "libnotify"`: desktop popups through libnotify, one per key, with buttons that act on
/// the center (Dismiss acknowledges, Snooze snoozes, anything else is reported as `ActionInvoked`).
public struct DesktopBackend: DeliveryBackend {
    public let name: String
    /// Popups wait out quiet hours.
    public var quietMode: QuietMode { .hold }
    /// An alarm's popup closed while it rings is shown again at the next ring (`NotifyServerLink.show`).
    public var followsRings: Bool { true }
    public let options: DesktopOptions
    private let route: EventRoute
    private let runtime: LibNotifyRuntime
    /// Where the popups shown are recorded (`libnotify-NAME.popups`), for the start after a crash;
    /// nil without a state directory.
    private let recordFile: String?

    init(name: String, options: DesktopOptions, logger: Logger, runtime: LibNotifyRuntime = .shared, stateDirectory: String? = nil) {
        self.name = name
        self.options = options
        self.recordFile = stateDirectory.map { PopupRecords.file(directory: $0, backend: name) }
        var logger = logger
        logger[metadataKey: "backend"] = "\(name)"
        self.route = EventRoute(snooze: options.snooze, logger: logger)
        self.runtime = runtime
    }

    /// Takes over the popups an earlier run left up (`kill -9`, a crash), when it recorded any:
    /// their buttons work again, the key's next popup replaces its old one, and those whose
    /// notification is no longer pending or ringing are closed once the center has loaded.
    /// Without a record file nothing is loaded (libnotify stays unloaded until the first popup).
    public func start(events: any BackendEventSink) async {
        route.connect(events)
        guard let recordFile, let read = PopupRecords.read(recordFile) else { return }
        let contents: PopupRecords.Contents
        switch read {
        case .failure(let e):
            route.logger.warning("ignored and removed the record of the popups shown: \(e)", metadata: ["file": "\(recordFile)"])
            return
        case .success(let c): contents = c
        }
        guard !contents.popups.isEmpty, let link = runtime.link(logger: route.logger) else {
            StateFile.remove(recordFile)
            return
        }
        let (instance, route, appName) = (name, self.route, options.appName)
        // In the background: taking over asks the bus and the server (a hung server would hold
        // the daemon's start for the calls' timeouts), and the center answers `stillShown` only
        // once its state is loaded, which is after the backends' start. A popup shown meanwhile
        // goes through the same loop, so it is shown before or after the take-over, never during.
        Task {
            let keys = await link.loop.perform(cancelled: [String]()) {
                link.adopt(contents, instance: instance, route: route, recordFile: recordFile, appName: appName)
            }
            for key in keys where !(await events.stillShown(key: key)) {
                await link.loop.perform(cancelled: ()) { link.closeAdopted(instance: instance, key: key) }
            }
        }
    }

    public func deliver(_ firing: Firing) async throws(DeliveryError) {
        guard let link = runtime.link(logger: route.logger) else {
            throw DeliveryError(.unavailable, LibNotifyRuntime.unavailableReason)
        }
        let id = PopupID(instance: name, key: firing.key)
        let options = self.options
        let route = self.route
        let recordFile = self.recordFile
        let result = await link.loop.perform(cancelled: Result<Void, DeliveryError>.failure(DeliveryError(.timedOut, "cancelled while waiting for the notification server"))) {
            link.show(firing, options: options, id: id, route: route, recordFile: recordFile)
        }
        try result.get()
    }

    /// "no notification server" when nobody owns org.freedesktop.Notifications on the session bus.
    /// Before the first popup, asked without loading libnotify (`ServerProbe`).
    public func health() async -> BackendHealth {
        let problem: String?
        if let link = runtime.linkIfStarted() {
            problem = await link.loop.perform(cancelled: Optional("cancelled")) { link.serverProblem() }
        } else {
            problem = await ServerProbe.problem()
        }
        return problem.map { .unavailable($0) } ?? .ok
    }

    public func withdraw(key: String, reason: WithdrawReason) async {
        // Never started the loop for a key we could not have shown.
        guard let link = runtime.linkIfStarted() else { return }
        let id = PopupID(instance: name, key: key)
        await link.loop.perform(cancelled: ()) { link.close(id) }
    }

    public func shutdown() async {
        route.disconnect()
        guard let link = runtime.linkIfStarted() else { return }
        let instance = name
        await link.loop.perform(cancelled: ()) { link.closeAll(instance: instance) }
    }
}

/// The process's one libnotify: its state (app name, D-Bus proxy) is global, so every backend
/// instance shares one GLib loop and one server link, started on first use and kept for the
/// process's life (idle, it costs a thread blocked in `poll`).
final class LibNotifyRuntime: Sendable {
    static let shared = LibNotifyRuntime()

    private let state = Mutex<NotifyServerLink?>(nil)

    /// The link, started on first use; `logger` (the first caller's) logs server-level events.
    func link(logger: Logger) -> NotifyServerLink? {
        state.withLock { s in
            if let s { return s }
            guard let loop = GLibLoop(), loop.start() else { return nil }
            let l = NotifyServerLink(loop: loop, logger: logger)
            s = l
            return l
        }
    }

    func linkIfStarted() -> NotifyServerLink? { state.withLock { $0 } }

    /// Why `link` gave nil: libnotify is loaded on first use (Sources/CLibNotify), and a missing
    /// or broken library is named as such rather than as a thread that would not start.
    static var unavailableReason: String {
        tocsin_libnotify_load_error().map { String(cString: $0) } ?? "cannot start the GLib main loop thread for libnotify"
    }
}

public struct DesktopBackendFactory: BackendFactory {
    public init() {}
    public var typeName: String { "libnotify" }
    public var optionKeys: [String] { ["app_name", "timeout", "snooze", "desktop_entry"] }

    public func options(from reader: inout some FieldReader, environment: BackendEnvironment) -> DesktopOptions? {
        Self.options(&reader)
    }

    public func make(name: String, options: DesktopOptions, environment: BackendEnvironment) -> any DeliveryBackend {
        DesktopBackend(name: name, options: options, logger: environment.logger, stateDirectory: environment.stateDirectory)
    }

    /// Reads the table; nil when any option was wrong (the reader holds the positioned reasons).
    public static func options(_ r: inout some FieldReader) -> DesktopOptions? {
        var o = DesktopOptions()
        let before = r.issues.count
        if let app = r.string("app_name") {
            if app.isEmpty { r.report("app_name", "'app_name' in \(r.context) must not be empty") } else { o.appName = app }
        }
        if let text = r.string("timeout") {
            if text == "never" {
                o.timeout = .never
            } else if text == "default" {
                // Also for alarms, which otherwise never expire.
                o.timeout = .serverDefault
            } else if let span = r.parse("timeout", text, { t throws(TimeSyntaxError) in try TimeSpan.parsePositive(t) }) {
                // The spec's expire_timeout is an int32 of milliseconds; 0 would mean "never".
                let ms = (span.microseconds + 999) / 1000
                if ms > Int64(Int32.max) {
                    r.report("timeout", "'timeout' in \(r.context) must be at most \(Int32.max) ms (about 24 days), \"never\" or \"default\"")
                } else {
                    o.timeout = .milliseconds(Int32(max(1, ms)))
                }
            }
        }
        if let s = r.duration("snooze", positive: true) { o.snooze = s }
        if let entry = r.string("desktop_entry") {
            if entry.isEmpty || entry.hasSuffix(".desktop") || entry.contains("/") {
                r.report("desktop_entry", "'desktop_entry' in \(r.context) is the desktop file's name without '.desktop' and without a path, e.g. \"org.example.App\"")
            } else {
                o.desktopEntry = entry
            }
        }
        return r.issues.count == before ? o : nil
    }
}
