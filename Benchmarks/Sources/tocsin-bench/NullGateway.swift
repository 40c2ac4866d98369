import ArgumentParser
import DBus
import Foundation
import TocsinGateway

/// `tocsin-bench null-gateway`: owns the gateway's bus name and answers `Schedule` at once with
/// the key it was given, storing nothing, on the daemon's own executor loop and hosted
/// connection. `versus` measures it with the harness's `scale` beside Tocsin and the peer: its
/// rate is the ceiling of any daemon built on Tocsin's D-Bus layer with the harness's client and
/// bus on this machine, so the distance from it to Tocsin is what the engine costs, and a goal
/// above it is out of reach of the engine.
struct NullGateway: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "null-gateway",
        abstract: "Answers Schedule at once without storing anything (the D-Bus layer's ceiling, for versus).")

    func run() async throws {
        guard let address = ProcessInfo.processInfo.environment["DBUS_SESSION_BUS_ADDRESS"] else {
            throw VersusError("DBUS_SESSION_BUS_ADDRESS is not set")
        }
        let connection = try await DBusConnection.connect(address: address, host: ExecutorLoopHost.global)
        let schedule = DBusMethod("Schedule", input: "a{sv}", output: "s") { call in
            if case .dictionary(_, _, let entries) = call.arguments[0] {
                for e in entries where e.key == .string("key") {
                    if case .variant(.string(let key)) = e.value { return [.string(key)] }
                }
            }
            return [.string("")]
        }
        try await connection.export(DBusExportedObject(interfaces: [DBusInterface(Gateway.interface, methods: [schedule])]),
                                    at: Gateway.objectPath)
        _ = try await connection.requestName(Gateway.busName)
        await connection.waitUntilDisconnected()
    }
}
