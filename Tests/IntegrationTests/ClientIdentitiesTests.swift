import Synchronization
import Testing
import TocsinTesting
@testable import TocsinGateway

/// The per-client quota's owner lookup asks the bus once per client, however many of the
/// client's calls arrive before the answer.
struct ClientIdentitiesTests {
    /// Holds every lookup until the last caller has started, so that all of them ask while the
    /// first lookup is still unanswered: a cache filled only on an answer would look up for each.
    final class Gate: Sendable {
        private struct State { var open = false; var waiting: [CheckedContinuation<Void, Never>] = [] }
        private let state = Mutex(State())
        func wait() async {
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                let now = state.withLock { s in
                    if s.open { return true }
                    s.waiting.append(c)
                    return false
                }
                if now { c.resume() }
            }
        }
        func open() {
            for c in state.withLock({ s in s.open = true; defer { s.waiting = [] }; return s.waiting }) { c.resume() }
        }
    }

    final class Scope: Sendable {}

    final class Tally: Sendable {
        let started = Atomic<Int>(0)
        let lookups = Mutex<[String: Int]>([:])
    }

    /// `callers` concurrent calls for each of `senders`; returns what each got and how often
    /// each sender was looked up.
    static func ask(_ identities: ClientIdentities, senders: [String], callers: Int, scope: Scope) async -> (answers: [String: Set<String>], lookups: [String: Int]) {
        let gate = Gate()
        let tally = Tally()
        let total = senders.count * callers
        let id = ObjectIdentifier(scope)
        let answers = await withTaskGroup(of: (String, String).self) { group in
            for sender in senders {
                for _ in 0..<callers {
                    group.addTask {
                        if tally.started.add(1, ordering: .relaxed).newValue == total { gate.open() }
                        let owner = await identities.owner(of: sender, scope: id) {
                            tally.lookups.withLock { $0[sender, default: 0] += 1 }
                            await gate.wait()
                            return "owner of \(sender)"
                        }
                        return (sender, owner)
                    }
                }
            }
            var answers: [String: Set<String>] = [:]
            for await (sender, owner) in group { answers[sender, default: []].insert(owner) }
            return answers
        }
        return (answers, tally.lookups.withLock { $0 })
    }

    @Test func aBurstFromOneClientAsksOnce() async {
        let identities = ClientIdentities()
        let scope = Scope()
        let first = await Self.ask(identities, senders: [":1.7", ":1.8"], callers: 64, scope: scope)
        #expect(first.lookups == [":1.7": 1, ":1.8": 1])
        #expect(first.answers == [":1.7": ["owner of :1.7"], ":1.8": ["owner of :1.8"]])

        // Answered now: no further lookup.
        let again = await Self.ask(identities, senders: [":1.7"], callers: 8, scope: scope)
        #expect(again.lookups == [:])
        #expect(again.answers == [":1.7": ["owner of :1.7"]])

        // Another connection (a bus restarted hands out `:1.7` again) asks afresh.
        let other = Scope()
        let reconnected = await Self.ask(identities, senders: [":1.7"], callers: 8, scope: other)
        #expect(reconnected.lookups == [":1.7": 1])
        withExtendedLifetime(scope) {}
    }

    /// Calls of a sender whose owner is being asked wait for the answer, whatever they are;
    /// another sender's go on at once.
    @Test func laterCallsWaitForTheAnswer() async throws {
        let identities = ClientIdentities()
        let scope = Scope()
        let gate = Gate()
        let events = WaitableState<[String]>([])
        let asking = Task {
            await identities.owner(of: ":1.9", scope: ObjectIdentifier(scope)) {
                events.update { $0.append("asked") }
                await gate.wait()
                events.update { $0.append("answered") }
                return "owner of :1.9"
            }
        }
        try await events.wait("the lookup to start", timeout: .seconds(10)) { $0 == ["asked"] }
        await identities.inTurn(":1.10")
        events.update { $0.append("other sender went on") }
        let later = Task {
            await identities.inTurn(":1.9")
            events.update { $0.append("later call went on") }
        }
        // Opened only once the later call waits, queued behind the asking one.
        try await waitUntil("the later call to wait") { identities.waitingCount(":1.9") == 1 }
        gate.open()
        await later.value
        #expect(await asking.value == "owner of :1.9")
        #expect(events.value == ["asked", "other sender went on", "answered", "later call went on"])
        // Answered: the sender's calls no longer wait.
        await identities.inTurn(":1.9")
        #expect(identities.waitingCount(":1.9") == 0)
        withExtendedLifetime(scope) {}
    }
}
