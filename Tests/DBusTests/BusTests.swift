import Glibc
import Testing
import DBus
import TocsinTesting
import TocsinModel

/// Each test gets its own private dbus-daemon (started from contrib/test/dbus-session.conf and
/// reaped at the end) with our test object exported on it, and drives it with clients we did
/// not write: gdbus, busctl, dbus-send. This suite is about method calls (marshalling, error
/// replies, timeouts, concurrency); signals, names and the standard interfaces are in
/// `BusSignalAndNameTests.swift`.
@Suite("Against a private dbus-daemon", .timeLimit(.minutes(2)))
struct BusTests {
    // MARK: Marshalling through foreign clients

    @Test func gdbusRoundTripsEveryType() async throws {
        try await TestService.with { svc in
            let args = [
                "byte 0xfe", "true", "int16 -2", "uint16 3", "int32 -4", "uint32 5", "int64 -6", "uint64 7",
                "1.5", "'grüß'", "objectpath '/org/tocsin/x'", "signature 'a{sv}'",
                "{'urgent': <true>, 'count': <int32 3>, 'tags': <['a', 'b']>}",
                "('s', int32 1, <(2.5,)>)", "<<uint64 9>>", "{uint32 1: ['x']}", "@ay [0, 1, 255]",
                "[[int32 1], @ai []]", "@a(sv) []",
            ]
            let out = try await svc.gdbus("org.tocsin.Test.Echo", args)
            #expect(out.status == .exited(0), "\(out.stderrText)")
            // What gdbus sent, as our server decoded it.
            #expect(svc.echoed.value.first == everyType)
            // What we sent back, as gdbus decoded it.
            #expect(out.stdoutText == """
                (byte 0xfe, true, int16 -2, uint16 3, -4, uint32 5, int64 -6, uint64 7, 1.5, 'grüß', \
                objectpath '/org/tocsin/x', signature 'a{sv}', {'urgent': <true>, 'count': <3>, 'tags': <['a', 'b']>}, \
                ('s', 1, <(2.5,)>), <<uint64 9>>, {uint32 1: ['x']}, [byte 0x00, 0x01, 0xff], [[1], []], @a(sv) [])

                """)
        }
    }

    @Test func busctlRoundTripsBasicTypesAndContainers() async throws {
        try await TestService.with { svc in
            let out = try await svc.busctl([
                "call", "--", testName.rawValue, testPath.rawValue, testInterface.rawValue, "Echo",
                "ybnqiuxtdsoga{sv}(si)v", "254", "true", "-2", "3", "-4", "5", "-6", "7", "1.5", "grüß", "/org/tocsin/x",
                "a{sv}", "2", "urgent", "b", "true", "count", "i", "3", "s", "1", "u", "9",
            ])
            #expect(out.status == .exited(0), "\(out.stderrText)")
            #expect(svc.echoed.value.first == [
                .byte(254), .boolean(true), .int16(-2), .uint16(3), .int32(-4), .uint32(5), .int64(-6), .uint64(7),
                .double(1.5), .string("grüß"), .objectPath("/org/tocsin/x"), .signature("a{sv}"),
                .vardict([("urgent", .boolean(true)), ("count", .int32(3))]),
                .structure([.string("s"), .int32(1)]), .variant(.uint32(9)),
            ])
            #expect(out.stdoutText == """
                ybnqiuxtdsoga{sv}(si)v 254 true -2 3 -4 5 -6 7 1.5 "gr\\303\\274\\303\\237" "/org/tocsin/x" "a{sv}" 2 "urgent" b true \
                "count" i 3 "s" 1 u 9

                """)
        }
    }

    @Test func dbusSendRoundTripsArraysDictsAndVariants() async throws {
        try await TestService.with { svc in
            let out = try await svc.dbusSend([
                "--print-reply", "--dest=\(testName)", testPath.rawValue, "org.tocsin.Test.Echo",
                "string:hello", "array:int32:1,2,3", "dict:string:string:k1,v1,k2,v2", "variant:double:2.5",
                "objpath:/a/b", "uint64:18446744073709551615", "int16:-32768", "byte:7", "boolean:false",
            ])
            #expect(out.status == .exited(0), "\(out.stderrText)")
            #expect(svc.echoed.value.first == [
                .string("hello"), .array(.int32, [.int32(1), .int32(2), .int32(3)]),
                .dictionary(key: .string, value: .string, [
                    .init(.string("k1"), .string("v1")), .init(.string("k2"), .string("v2")),
                ]),
                .variant(.double(2.5)), .objectPath("/a/b"), .uint64(.max), .int16(.min), .byte(7), .boolean(false),
            ])
            #expect(out.stdoutText.contains("string \"hello\""))
            #expect(out.stdoutText.contains("dict entry(\n         string \"k2\"\n         string \"v2\""))
            #expect(out.stdoutText.contains("variant       double 2.5"))
            #expect(out.stdoutText.contains("uint64 18446744073709551615"))
        }
    }

    @Test func ourClientRoundTripsEveryTypeIncludingFileDescriptors() async throws {
        try await TestService.with { svc in
            let client = try await DBusConnection.connect(address: svc.bus.address)
            defer { client.close() }
            let back = try await client.call(
                destination: testName, path: testPath, interface: testInterface, member: "Echo", arguments: everyType)
            #expect(back == everyType)

            let fd = open("/dev/null", O_RDONLY)
            defer { close(fd) }
            let withFD = try await client.call(
                destination: testName, path: testPath, interface: testInterface, member: "Echo", arguments: [.unixFD(fd)])
            guard case .unixFD(let received) = withFD.first else {
                Issue.record("no descriptor came back: \(withFD)")
                return
            }
            // A new descriptor for the same open file.
            #expect(received != fd)
            var a = stat(), b = stat()
            #expect(fstat(received, &a) == 0 && fstat(fd, &b) == 0)
            #expect(a.st_ino == b.st_ino && a.st_dev == b.st_dev)
            close(received)
            for case .unixFD(let serverSide) in svc.echoed.value.last ?? [] { close(serverSide) }
        }
    }

    @Test func megabyteStrings() async throws {
        try await TestService.with { svc in
            let n = 1 << 20
            // Our reply, parsed by gdbus (a 1 MB argument cannot go through argv, whose strings stop at 128 KiB).
            let out = try await svc.gdbus("org.tocsin.Test.Big", ["uint32 \(n)"])
            #expect(out.status == .exited(0), "\(out.stderrText)")
            #expect(out.stdoutText == "('" + String(repeating: "x", count: n) + "',)\n")
            // Both directions through our own client.
            let client = try await DBusConnection.connect(address: svc.bus.address)
            defer { client.close() }
            let big = String(repeating: "ü", count: n / 2)
            let echoed = try await client.call(
                destination: testName, path: testPath, interface: testInterface, member: "Echo", arguments: [.string(big)])
            #expect(echoed == [.string(big)])
            let length = try await client.call(
                destination: testName, path: testPath, interface: testInterface, member: "Length", arguments: [.string(big)])
            #expect(length == [.uint32(UInt32(n))])
        }
    }

    // MARK: Errors

    @Test func unknownMethodInterfaceAndObject() async throws {
        try await TestService.with { svc in
            let method = try await svc.gdbus("org.tocsin.Test.NoSuchMethod")
            #expect(method.status != .exited(0))
            #expect(method.stderrText.contains("org.freedesktop.DBus.Error.UnknownMethod"), "\(method.stderrText)")

            let iface = try await svc.gdbus("org.tocsin.Other.Echo")
            #expect(iface.stderrText.contains("org.freedesktop.DBus.Error.UnknownInterface"), "\(iface.stderrText)")

            let object = try await svc.gdbus("org.tocsin.Test.Echo", object: "/nowhere")
            #expect(object.stderrText.contains("org.freedesktop.DBus.Error.UnknownObject"), "\(object.stderrText)")

            let busctl = try await svc.busctl(["call", testName.rawValue, testPath.rawValue, testInterface.rawValue, "Nope"])
            #expect(busctl.status != .exited(0))
            #expect(busctl.stderrText.contains("no method org.tocsin.Test.Nope"), "\(busctl.stderrText)")

            let send = try await svc.dbusSend(["--print-reply", "--dest=\(testName)", testPath.rawValue, "org.tocsin.Test.Nope"])
            #expect(send.stderrText.hasPrefix("Error org.freedesktop.DBus.Error.UnknownMethod: "), "\(send.stderrText)")

            // Once unexported, the object is gone for callers too.
            await svc.server.unexport(testPath)
            let gone = try await svc.dbusSend(["--print-reply", "--dest=\(testName)", testPath.rawValue, "org.tocsin.Test.Echo"])
            #expect(gone.stderrText.hasPrefix("Error org.freedesktop.DBus.Error.UnknownObject: "), "\(gone.stderrText)")
        }
    }

    @Test func wrongSignatureIsInvalidArgs() async throws {
        try await TestService.with { svc in
            // gdbus and busctl would check against our introspection data first; busctl with an
            // explicit signature does not, so the wrong call really reaches the service.
            let out = try await svc.busctl(["call", testName.rawValue, testPath.rawValue, testInterface.rawValue, "Add", "si", "one", "2"])
            #expect(out.status != .exited(0))
            #expect(out.stderrText.contains("org.tocsin.Test.Add expects arguments 'ii', got 'si'"), "\(out.stderrText)")

            let ok = try await svc.gdbus("org.tocsin.Test.Add", ["int32 40", "int32 2"])
            #expect(ok.stdoutText == "(42,)\n")

            let send = try await svc.dbusSend(["--print-reply", "--dest=\(testName)", testPath.rawValue, "org.tocsin.Test.Add", "int32:1"])
            #expect(send.stderrText.hasPrefix("Error org.freedesktop.DBus.Error.InvalidArgs: "), "\(send.stderrText)")
        }
    }

    @Test func handlerErrorsBecomeErrorReplies() async throws {
        try await TestService.with { svc in
            let denied = try await svc.gdbus("org.tocsin.Test.Fail")
            #expect(denied.stderrText.contains("org.freedesktop.DBus.Error.AccessDenied"), "\(denied.stderrText)")
            #expect(denied.stderrText.contains("the test object says no"))

            let other = try await svc.gdbus("org.tocsin.Test.Crash")
            #expect(other.stderrText.contains("org.freedesktop.DBus.Error.Failed"), "\(other.stderrText)")

            // A handler returning a string libdbus would abort on gets an error reply instead.
            let bad = try await svc.gdbus("org.tocsin.Test.BadReply")
            #expect(bad.stderrText.contains("org.freedesktop.DBus.Error.Failed"), "\(bad.stderrText)")

            // Our client sees the same errors as typed values.
            let client = try await DBusConnection.connect(address: svc.bus.address)
            defer { client.close() }
            let error = await #expect(throws: DBusError.self) {
                try await client.call(destination: testName, path: testPath, interface: testInterface, member: "Fail")
            }
            #expect(error?.code == .accessDenied)
            #expect(error?.message == "the test object says no")
            // The service is still alive and answering.
            #expect(try await svc.gdbus("org.tocsin.Test.Add", ["int32 1", "int32 1"]).stdoutText == "(2,)\n")
        }
    }

    @Test func ourSideRefusesInvalidDataWithoutAborting() async throws {
        try await TestService.with { svc in
            let conn = svc.server
            #expect(throws: DBusError.self) {
                try conn.emit(path: testPath, interface: testInterface, member: "Rang", arguments: [.string("a\0b")])
            }
            await #expect(throws: DBusError.self) {
                try await conn.call(destination: testName, path: testPath, interface: testInterface, member: "Echo",
                                    arguments: [.array(.objectPath, [.string("/not/a/path/value")])])
            }
            // Variables, not literals: `ObjectPath("literal")` is literal coercion, which traps by design.
            let badPath = "/bad//path", badBus = "not a name", badMember = "Bad-Member", badError = "x"
            #expect(throws: DBusError.self) { try ObjectPath(badPath) }
            #expect(throws: DBusError.self) { try DBusValue.string(validatingUTF8: [0xc3, 0x28]) }
            #expect(throws: DBusError.self) { try BusName(badBus) }
            #expect(throws: DBusError.self) { try MemberName(badMember) }
            #expect(throws: DBusError.self) { try ErrorName(badError) }
            // Still connected and serving.
            #expect(conn.isConnected)
            let pong = try await svc.gdbus("org.freedesktop.DBus.Peer.Ping")
            #expect(pong.status == .exited(0))
        }
    }

    @Test func callTimeoutGivesNoReply() async throws {
        try await TestService.with { svc in
            let client = try await DBusConnection.connect(address: svc.bus.address)
            defer { client.close() }
            let error = await #expect(throws: DBusError.self) {
                try await client.call(
                    destination: testName, path: testPath, interface: testInterface, member: "Hang",
                    timeout: .milliseconds(200))
            }
            #expect(error?.code == .noReply)
        }
    }

    @Test func cancellingTheTaskAbandonsTheCall() async throws {
        try await TestService.with { svc in
            let client = try await DBusConnection.connect(address: svc.bus.address)
            defer { client.close() }
            let call = Task {
                try await client.call(destination: testName, path: testPath, interface: testInterface, member: "Hang",
                                      timeout: .seconds(60))
            }
            call.cancel()
            let result = try await withTimeout(.seconds(20), "cancelled call") { await call.result }
            #expect(throws: DBusError.self) { try result.get() }
            // The connection is unaffected.
            let sum = try await client.call(destination: testName, path: testPath, interface: testInterface, member: "Add",
                                            arguments: [.int32(1), .int32(2)])
            #expect(sum == [.int32(3)])
        }
    }

    @Test func blockingCallFromAPlainThread() async throws {
        try await TestService.with { svc in
            let client = try await DBusConnection.connect(address: svc.bus.address)
            defer { client.close() }
            let result = try await withTimeout(.seconds(30), "blocking call") {
                try client.callBlocking(
                    destination: testName, path: testPath, interface: testInterface, member: "Add",
                    arguments: [.int32(2), .int32(3)])
            }
            #expect(result == [.int32(5)])
        }
    }

    // MARK: Concurrency

    @Test func fiftyConcurrentGdbusCallersAllAnswered() async throws {
        let callers = 50
        // Each Gate call is held until all 50 are in flight at once, which also proves that
        // waiting handlers do not block the loop.
        try await TestService.with(gateTarget: callers) { svc in
            let outputs = try await withThrowingTaskGroup(of: (Int, TestProcess.Output).self) { group in
                for i in 0..<callers {
                    group.addTask { (i, try await svc.gdbus("org.tocsin.Test.Gate", ["int32 \(i)"])) }
                }
                var all: [Int: TestProcess.Output] = [:]
                for try await (i, out) in group { all[i] = out }
                return all
            }
            #expect(outputs.count == callers)
            for (i, out) in outputs {
                #expect(out.status == .exited(0), "\(i): \(out.stderrText)")
                #expect(out.stdoutText == "(\(i),)\n")
            }
            #expect(svc.gate.value == callers)
        }
    }
}
