import DBus
import Testing
import TocsinTesting

/// `DBusServer`: peers that connect to us directly, with no dbus-daemon between.
@Suite("Peer-to-peer server", .timeLimit(.minutes(2)))
struct ServerTests {
    static let adder = DBusExportedObject(interfaces: [
        DBusInterface("org.tocsin.Test", methods: [DBusMethod("Add", input: "ii", output: "i") { call in
            [.int32(try call.arguments[0].asInt32() &+ call.arguments[1].asInt32())]
        }]),
    ])

    @Test("a peer of ours connects: calls and signals both ways, no bus names, no match rules sent")
    func ourPeer() async throws {
        let server = try await DBusServer.listen()
        defer { server.close() }
        async let accepting = server.accept()
        let client = try await DBusConnection.connect(address: server.address, registerWithBus: false)
        let accepted = try await accepting
        defer { client.close(); accepted.close() }
        #expect(client.isPeerToPeer && accepted.isPeerToPeer)
        #expect(client.uniqueName == nil && accepted.uniqueName == nil)

        try await accepted.export(Self.adder, at: "/org/tocsin/Test")
        let sum = try await client.call(destination: nil, path: "/org/tocsin/Test", interface: "org.tocsin.Test", member: "Add",
                                        arguments: [.int32(2), .int32(3)], timeout: .seconds(10))
        #expect(sum == [.int32(5)])

        // A subscription on a peer is local only (there is no bus to send AddMatch to): it must
        // not fail, and every matching signal the peer emits arrives.
        let signals = try await client.subscribe(MatchRule(interface: "org.tocsin.Test", member: "Ping"))
        let received = WaitableState<[DBusSignal]>([])
        let reader = Task { for await s in signals { received.update { $0.append(s) } } }
        defer { reader.cancel() }
        try accepted.emit(path: "/org/tocsin/Test", interface: "org.tocsin.Test", member: "Other", arguments: [])
        try accepted.emit(path: "/org/tocsin/Test", interface: "org.tocsin.Test", member: "Ping", arguments: [.string("hi")])
        let got = try await received.wait("Ping from the peer", timeout: .seconds(10)) { !$0.isEmpty }
        #expect(got.map(\.member) == ["Ping"] && got.first?.arguments == [.string("hi")])
    }

    @Test("a client we did not write (dbus-python's peer Connection) calls an object on an accepted connection")
    func foreignPeer() async throws {
        let server = try await DBusServer.listen()
        defer { server.close() }
        // It calls once told (by our signal) that the object is exported: a call sent before
        // that would find nothing at the path.
        let python = try TestProcess("/usr/bin/python3", ["-u", "-c", """
            import dbus, dbus.mainloop.glib
            from gi.repository import GLib
            dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)
            c = dbus.connection.Connection('\(server.address)')
            loop = GLib.MainLoop()
            def ready(*args):
                print('sum', int(c.call_blocking(None, '/org/tocsin/Test', 'org.tocsin.Test', 'Add', 'ii', (40, 2))), flush=True)
                loop.quit()
            c.add_signal_receiver(ready, 'Ready', 'org.tocsin.Test')
            print('listening', flush=True)
            GLib.timeout_add_seconds(20, loop.quit)
            loop.run()
            """])
        let accepted = try await server.accept()
        defer { accepted.close() }
        try await accepted.export(Self.adder, at: "/org/tocsin/Test")
        try await python.waitForOutput(containing: "listening", timeout: .seconds(20))
        try accepted.emit(path: "/org/tocsin/Test", interface: "org.tocsin.Test", member: "Ready", arguments: [])
        #expect(try await python.waitForExit(timeout: .seconds(30)) == .exited(0), "\(python.stderr)")
        #expect(python.stdout == "listening\nsum 42\n")
    }

    @Test("closing the server ends a waiting accept with Disconnected, and nobody can connect after")
    func closeEndsAccept() async throws {
        let server = try await DBusServer.listen()
        let address = server.address
        let waiting = Task { try await server.accept() }
        server.close()
        await #expect(throws: DBusError.self) { _ = try await waiting.value }
        await #expect(throws: DBusError.self) { _ = try await DBusConnection.connect(address: address, registerWithBus: false) }
    }

    /// A server, one peer of ours connected to it and accepted; the server is let go on return.
    private func acceptedPeer() async throws -> (address: String, client: DBusConnection, accepted: DBusConnection) {
        let server = try await DBusServer.listen()
        // Connecting does not wait for the server's side: the peer is queued until accepted.
        let client = try await DBusConnection.connect(address: server.address, registerWithBus: false)
        return (server.address, client, try await server.accept())
    }

    @Test("dropping the last reference stops listening, and a peer accepted before keeps its connection")
    func deinitStopsListening() async throws {
        let (address, client, accepted) = try await acceptedPeer()
        defer { client.close(); accepted.close() }
        await #expect(throws: DBusError.self) { _ = try await DBusConnection.connect(address: address, registerWithBus: false) }
        try await accepted.export(Self.adder, at: "/org/tocsin/Test")
        let sum = try await client.call(destination: nil, path: "/org/tocsin/Test", interface: "org.tocsin.Test", member: "Add",
                                        arguments: [.int32(1), .int32(1)], timeout: .seconds(10))
        #expect(sum == [.int32(2)])
    }

    @Test("a cancelled accept returns at once")
    func cancelledAccept() async throws {
        let server = try await DBusServer.listen()
        defer { server.close() }
        let waiting = Task { try await server.accept() }
        waiting.cancel()
        await #expect(throws: CancellationError.self) { _ = try await waiting.value }
    }
}
