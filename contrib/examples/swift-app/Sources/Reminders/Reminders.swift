import Foundation
import TocsinClient

/// The app's logic: auction reminders and what to do when one is answered. It takes any center,
/// so its tests use the in-memory one and the app the daemon's.
public struct Reminders: Sendable {
    public let center: any TocsinNotifying

    public init(center: any TocsinNotifying) { self.center = center }

    static func key(_ lot: String) -> String { "auction-\(lot)" }

    /// 24 h, 3 h and 1 h before the end, and at the end, with a Bid button.
    public func remind(lot: String, endsAt end: Date, backends: [String]? = nil) async throws {
        let content = NotificationContent(title: "Auction for lot \(lot) ends", body: "Place a bid before it closes",
                                          actions: [NotificationAction(id: "bid", title: "Bid")], backends: backends,
                                          userInfo: ["lot": lot])
        try await center.add(NotificationRequest(
            key: Self.key(lot), content: content,
            trigger: .reminders(before: [.seconds(86_400), .seconds(10_800), .seconds(3_600), .zero], event: end)))
    }

    /// Won (or lost): no more reminders for it.
    public func won(lot: String) async throws -> Bool {
        try await !center.remove(keys: [Self.key(lot)]).isEmpty
    }

    /// What the app does with an event: the line it shows, nil for events it ignores.
    public func handle(_ event: NotificationEvent) -> String? {
        switch event {
        case .fired(let f): return "reminder \(f.occurrence) for lot \(f.userInfo["lot"] ?? "?")"
        case .actionInvoked(_, "bid", let info): return "open the bid page for lot \(info["lot"] ?? "?")"
        default: return nil
        }
    }
}
