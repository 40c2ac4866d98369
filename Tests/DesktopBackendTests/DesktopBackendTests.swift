import Logging
import Testing
import TocsinConfig
import TocsinCore
import TocsinDesktopBackend
import TocsinTime
import TocsinModel
import TocsinGateway

private let t0 = Instant(seconds: 1_772_442_000)

private func firing(title: String = "Tea", body: String = "", urgency: Urgency = .normal, icon: String? = nil,
                    category: String? = nil, sound: String? = nil, actions: [(String, String)] = [],
                    isAlarm: Bool = false) -> Firing {
    let n = TocsinCore.Notification(key: "k", title: title, body: body, trigger: .at(t0), urgency: urgency, icon: icon,
                                    category: category, sound: sound,
                                    actions: actions.map { NotificationAction(id: $0.0, label: $0.1) })
    var f = Firing(notification: n, occurrence: Occurrence(instant: t0, number: 1), due: t0, fired: t0, reason: .scheduled)
    f.isAlarm = isAlarm
    return f
}

private let fullCaps = ServerCapabilities(["actions", "body", "body-markup"])

@Suite("Desktop backend: what a firing becomes on the server")
struct DesktopBackendTests {
    struct EscapeRow: Sendable, CustomTestStringConvertible {
        var input: String
        var escaped: String
        var testDescription: String { input }
    }

    @Test("body text is escaped so it cannot inject markup", arguments: [
        EscapeRow(input: "plain", escaped: "plain"),
        EscapeRow(input: "<b>bold</b>", escaped: "&lt;b&gt;bold&lt;/b&gt;"),
        EscapeRow(input: "fish & chips", escaped: "fish &amp; chips"),
        EscapeRow(input: "&amp; stays literal", escaped: "&amp;amp; stays literal"),
        EscapeRow(input: "<a href=\"x\">link</a>", escaped: "&lt;a href=\"x\"&gt;link&lt;/a&gt;"),
        EscapeRow(input: "<img src=\"/etc/passwd\"/>", escaped: "&lt;img src=\"/etc/passwd\"/&gt;"),
        EscapeRow(input: "Grüße → 5 > 3", escaped: "Grüße → 5 &gt; 3"),
        EscapeRow(input: "", escaped: ""),
    ])
    func escaping(_ row: EscapeRow) {
        #expect(Markup.escape(row.input) == row.escaped)
    }

    struct PlanRow: Sendable, CustomTestStringConvertible {
        var name: String
        var firing: Firing
        var options = DesktopOptions()
        var caps = fullCaps
        var body: String? = nil
        var buttons: [String]? = nil
        var hints: [String: HintValue]? = nil
        var timeout: Int32? = nil
        var testDescription: String { name }
    }

    static let planRows: [PlanRow] = [
        PlanRow(name: "plain firing: only the default action", firing: firing(body: "a <b>"),
                body: "a &lt;b&gt;", buttons: ["default"], hints: [:], timeout: -1),
        PlanRow(name: "server without body-markup gets the text as is", firing: firing(body: "a <b> & c"),
                caps: ServerCapabilities(["actions", "body"]), body: "a <b> & c"),
        PlanRow(name: "alarm: Dismiss, Snooze, default; server sound suppressed", firing: firing(sound: "bell", isAlarm: true),
                buttons: ["dismiss", "snooze", "default"], hints: ["suppress-sound": .bool(true)]),
        PlanRow(name: "custom actions after the alarm buttons, first id wins",
                firing: firing(actions: [("open", "Open page"), ("dismiss", "Go away"), ("later", "")], isAlarm: true),
                buttons: ["dismiss", "snooze", "open", "later", "default"]),
        PlanRow(name: "custom actions on a plain firing", firing: firing(actions: [("open", "Open page")]),
                buttons: ["open", "default"]),
        PlanRow(name: "server without actions gets no buttons", firing: firing(actions: [("open", "Open")], isAlarm: true),
                caps: ServerCapabilities(["body"]), buttons: []),
        PlanRow(name: "sound name for a plain firing", firing: firing(sound: "message-new-instant"),
                hints: ["sound-name": .string("message-new-instant")]),
        PlanRow(name: "sound file for a path", firing: firing(sound: "/usr/share/sounds/bell.oga"),
                hints: ["sound-file": .string("/usr/share/sounds/bell.oga")]),
        PlanRow(name: "desktop entry hint from the config", firing: firing(),
                options: DesktopOptions(desktopEntry: "org.example.Tocsin"),
                hints: ["desktop-entry": .string("org.example.Tocsin")]),
        PlanRow(name: "timeout never", firing: firing(), options: DesktopOptions(timeout: .never), timeout: 0),
        PlanRow(name: "alarm without a configured timeout never expires", firing: firing(isAlarm: true), timeout: 0),
        PlanRow(name: "alarm with a configured timeout keeps it", firing: firing(isAlarm: true),
                options: DesktopOptions(timeout: .milliseconds(30000)), timeout: 30000),
        PlanRow(name: "explicit server default", firing: firing(isAlarm: true), options: DesktopOptions(timeout: .serverDefault), timeout: -1),
        PlanRow(name: "timeout in ms", firing: firing(), options: DesktopOptions(timeout: .milliseconds(8000)), timeout: 8000),
    ]

