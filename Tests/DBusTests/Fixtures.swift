import DBus
import Synchronization
import TocsinTesting
import TocsinModel

let testName: BusName = "org.tocsin.Test"
let testPath: ObjectPath = "/org/tocsin/Test"
let testInterface: InterfaceName = "org.tocsin.Test"

/// Properties of the test object: `Volume` (i, readwrite) and `Name` (s, read).
final class TestProperties: DBusPropertyProvider {
    let volume = Mutex<Int32>(7)

    func get(interface: InterfaceName, name: String) async throws -> DBusValue {
        guard interface == testInterface else { throw DBusError(.unknownInterface, "no interface \(interface)") }
        switch name {
        case "Volume": return .int32(volume.withLock { $0 })
        case "Name": return .string("tocsin")
        default: throw DBusError(.unknownProperty, "no property \(name)")
        }
    }

    func getAll(interface: InterfaceName) async throws -> [String: DBusValue] {
        guard interface == testInterface else { throw DBusError(.unknownInterface, "no interface \(interface)") }
        return ["Volume": .int32(volume.withLock { $0 }), "Name": .string("tocsin")]
    }

    func set(interface: InterfaceName, name: String, value: DBusValue) async throws {
        guard interface == testInterface, name == "Volume" else {
            throw DBusError(.propertyReadOnly, "\(name) cannot be set")
        }
        let v = try value.asInt32()
        volume.withLock { $0 = v }
    }
}

/// A private bus plus our service on it, exporting the test object under `testName`.
struct TestService {
    let bus: PrivateBus
    let server: DBusConnection
    /// Arguments of every Echo call, in arrival order.
    let echoed: WaitableState<[[DBusValue]]>
    /// Number of Gate calls waiting; each waits until `gateTarget` have arrived.
    let gate: WaitableState<Int>
    let properties: TestProperties

    static func interface(echoed: WaitableState<[[DBusValue]]>, gate: WaitableState<Int>, gateTarget: Int) -> DBusInterface {
        DBusInterface(
            testInterface,
            methods: [
                DBusMethod("Echo", checksSignature: false) { call in
                    echoed.update { $0.append(call.arguments) }
                    return call.arguments
                },
                DBusMethod("Add", input: "ii", output: "i") { call in
                    let (a, b) = (try call.arguments[0].asInt32(), try call.arguments[1].asInt32())
                    return [.int32(a &+ b)]
                },
                DBusMethod("Big", input: "u", output: "s") { call in
                    let n = Int(min(try call.arguments[0].asUInt32(), 8 << 20))
                    return [.string(String(repeating: "x", count: n))]
                },
                DBusMethod("Length", input: "s", output: "u") { call in
                    [.uint32(UInt32(try call.arguments[0].asString().utf8.count))]
                },
                DBusMethod("Fail", input: "", output: "") { _ in
                    throw DBusError(.accessDenied, "the test object says no")
                },
                DBusMethod("Crash", input: "", output: "") { _ in
                    struct NotADBusError: Error {}
                    throw NotADBusError()
                },
                DBusMethod("BadReply", input: "", output: "s") { _ in [.string("nul\0reply")] },
                DBusMethod("Gate", input: "i", output: "i") { call in
                    let n = try call.arguments[0].asInt32()
                    gate.update { $0 += 1 }
                    try await gate.wait("\(gateTarget) concurrent Gate calls", timeout: .seconds(60)) { $0 >= gateTarget }
                    return [.int32(n)]
                },
                DBusMethod("Hang", input: "", output: "") { _ in
                    // Never answers on its own; ended by the caller's timeout or the test's end.
                    try await WaitableState(false).wait("forever", timeout: .seconds(30)) { $0 }
                    return []
                },
            ],
            signals: [DBusSignalDeclaration("Rang", signature: "sa{sv}")],
            properties: [
                DBusPropertyDeclaration("Volume", type: .int32, access: .readwrite),
                DBusPropertyDeclaration("Name", type: .string),
            ])
    }

    static func start(gateTarget: Int = 50) async throws -> TestService {
        let bus = try await PrivateBus.start()
        do {
            let server = try await DBusConnection.connect(address: bus.address)
            let echoed = WaitableState<[[DBusValue]]>([])
            let gate = WaitableState(0)
            let properties = TestProperties()
            try await server.export(
                DBusExportedObject(
                    interfaces: [interface(echoed: echoed, gate: gate, gateTarget: gateTarget)], properties: properties),
                at: testPath)
            try await server.requestName(testName)
            return TestService(bus: bus, server: server, echoed: echoed, gate: gate, properties: properties)
        } catch {
            await bus.stop()
            throw error
        }
    }

    func stop() async {
        server.close()
        await server.waitUntilDisconnected()
        await bus.stop()
    }

    /// Runs `body` against a fresh service and always tears it down.
    static func with(gateTarget: Int = 50, _ body: (TestService) async throws -> Void) async throws {
        let service = try await start(gateTarget: gateTarget)
        do {
            try await body(service)
        } catch {
            await service.stop()
            throw error
        }
        await service.stop()
    }

    /// `gdbus call` on our object; returns (status, stdout, stderr).
    func gdbus(_ method: String, _ args: [String] = [], object: String? = nil) async throws -> TestProcess.Output {
        try await TestProcess.run(
            "gdbus",
            ["call", "--address", bus.address, "--dest", testName.rawValue, "--object-path", object ?? testPath.rawValue,
             "--method", method] + args,
            timeout: .seconds(60))
    }

    func busctl(_ args: [String]) async throws -> TestProcess.Output {
        try await TestProcess.run("busctl", ["--address=\(bus.address)"] + args, timeout: .seconds(60))
    }

    func dbusSend(_ args: [String]) async throws -> TestProcess.Output {
        try await TestProcess.run("dbus-send", ["--bus=\(bus.address)"] + args, timeout: .seconds(60))
    }
}
