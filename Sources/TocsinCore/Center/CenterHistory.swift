import TocsinTime
import TocsinSystem

extension TocsinCenter {
    /// Recorded events matching `query`, newest first. Read on the store thread after the
    /// commits of every request submitted before it (`caughtUp`), so the events of a client's
    /// calls sent before this one are in the answer, answered or not.
    public func history(_ query: HistoryQuery) async throws(CenterError) -> [HistoryEvent] {
        await caughtUp()
        if closed { throw CenterError(.stopping, "the daemon is stopping") }
        do { return try await store.history(query) } catch {
            throw CenterError(.storage, error.message)
        }
    }
}
