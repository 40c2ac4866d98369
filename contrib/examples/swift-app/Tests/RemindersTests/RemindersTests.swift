import Foundation
import Reminders
import Testing
import TocsinClient
import TocsinClientTesting

/// The app's own tests: no bus, no daemon, a clock the test moves.
@Suite struct RemindersTests {
    @Test func remindsFourTimesAndBidsOpenThePage() async throws {
        let center = InMemoryNotificationCenter()
        let app = Reminders(center: center)
        let events = try await center.events()
        let end = await center.now.addingTimeInterval(2 * 86_400)
        try await app.remind(lot: "7", endsAt: end)
        #expect(try await center.pending().map(\.key) == ["auction-7"])
        await center.advance(to: end)
        try await center.invokeAction(key: "auction-7", action: "bid")
        var lines: [String] = []
        for await event in events {
            if let line = app.handle(event) { lines.append(line) }
            if lines.count == 5 { break }
        }
        #expect(lines == ["reminder 1 for lot 7", "reminder 2 for lot 7", "reminder 3 for lot 7", "reminder 4 for lot 7",
                          "open the bid page for lot 7"])
        #expect(try await center.pending().isEmpty)
    }

    @Test func winningCancelsTheRest() async throws {
        let center = InMemoryNotificationCenter()
        let app = Reminders(center: center)
        try await app.remind(lot: "9", endsAt: await center.now.addingTimeInterval(86_400 * 3))
        #expect(try await app.won(lot: "9"))
        #expect(try await center.pending().isEmpty)
        #expect(await center.calls.count == 3, "add, remove, pending")
    }
}