    @Test("popup plan per firing", arguments: planRows)
    func plan(_ row: PlanRow) {
        let p = PopupPlan(firing: row.firing, options: row.options, capabilities: row.caps)
        #expect(p.summary == "Tea")
        if let body = row.body { #expect(p.body == body) }
        if let buttons = row.buttons { #expect(p.buttons.map(\.id) == buttons) }
        if let hints = row.hints { #expect(p.hints == hints) }
        if let timeout = row.timeout { #expect(p.timeout.expireTimeout == timeout) }
    }

    @Test("alarm buttons are labelled Dismiss and Snooze; custom labels kept, empty ones fall back to the id")
    func labels() {
        let p = PopupPlan(firing: firing(actions: [("open", "Open page"), ("x", "")], isAlarm: true),
                          options: DesktopOptions(), capabilities: fullCaps)
        #expect(p.buttons == [PopupButton("dismiss", "Dismiss"), PopupButton("snooze", "Snooze"),
                              PopupButton("open", "Open page"), PopupButton("x", "x"), PopupButton("default", "Open")])
    }

    @Test("summary, icon, urgency and category pass through")
    func passThrough() {
        let p = PopupPlan(firing: firing(title: "T <i>", urgency: .critical, icon: "alarm-clock", category: "im.received"),
                          options: DesktopOptions(appName: "Clock"), capabilities: fullCaps)
        #expect(p.summary == "T <i>")  // summaries are plain text by spec
        #expect(p.icon == "alarm-clock")
        #expect(p.urgency == .critical)
        #expect(p.category == "im.received")
        #expect(p.appName == "Clock")
    }

    @Test("an empty title becomes the app name, since servers require a summary")
    func emptyTitle() {
        let p = PopupPlan(firing: firing(title: ""), options: DesktopOptions(appName: "Clock"), capabilities: fullCaps)
        #expect(p.summary == "Clock")
    }

    struct RouteRow: Sendable, CustomTestStringConvertible {
        var action: String
        var snooze: TimeSpan?
        var event: BackendEvent
        var testDescription: String { "\(action) (snooze \(snooze.map { "\($0)" } ?? "default"))" }
    }

    @Test("button presses become center events", arguments: [
        RouteRow(action: "dismiss", snooze: nil, event: .acknowledge(key: "k")),
        RouteRow(action: "snooze", snooze: nil, event: .snooze(key: "k", duration: nil)),
        RouteRow(action: "snooze", snooze: .minutes(10), event: .snooze(key: "k", duration: .minutes(10))),
        RouteRow(action: "default", snooze: nil, event: .actionInvoked(key: "k", action: "default")),
        RouteRow(action: "open", snooze: nil, event: .actionInvoked(key: "k", action: "open")),
    ])
    func routing(_ row: RouteRow) {
        #expect(ActionRouting.event(action: row.action, key: "k", snooze: row.snooze) == row.event)
    }

    struct OptionRow: Sendable, CustomTestStringConvertible {
        var name: String
        var table: String
        var options: DesktopOptions?
        var error: String? = nil
        var testDescription: String { name }
    }

    static let optionRows: [OptionRow] = [
        OptionRow(name: "defaults", table: "", options: DesktopOptions()),
        OptionRow(name: "everything", table: "app_name = \"Clock\"\ntimeout = \"8s\"\nsnooze = \"10min\"\ndesktop_entry = \"org.example.Clock\"",
                  options: DesktopOptions(appName: "Clock", timeout: .milliseconds(8000), snooze: .minutes(10), desktopEntry: "org.example.Clock")),
        OptionRow(name: "timeout never", table: "timeout = \"never\"", options: DesktopOptions(timeout: .never)),
        OptionRow(name: "timeout default", table: "timeout = \"default\"", options: DesktopOptions(timeout: .serverDefault)),
        OptionRow(name: "sub-millisecond timeout rounds up", table: "timeout = \"1us\"", options: DesktopOptions(timeout: .milliseconds(1))),
        OptionRow(name: "bad timeout", table: "timeout = \"soon\"", options: nil, error: "invalid 'timeout'"),
        OptionRow(name: "zero timeout", table: "timeout = \"0\"", options: nil, error: "invalid 'timeout'"),
        OptionRow(name: "huge timeout", table: "timeout = \"30d\"", options: nil, error: "must be at most"),
        OptionRow(name: "timeout not a string", table: "timeout = 5", options: nil, error: "must be a string"),
        OptionRow(name: "empty app name", table: "app_name = \"\"", options: nil, error: "must not be empty"),
        OptionRow(name: "desktop entry with suffix", table: "desktop_entry = \"x.desktop\"", options: nil, error: "without '.desktop'"),
        OptionRow(name: "bad snooze", table: "snooze = \"0s\"", options: nil, error: "invalid 'snooze'"),
        OptionRow(name: "misspelt key", table: "app_nme = \"x\"", options: nil, error: "unknown key 'app_nme' in [backend.popup]; did you mean 'app_name'?"),
    ]

    @Test("options from [backend.NAME] through the registry", arguments: optionRows)
    func options(_ row: OptionRow) throws {
        let text = "[backend.popup]\ntype = \"libnotify\"\n" + row.table + "\n"
        let root = try TOML.parse(text, file: "t.toml")
        let config = try TocsinConfiguration.decode(root, file: "t.toml").get()
        let registry = BackendRegistry([DesktopBackendFactory()])
        let result = registry.makeBackends(for: config, file: "t.toml", environment: BackendEnvironment(logger: Logger(label: "test")))
        switch result {
        case .success(let backends):
            #expect(row.error == nil, "expected an error containing '\(row.error ?? "")'")
            let b = try #require(backends.first as? DesktopBackend)
            #expect(b.name == "popup")
            #expect(b.options == row.options)
            #expect(b.ringPolicy == nil)
        case .failure(let e):
            let text = e.diagnostics.map { $0.message }.joined(separator: "\n")
            #expect(row.options == nil, "unexpected errors: \(text)")
            if let want = row.error { #expect(text.contains(want), "errors: \(text)") }
        }
    }
}
