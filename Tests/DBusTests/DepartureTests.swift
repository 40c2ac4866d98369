import Glibc
import Testing
@testable import DBus
import TocsinTesting

/// `send(_:departed:)`: libdbus queues what the socket does not take, and a process killed then
/// loses it, so "sent" is known only once libdbus has written and dropped each message; and
/// libdbus drops a queue the same way when the connection goes, which must not count as written.
@Suite("Knowing when sent messages have left the process", .timeLimit(.minutes(2)))
struct DepartureTests {
    static let count = 64

    /// 4 MiB of signals: far more than a socket's buffer (a few hundred kB by default), so most
    /// stay queued in libdbus while the bus does not read. Built in the call that sends them: a
    /// reference kept by the test would keep a message from departing.
    static func chunks() throws -> [DBusMessage] {
        let chunk = String(repeating: "x", count: 64 * 1024)
        return try (0..<count).map { _ in
            try DBusMessage.signal(path: "/probe", interface: "org.tocsin.Probe", member: "Chunk", arguments: [.string(chunk)])
        }
    }

    /// A connection to `bus`, the bus stopped (`SIGSTOP`: the caller resumes it), and `chunks()`
    /// sent on it: most of it waits in libdbus. `departed` collects what the send reported.
    static func sendBehindStoppedBus(_ bus: PrivateBus) async throws -> (sender: DBusConnection, departed: WaitableState<[Bool]>) {
        let sender = try await DBusConnection.connect(address: bus.address)
        bus.process.signal(SIGSTOP)
        let departed = WaitableState<[Bool]>([])
        sender.send(try chunks(), departed: { written in departed.update { $0.append(written) } })
        return (sender, departed)
    }

    /// Returns once every job queued on `connection`'s loop before it has run.
    static func loopPassed(_ connection: DBusConnection) async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in connection.core.onLoop { _, _ in c.resume() } }
    }

    @Test("messages queued behind a bus that does not read have not departed; once it reads they have, written, and arrive")
    func departsOnceWritten() async throws {
        let bus = try await PrivateBus.start()
        let listener = try await DBusConnection.connect(address: bus.address)
        let chunks = try await listener.subscribe(MatchRule(interface: "org.tocsin.Probe", member: "Chunk"))
        defer { bus.process.signal(SIGCONT) }
        let (sender, departed) = try await Self.sendBehindStoppedBus(bus)
        await Self.loopPassed(sender)
        #expect(departed.value.isEmpty, "4 MiB cannot all have left while the bus is stopped")

        bus.process.signal(SIGCONT)
        try await departed.wait("the messages to leave", timeout: .seconds(20)) { !$0.isEmpty }
        let received = try await withTimeout(.seconds(20), "every chunk at the listener") {
            var n = 0
            for await _ in chunks {
                n += 1
                if n == Self.count { break }
            }
            return n
        }
        #expect(received == Self.count, "written, not dropped")
        await Self.loopPassed(sender)
        #expect(departed.value == [true], "departed once, as written")
        chunks.cancel()
        listener.close()
        sender.close()
        await bus.stop()
    }

    @Test("messages still queued when the connection closes are dropped, and say so")
    func droppedOnClose() async throws {
        let bus = try await PrivateBus.start()
        defer { bus.process.signal(SIGCONT) }
        let (sender, departed) = try await Self.sendBehindStoppedBus(bus)
        await Self.loopPassed(sender)
        #expect(departed.value.isEmpty, "4 MiB cannot all have left while the bus is stopped")
        sender.close()
        try await departed.wait("the queue to be dropped", timeout: .seconds(20)) { !$0.isEmpty }
        #expect(departed.value == [false], "dropped with the connection, not written")
        bus.process.signal(SIGCONT)
        await bus.stop()
    }

    @Test("closeWhenFlushed writes what is queued, then closes")
    func closeWhenFlushed() async throws {
        let bus = try await PrivateBus.start()
        defer { bus.process.signal(SIGCONT) }
        let (sender, departed) = try await Self.sendBehindStoppedBus(bus)
        let closing = Task { await sender.closeWhenFlushed(atMost: .seconds(60)) }
        await Self.loopPassed(sender)
        #expect(departed.value.isEmpty, "closed before the queue was written")
        bus.process.signal(SIGCONT)
        try await withTimeout(.seconds(20), "the connection to close") { await closing.value }
        #expect(departed.value == [true], "written before the close")
        await bus.stop()
    }

    @Test("closeWhenFlushed closes at its bound while the bus does not read, dropping the rest")
    func closeWhenFlushedBounded() async throws {
        let bus = try await PrivateBus.start()
        defer { bus.process.signal(SIGCONT) }
        let (sender, departed) = try await Self.sendBehindStoppedBus(bus)
        try await withTimeout(.seconds(20), "the connection to close") { await sender.closeWhenFlushed(atMost: .milliseconds(200)) }
        try await departed.wait("the queue to be dropped", timeout: .seconds(20)) { !$0.isEmpty }
        #expect(departed.value == [false])
        bus.process.signal(SIGCONT)
        await bus.stop()
    }

    @Test("an empty send departs at once, as written while the connection is up")
    func emptySend() async throws {
        let bus = try await PrivateBus.start()
        let sender = try await DBusConnection.connect(address: bus.address)
        let departed = WaitableState<[Bool]>([])
        sender.send([], departed: { written in departed.update { $0.append(written) } })
        try await departed.wait("the empty send to depart", timeout: .seconds(20)) { !$0.isEmpty }
        #expect(departed.value == [true])
        sender.close()
        await bus.stop()
    }
}
