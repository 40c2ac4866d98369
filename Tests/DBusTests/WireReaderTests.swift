import CDBus
import Testing
@testable import DBus

/// The body read from the wire bytes (`WireReader`) against libdbus's own iterator, which it
/// replaced on the path of every received message.
@Suite("Reading a body from its wire bytes")
struct WireReaderTests {
    static let bodies: [(name: String, values: [DBusValue])] = [
        ("every type", everyType),
        ("a Schedule spec", [.vardict([("key", .string("k")), ("title", .string("Stand-up")), ("after", .string("1h")),
                                       ("urgency", .byte(2)), ("fleet", .boolean(false)),
                                       ("actions", .dictionary(key: .string, value: .string, [.init(.string("snooze"), .string("Snooze"))]))])]),
        ("variants of several letters", [.variant(.array(.string, ["a"])), .variant(.dictionary(key: .string, value: .variant, [])),
                                         .variant(.structure([.int64(-1), .variant(.signature("a{sv}"))]))]),
        ("empty containers after odd offsets", [.byte(1), .array(.int64, []), .byte(2), .dictionary(key: .string, value: .variant, []),
                                                .byte(3), .array(.structure([.byte]), []), .int16(4)]),
        ("long and non-ASCII strings", [.string(String(repeating: "ü", count: 300)), .objectPath("/a/b"), .string("")]),
        ("no arguments", []),
    ]

    static func message(_ values: [DBusValue]) throws -> DBusMessage {
        try DBusMessage.methodCall(destination: "org.tocsin.Test", path: "/t", interface: "org.tocsin.Test",
                                   member: "Echo", arguments: values)
    }

    @Test("the wire reader reads what the iterator reads", arguments: bodies.indices)
    func sameAsIterator(_ row: Int) throws {
        let (name, values) = Self.bodies[row]
        let m = try Self.message(values)
        let read = WireReader.arguments(of: m.raw, signature: m.signature)
        #expect(read == values, "\(name)")
        #expect(try m.iteratedArguments() == values, "\(name)")
        #expect(try m.arguments() == values, "\(name)")
    }

    /// A big-endian `Echo(i 42)`, written out by hand: libdbus reads it (and validates it), the
    /// wire reader declines it, and the iterator answers instead.
    @Test func bigEndianFallsBackToTheIterator() throws {
        var bytes: [UInt8] = [0x42, 1, 0, 1, 0, 0, 0, 4, 0, 0, 0, 1, 0, 0, 0, 39]    // 'B', call, body 4, serial 1
        bytes += [1, 1, 0x6f, 0, 0, 0, 0, 2, 0x2f, 0x74, 0, 0, 0, 0, 0, 0]   // PATH "/t", padded to 8
        bytes += [3, 1, 0x73, 0, 0, 0, 0, 4, 0x45, 0x63, 0x68, 0x6f, 0, 0, 0, 0] // MEMBER "Echo"
        bytes += [8, 1, 0x67, 0, 1, 0x69, 0, 0]                               // SIGNATURE "i", then padding
        bytes += [0, 0, 0, 42]
        // Byte 15, the fields' length (39): up to the signature's NUL, the two padded fields
        // before it (32 bytes) and the signature field's 7.
        var error = CDBus.DBusError()
        dbus_error_init(&error)
        defer { dbus_error_free(&error) }
        let raw = try #require(bytes.withUnsafeBufferPointer { p in
            p.withMemoryRebound(to: CChar.self) { dbus_message_demarshal($0.baseAddress, Int32($0.count), &error) }
        }, "libdbus refused the hand-written message")
        let m = DBusMessage(owning: raw)
        #expect(WireReader.arguments(of: m.raw, signature: m.signature) == nil)
        #expect(try m.arguments() == [.int32(42)])
    }
}
