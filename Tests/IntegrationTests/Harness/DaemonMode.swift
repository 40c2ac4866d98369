import Testing

/// How a harness test reaches the daemon. The body sees the same `GatewayClient` in each.
enum DaemonMode: String, Sendable, CaseIterable, CustomTestStringConvertible {
    /// The daemon library in this process, on a private bus and a virtual clock.
    case inProcess = "in-process on a private bus"
    /// The daemon library in this process serving one peer over a `DBusServer` socket, no bus
    /// daemon between: what is left when the bus's routing and name ownership are taken away.
    case peerToPeer = "in-process, peer-to-peer"
    /// The built `tocsin daemon` on a private bus, on the real clock: the program as installed.
    case binary = "the built binary on a private bus"

    var testDescription: String { rawValue }

    /// The modes with a bus, for tests whose clients need one (gdbus, busctl, dbus-python).
    static let onABus: [DaemonMode] = [.inProcess, .binary]
}
