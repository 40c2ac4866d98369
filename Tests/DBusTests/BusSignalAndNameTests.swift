import Glibc
import Testing
import DBus
import TocsinTesting
import TocsinModel

/// What the bus carries besides method calls: signals (to dbus-monitor and from dbus-send),
/// bus names, and the standard Peer, Introspectable and Properties interfaces, each test on its
/// own private dbus-daemon as in `BusTests`, driven by clients we did not write.
@Suite("Signals and names on a private dbus-daemon", .timeLimit(.minutes(2)))
struct BusSignalAndNameTests {
    // MARK: Signals

    @Test func emittedSignalSeenByDbusMonitor() async throws {
        try await TestService.with { svc in
            let monitor = try TestProcess(
                "dbus-monitor", ["--address", svc.bus.address, "type='signal',interface='org.tocsin.Test'"])
            // dbus-monitor prints NameLost once it has become a monitor: from then on it sees everything.
            try await monitor.waitForOutput(containing: "member=NameLost", timeout: .seconds(20))
            try svc.server.emit(
                path: testPath, interface: testInterface, member: "Rang",
                arguments: [.string("wake up"), .vardict([("urgency", .byte(2))])])
            let text = try await monitor.waitForOutput(containing: "byte 2", timeout: .seconds(20))
            try await monitor.kill()
            #expect(text.contains("path=/org/tocsin/Test; interface=org.tocsin.Test; member=Rang"))
            #expect(text.contains("string \"wake up\""))
            #expect(text.contains("string \"urgency\""))
        }
    }

    @Test func subscriptionReceivesSignalFromDbusSend() async throws {
        try await TestService.with { svc in
            let client = try await DBusConnection.connect(address: svc.bus.address)
            defer { client.close() }
            let subscription = try await client.subscribe(MatchRule(interface: "org.tocsin.Probe", member: "Beep"))
            // Not matching: must not be delivered.
            _ = try await svc.dbusSend(["--type=signal", "/x", "org.tocsin.Probe.Other", "string:no"])
            let sent = try await svc.dbusSend(["--type=signal", "/x/y", "org.tocsin.Probe.Beep", "string:yes", "int32:3"])
            #expect(sent.status == .exited(0), "\(sent.stderrText)")
            let signal = try await withTimeout(.seconds(20), "Beep signal") {
                var it = subscription.makeAsyncIterator()
                return await it.next()
            }
            #expect(signal?.member == "Beep")
            #expect(signal?.path == "/x/y")
            #expect(signal?.arguments == [.string("yes"), .int32(3)])
            subscription.cancel()
        }
    }

    @Test func propertiesChangedReachesSubscribers() async throws {
        try await TestService.with { svc in
            let client = try await DBusConnection.connect(address: svc.bus.address)
            defer { client.close() }
            let sub = try await client.subscribe(MatchRule(interface: .properties, member: "PropertiesChanged", path: testPath))
            try svc.server.emitPropertiesChanged(path: testPath, interface: testInterface, changed: ["Volume": .int32(9)])
            let signal = try await withTimeout(.seconds(20), "PropertiesChanged") {
                var it = sub.makeAsyncIterator()
                return await it.next()
            }
            #expect(signal?.arguments == [.string("org.tocsin.Test"), .vardict([("Volume", .int32(9))]), .array(.string, [])])
        }
    }

    // MARK: Names, Peer, Introspection, Properties

    @Test func nameAlreadyOwnedIsAClearError() async throws {
        try await TestService.with { svc in
            let second = try await DBusConnection.connect(address: svc.bus.address)
            defer { second.close() }
            let error = await #expect(throws: DBusError.self) { try await second.requestName(testName) }
            #expect(error?.code == .nameTaken)
            let owner = svc.server.uniqueName?.rawValue ?? "?"
            #expect(error?.message == "bus name org.tocsin.Test is already owned by \(owner) (pid \(getpid()))")
            #expect(try await second.nameOwner(testName) == svc.server.uniqueName)
            // Queueing is allowed when asked for.
            #expect(try await second.requestName(testName, flags: []) == .inQueue)
            #expect(try await svc.server.requestName(testName) == .alreadyOwner)
        }
    }

