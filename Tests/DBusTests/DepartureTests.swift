import Glibc
import Testing
@testable import DBus
import TocsinTesting

/// `send(_:departed:)`: libdbus queues what the socket does not take, and a process killed then
/// loses it, so "sent" is known only once libdbus has written and dropped each message.
@Suite("Knowing when sent messages have left the process", .timeLimit(.minutes(2)))
struct DepartureTests {
    @Test("messages queued behind a bus that does not read have not departed; once it reads they have, and arrive")
    func departsOnceWritten() async throws {
        let bus = try await PrivateBus.start()
        let sender = try await DBusConnection.connect(address: bus.address)
        let listener = try await DBusConnection.connect(address: bus.address)
        let chunks = try await listener.subscribe(MatchRule(interface: "org.tocsin.Probe", member: "Chunk"))
        // The bus stops reading: past the socket's buffer (a few hundred kB), libdbus keeps the rest.
        bus.process.signal(SIGSTOP)
        var resumed = false
        defer {
            if !resumed { bus.process.signal(SIGCONT) }
        }
        let count = 64
        let chunk = String(repeating: "x", count: 64 * 1024)
        let departed = WaitableState<Int>(0)
        // Built in the call: a reference kept here would keep a message from departing.
        sender.send(try (0..<count).map { _ in
            try DBusMessage.signal(path: "/probe", interface: "org.tocsin.Probe", member: "Chunk", arguments: [.string(chunk)])
        }, departed: { departed.update { $0 += 1 } })
        // The send job has run once a later job on the same loop has.
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in sender.core.onLoop { _, _ in c.resume() } }
        #expect(departed.value == 0, "4 MiB cannot all have left while the bus is stopped")

        bus.process.signal(SIGCONT)
        resumed = true
        try await departed.wait("the messages to leave", timeout: .seconds(20)) { $0 > 0 }
        let received = try await withTimeout(.seconds(20), "every chunk at the listener") {
            var n = 0
            for await _ in chunks {
                n += 1
                if n == count { break }
            }
            return n
        }
        #expect(received == count, "written, not dropped")
        #expect(departed.value == 1, "departed is called once per send")
        chunks.cancel()
        listener.close()
        sender.close()
        await bus.stop()
    }

    @Test("an empty send has departed at once")
    func emptySend() async throws {
        let bus = try await PrivateBus.start()
        let sender = try await DBusConnection.connect(address: bus.address)
        let departed = WaitableState<Bool>(false)
        sender.send([], departed: { departed.update { $0 = true } })
        #expect(departed.value)
        sender.close()
        await bus.stop()
    }
}
