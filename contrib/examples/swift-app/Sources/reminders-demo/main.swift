import Foundation
import Reminders
import TocsinClient

// Against a running daemon: a reminder a second from now, then its Fired and the action a
// person (here the daemon's example `bridge` service) chose. TOCSIN_BUS_ADDRESS picks a private
// bus; without it the session bus is used.
let address = ProcessInfo.processInfo.environment["TOCSIN_BUS_ADDRESS"]
let center = TocsinNotificationCenter(bus: address.map { .address($0) } ?? .session)
let app = Reminders(center: center)

let watchdog = Task {
    try await Task.sleep(for: .seconds(60))
    print("timed out waiting for the events")
    exit(1)
}

let events = try await center.events()
try await app.remind(lot: "7", endsAt: Date().addingTimeInterval(1), backends: ["events", "bridge"])
var sawFired = false
var sawAction = false
for await event in events {
    if let line = app.handle(event) { print(line) }
    if case .fired = event { sawFired = true }
    if case .actionInvoked = event { sawAction = true }
    if sawFired && sawAction { break }
}
watchdog.cancel()
print(try await app.won(lot: "7") ? "still pending after the end" : "done")
