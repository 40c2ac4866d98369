import TocsinTime
import TocsinSystem

extension TocsinCenter {
    /// Recorded events matching `query`, newest first. Read on the store thread after every
    /// commit queued before it, so an event whose call has returned is in the answer.
    public func history(_ query: HistoryQuery) async throws(CenterError) -> [HistoryEvent] {
        if closed { throw CenterError(.stopping, "the daemon is stopping") }
        do { return try await store.history(query) } catch {
            throw CenterError(.storage, error.message)
        }
    }
}
