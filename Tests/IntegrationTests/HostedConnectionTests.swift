import DBus
import Synchronization
import Testing
import TocsinCore
import TocsinGateway
import TocsinTesting
import TocsinModel
import TocsinSystem

/// A connection hosted on an executor loop (what the daemon does with its bus connection): it
/// answers clients we did not write, makes calls whose libdbus timeout must fire from the loop's
/// timerfd, and ends cleanly, all without a thread of its own.
@Suite("Connection hosted on the executor loop", .timeLimit(.minutes(2)))
struct HostedConnectionTests {
    static let name: BusName = "org.tocsin.Hosted"
    static let path: ObjectPath = "/org/tocsin/Hosted"

    /// `Echo` answers at once; `Hang` never does.
    static func object() -> DBusExportedObject {
        DBusExportedObject(interfaces: [
            DBusInterface("org.tocsin.Hosted", methods: [
                DBusMethod("Echo", input: "s", output: "s") { call in [.string(try call.arguments[0].asString())] },
                DBusMethod("Hang") { _ in
                    try await Task.sleep(for: .seconds(3600))
                    return []
                },
            ]),
        ])
    }

    @Test func servesCallsAndTimesOutOnTheLoop() async throws {
        try await PrivateBus.with { bus in
            let runner = try LoopThread()
            defer { runner.stop() }
            let connection = try await DBusConnection.connect(address: bus.address, host: ExecutorLoopHost(runner.loop))
            defer { connection.close() }
            // The loop thread is now the connection's: a blocking call there would wait on itself.
            let refused = Mutex<Bool?>(nil)
            let asked = WaitableState(false)
            runner.loop.enqueue {
                let threw = (try? connection.callBlocking(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                                                          interface: "org.freedesktop.DBus", member: "GetId")) == nil
                refused.withLock { $0 = threw }
                asked.update { $0 = true }
            }
            try await asked.wait("the loop thread's blocking call", timeout: .seconds(10)) { $0 }
            #expect(refused.withLock { $0 } == true, "callBlocking on the host thread must refuse instead of hanging")

            try await connection.export(Self.object(), at: Self.path)
            _ = try await connection.requestName(Self.name)

            // Clients we did not write, several at once.
            let replies = try await withThrowingTaskGroup(of: String.self) { group in
                for i in 0..<8 {
                    group.addTask {
                        try await TestProcess.run("gdbus", ["call", "--address", bus.address, "--dest", Self.name.rawValue,
                                                            "--object-path", Self.path.rawValue, "--method", "org.tocsin.Hosted.Echo", "hello \(i)"]).stdoutText
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(Set(replies) == Set((0..<8).map { "('hello \($0)',)\n" }))
            let busctl = try await TestProcess.run("busctl", ["--address=\(bus.address)", "call", Self.name.rawValue, Self.path.rawValue,
                                                              "org.tocsin.Hosted", "Echo", "s", "from busctl"])
            #expect(busctl.stdoutText == "s \"from busctl\"\n")

            // An outgoing call: its reply comes back through the loop.
            let id = try await connection.call(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                                               interface: "org.freedesktop.DBus", member: "GetId")
            #expect(id.count == 1)

            // A call nobody answers: libdbus's timeout must fire although no thread sleeps with it.
            let other = try await DBusConnection.connect(address: bus.address)
            defer { other.close() }
            try await other.export(Self.object(), at: Self.path)
            let start = ContinuousClock.now
            let error = await #expect(throws: DBusError.self) {
                try await connection.call(destination: other.uniqueName, path: Self.path, interface: "org.tocsin.Hosted",
                                          member: "Hang", timeout: .milliseconds(300))
            }
            #expect(error?.code == .noReply, "\(String(describing: error))")
            #expect(ContinuousClock.now - start < .seconds(10))
        }
    }

    @Test func closeAndBusLossEndIt() async throws {
        let runner = try LoopThread()
        defer { runner.stop() }
        try await PrivateBus.with { bus in
            let closed = try await DBusConnection.connect(address: bus.address, host: ExecutorLoopHost(runner.loop))
            closed.close()
            try await withTimeout(.seconds(20), "close") { await closed.waitUntilDisconnected() }
            #expect(!closed.isConnected)
        }
        let bus = try await PrivateBus.start()
        let lost = try await DBusConnection.connect(address: bus.address, host: ExecutorLoopHost(runner.loop))
        let pending = Task {
            try await lost.call(destination: "org.tocsin.Nobody.Home", path: "/", interface: nil, member: "Wait",
                                timeout: .seconds(60))
        }
        try await bus.crash()
        try await withTimeout(.seconds(20), "the disconnect") { await lost.waitUntilDisconnected() }
        let result = try await withTimeout(.seconds(20), "the in-flight call to fail") {
            await withTaskCancellationHandler { await pending.result } onCancel: { pending.cancel() }
        }
        #expect(throws: DBusError.self) { try result.get() }
        // The loop goes on serving other work after its connection ended.
        let ran = WaitableState(false)
        runner.loop.enqueue { ran.update { $0 = true } }
        try await ran.wait("a job after the connection ended", timeout: .seconds(10)) { $0 }
    }
}