    @Test func replacedNameIsReportedAsNameLost() async throws {
        try await TestService.with { svc in
            let name: BusName = "org.tocsin.Replaceable"
            let events = svc.server.events
            try await svc.server.requestName(name, flags: [.allowReplacement, .doNotQueue])
            let thief = try await DBusConnection.connect(address: svc.bus.address)
            defer { thief.close() }
            #expect(try await thief.requestName(name, flags: [.replaceExisting]) == .primaryOwner)
            let seen = try await withTimeout(.seconds(20), "NameLost") {
                var got: [DBusConnection.Event] = []
                for await e in events {
                    got.append(e)
                    if e == .nameLost(name) { break }
                }
                return got
            }
            #expect(seen.contains(.nameAcquired(name)))
            #expect(seen.last == .nameLost(name))
        }
    }

    @Test func peerPingAndMachineId() async throws {
        try await TestService.with { svc in
            let ping = try await svc.busctl(["call", testName.rawValue, testPath.rawValue, "org.freedesktop.DBus.Peer", "Ping"])
            #expect(ping.status == .exited(0), "\(ping.stderrText)")
            let id = try await svc.gdbus("org.freedesktop.DBus.Peer.GetMachineId")
            #expect(id.status == .exited(0), "\(id.stderrText)")
            #expect(id.stdoutText.count == "('0123456789abcdef0123456789abcdef',)\n".count, "\(id.stdoutText)")
        }
    }

    @Test func introspectionServesTheTablesAndChildren() async throws {
        try await TestService.with { svc in
            let out = try await TestProcess.run(
                "gdbus", ["introspect", "--address", svc.bus.address, "--dest", testName.rawValue, "--object-path", testPath.rawValue],
                timeout: .seconds(60))
            #expect(out.status == .exited(0), "\(out.stderrText)")
            let text = out.stdoutText
            #expect(text.contains("interface org.tocsin.Test {"))
            #expect(text.contains("Add(in  i arg_0,"))
            #expect(text.contains("Rang(s arg_0,"), "\(text)")
            #expect(text.contains("readwrite i Volume = 7;"), "\(text)")
            #expect(text.contains("interface org.freedesktop.DBus.Properties {"))

            let root = try await TestProcess.run(
                "gdbus", ["introspect", "--address", svc.bus.address, "--dest", testName.rawValue, "--object-path", "/", "--recurse"],
                timeout: .seconds(60))
            #expect(root.stdoutText.contains("node /org/tocsin/Test {"), "\(root.stdoutText)")
        }
    }

    @Test func propertiesGetGetAllSet() async throws {
        try await TestService.with { svc in
            let get = try await svc.gdbus("org.freedesktop.DBus.Properties.Get", ["'org.tocsin.Test'", "'Volume'"])
            #expect(get.stdoutText == "(<7>,)\n", "\(get.stderrText)")
            let set = try await svc.busctl(["set-property", testName.rawValue, testPath.rawValue, testInterface.rawValue, "Volume", "i", "11"])
            #expect(set.status == .exited(0), "\(set.stderrText)")
            let all = try await svc.gdbus("org.freedesktop.DBus.Properties.GetAll", ["'org.tocsin.Test'"])
            #expect(all.stdoutText == "({'Name': <'tocsin'>, 'Volume': <11>},)\n", "\(all.stderrText)")
            let readOnly = try await svc.gdbus("org.freedesktop.DBus.Properties.Set", ["'org.tocsin.Test'", "'Name'", "<'x'>"])
            #expect(readOnly.stderrText.contains("org.freedesktop.DBus.Error.PropertyReadOnly"), "\(readOnly.stderrText)")
            let wrong = try await svc.gdbus("org.freedesktop.DBus.Properties.Get", ["'org.tocsin.Test'"])
            #expect(wrong.stderrText.contains("org.freedesktop.DBus.Error.InvalidArgs"), "\(wrong.stderrText)")
            let missing = try await svc.gdbus("org.freedesktop.DBus.Properties.Get", ["'org.tocsin.Test'", "'Nope'"])
            #expect(missing.stderrText.contains("org.freedesktop.DBus.Error.UnknownProperty"), "\(missing.stderrText)")
        }
    }
}
