import Glibc
import Testing
import DBus
import TocsinTesting

@Suite("Connection lifecycle", .timeLimit(.minutes(2)))
struct LifecycleTests {
    @Test func busCrashIsDetected() async throws {
        let bus = try await PrivateBus.start()
        let conn = try await DBusConnection.connect(address: bus.address)
        let events = conn.events
        // A call in flight when the bus dies must fail, not hang.
        let pending = Task {
            try await conn.call(
                destination: "org.tocsin.Nobody.Home", path: "/", interface: nil, member: "Wait",
                timeout: .seconds(60))
        }
        try await bus.crash()
        let event = try await withTimeout(.seconds(20), "disconnected event") {
            var it = events.makeAsyncIterator()
            return await it.next()
        }
        #expect(event == .disconnected)
        #expect(!conn.isConnected)
        let result = try await withTimeout(.seconds(20), "the in-flight call to fail") {
            await withTaskCancellationHandler { await pending.result } onCancel: { pending.cancel() }
        }
        #expect(throws: DBusError.self) { try result.get() }
        // Calls after the end fail at once with Disconnected.
        let late = await #expect(throws: DBusError.self) {
            try await conn.call(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: nil, member: "GetId")
        }
        #expect(late?.code == .disconnected)
    }

    @Test func closeEndsTheLoop() async throws {
        try await PrivateBus.with { bus in
            let conn = try await DBusConnection.connect(address: bus.address)
            #expect(conn.isConnected)
            conn.close()
            try await withTimeout(.seconds(20), "close") { await conn.waitUntilDisconnected() }
            #expect(!conn.isConnected)
        }
    }

    @Test func connectFailureIsAnError() async throws {
        let error = await #expect(throws: DBusError.self) {
            try await DBusConnection.connect(address: "unix:path=/nonexistent/tocsin/bus")
        }
        #expect(error?.code == .noServer || error?.code == .fileNotFound, "\(String(describing: error))")
    }

    /// A socket that takes connections and never says a word: libdbus's own `dbus_bus_register`
    /// waited on it forever.
    @Test("regression: a bus socket that accepts and never answers fails the open at its timeout, naming the address")
    func silentBusTimesOut() async throws {
        let dir = TemporaryDirectory(prefix: "tocsin-silent")
        let silent = try SilentUnixSocket(path: dir.path + "/bus")
        let address = silent.address

        let started = ContinuousClock.now
        let error = try await withTimeout(.seconds(10), "the open to give up") { () -> DBusError? in
            do {
                _ = try await DBusConnection.connect(address: address, timeout: .seconds(1))
                return nil
            } catch let e as DBusError {
                return e
            }
        }
        let waited = ContinuousClock.now - started
        #expect(error?.code == .timeout, "\(String(describing: error))")
        #expect(error?.message == "the bus at \(address) accepted the connection but did not complete authentication within 1s",
                "\(String(describing: error))")
        #expect(waited >= .milliseconds(900), "gave up after \(waited), before its timeout")
    }

    /// The loop sleeps in epoll_wait with no timeout while nothing happens: over an idle window
    /// its iteration counter does not move at all. Deterministic, because nothing arrives.
    @Test func idleConnectionMakesNoWakeups() async throws {
        try await PrivateBus.with { bus in
            let conn = try await DBusConnection.connect(address: bus.address)
            defer { conn.close() }
            // A round trip makes sure the Hello reply, NameAcquired and this reply are all consumed.
            _ = try await conn.call(
                destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
                member: "GetId")
            let before = conn.loopIterations
            try await Task.sleep(for: .milliseconds(500))  // the measured idle window, not synchronisation
            #expect(conn.loopIterations == before)
            // And it does wake for work: one call costs a handful of iterations.
            _ = try await conn.call(
                destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
                member: "GetId")
            #expect(conn.loopIterations > before)
        }
    }

    @Test func reconnectorRestoresNameAndExportsAfterBusRestart() async throws {
        let socket = try PrivateBus.temporarySocketAddress()
        var bus = try await PrivateBus.start(listenAddress: socket)
        let address = bus.address
        let object = DBusExportedObject(interfaces: [
            DBusInterface("org.tocsin.Test", methods: [DBusMethod("Add", input: "ii", output: "i") { call in
                [.int32(try call.arguments[0].asInt32() &+ call.arguments[1].asInt32())]
            }]),
        ])
        let reconnector = DBusReconnector(
            backoff: Backoff(initial: .milliseconds(20), maximum: .milliseconds(500)),
            connect: { try await DBusConnection.connect(address: socket) },
            setup: { conn in
                try await conn.export(object, at: "/org/tocsin/Test")
                try await conn.requestName("org.tocsin.Test")
            })
        let seen = WaitableState<[DBusConnection]>([])
        let consumer = Task {
            for await conn in reconnector.connections() { seen.update { $0.append(conn) } }
        }
        defer { consumer.cancel() }
        let first = try await seen.wait("first connection", timeout: .seconds(20)) { $0.count >= 1 }[0]
        #expect(first.isConnected)
        let call = ["call", "--address", address, "--dest", "org.tocsin.Test", "--object-path", "/org/tocsin/Test",
                    "--method", "org.tocsin.Test.Add", "int32 1", "int32 2"]
        #expect(try await TestProcess.run("gdbus", call).stdoutText == "(3,)\n")

        try await bus.crash()
        bus = try await PrivateBus.start(listenAddress: socket)
        let second = try await seen.wait("reconnection", timeout: .seconds(30)) { $0.count >= 2 }[1]
        #expect(second.isConnected)
        #expect(!first.isConnected)
        let again = try await TestProcess.run("gdbus", ["call", "--address", bus.address] + call.dropFirst(3))
        #expect(again.stdoutText == "(3,)\n", "\(again.stderrText)")
        consumer.cancel()
        await second.waitUntilDisconnected()
        await bus.stop()
    }

    /// A daemon that stops gracefully closes its connection itself, once the queue is written:
    /// ending the stream must leave the live connection open and still serving.
    @Test func reconnectorLeavesTheConnectionOpenWhenAskedTo() async throws {
        let bus = try await PrivateBus.start()
        let address = bus.address
        let reconnector = DBusReconnector(
            closesOnCancel: false,
            connect: { try await DBusConnection.connect(address: address) },
            setup: { conn in try await conn.requestName("org.tocsin.Kept") })
        let seen = WaitableState<[DBusConnection]>([])
        let consumer = Task {
            for await conn in reconnector.connections() { seen.update { $0.append(conn) } }
        }
        let conn = try await seen.wait("the connection", timeout: .seconds(20)) { $0.count >= 1 }[0]
        consumer.cancel()
        await consumer.value
        #expect(conn.isConnected)
        let owner = try await TestProcess.run("gdbus", ["call", "--address", address, "--dest", "org.freedesktop.DBus",
                                                        "--object-path", "/org/freedesktop/DBus", "--method",
                                                        "org.freedesktop.DBus.NameHasOwner", "org.tocsin.Kept"])
        #expect(owner.stdoutText == "(true,)\n", "\(owner.stderrText)")
        conn.close()
        await conn.waitUntilDisconnected()
        await bus.stop()
    }
}
