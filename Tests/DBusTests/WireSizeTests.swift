import Testing
@testable import DBus
import TocsinTesting

/// `DBusWireSize` predicts a body's length from values, so a reply the bus would refuse is
/// never sent; here against what libdbus actually marshals, and on a bus.
@Suite("Wire size and the outgoing message limit")
struct WireSizeTests {
    struct Row: Sendable, CustomTestStringConvertible {
        var name: String
        var values: [DBusValue]
        var testDescription: String { name }
    }

    static let rows: [Row] = [
        Row(name: "basic types in a row (every alignment)", values: [
            .byte(1), .boolean(true), .byte(2), .int16(-3), .byte(4), .int64(5), .uint16(6), .double(7.5), .uint32(8),
            .string("naïve"), .objectPath("/a/b"), .signature(DBusSignature("a{sv}")), .uint64(9), .int32(-10)]),
        Row(name: "empty arrays still pad to their element", values: [.byte(0), .array(.int64, []), .byte(0), .array(.structure([.int32]), [])]),
        Row(name: "a List page", values: [.array(.dictionary(key: .string, value: .variant), [
            .vardict([("key", .string("k1")), ("next_fire", .int64(1_795_391_880_000_000)), ("backends", .array(.string, [.string("log")])),
                      ("user_info", .dictionary(key: .string, value: .string, [.init(.string("a"), .string("b"))])), ("rings", .uint32(2))]),
            .vardict([("key", .string("k2")), ("title", .string(String(repeating: "t", count: 333)))]),
        ]), .string("k2")]),
        Row(name: "structs, variants of containers, nested arrays", values: [
            .structure([.byte(1), .variant(.array(.int64, [.int64(1), .int64(2)])), .array(.array(.byte), [.array(.byte, [.byte(1)])])]),
            .variant(.structure([.string("x"), .double(1)])), .dictionary(key: .int64, value: .byte, [.init(.int64(1), .byte(2))])]),
    ]

    @Test(arguments: rows)
    func predictedBodyEqualsMarshalled(_ row: Row) throws {
        let message = try DBusMessage.signal(path: "/a", interface: "io.example.I", member: "S", arguments: row.values)
        #expect(DBusWireSize.body(row.values).bytes == message.marshalledBodyLength, "row '\(row.name)'")
    }

    @Test("a page filler's per-entry sizes add up to the body")
    func sizesAddUp() {
        let entries: [DBusValue] = (0..<5).map { .vardict([("key", .string("k\($0)")), ("x", .int64(Int64($0)))]) }
        var used = 0
        for e in entries { used += DBusWireSize.size(of: e, at: 4 + used) }
        #expect(4 + used == DBusWireSize.body([.array(.dictionary(key: .string, value: .variant), entries)]).bytes)
    }

    @Test("an error text too long for the bus is cut to fit, on a character boundary")
    func errorTextCut() {
        let e = DBusError(.failed, String(repeating: "ü", count: 1 << 20)).fitting(1 << 20)
        #expect(e.message.utf8.count < (1 << 20) - DBusWireSize.headerAllowance)
        #expect(e.message.hasSuffix("more bytes cut)"))
        #expect(DBusError(.failed, "short").fitting(1 << 20).message == "short")
    }

    @Test("a reply over the connection's limit is answered with LimitsExceeded; the connection stays")
    func replyOverTheLimitIsRefused() async throws {
        try await TestService.with { svc in
            svc.server.maxMessageSize = 1 << 20
            let big = try await svc.gdbus("org.tocsin.Test.Big", ["uint32 \(2 << 20)"])
            #expect(big.status != .exited(0))
            #expect(big.stderrText.contains("org.freedesktop.DBus.Error.LimitsExceeded"), "\(big.stderrText)")
            #expect(big.stderrText.contains("reply of Big is too large"), "\(big.stderrText)")
            let small = try await svc.gdbus("org.tocsin.Test.Big", ["uint32 1000"])
            #expect(small.status == .exited(0), "the connection is still up: \(small.stderrText)")
            #expect(throws: DBusError.self) {
                try svc.server.emit(path: testPath, interface: testInterface, member: "Rang",
                                    arguments: [.string(String(repeating: "x", count: 2 << 20)), .vardict([])])
            }
            #expect(svc.server.isConnected)
        }
    }
}
