import DBus
import Testing

/// The direct writer must produce exactly what the `DBusValue` path produces, and refuse what
/// D-Bus cannot carry before libdbus sees it.
@Suite("Argument writer")
struct ArgumentWriterTests {
    @Test("a key and an a{sv} written directly read back equal to the DBusValue form")
    func sameAsValues() throws {
        let message = try DBusMessage.signal(path: "/a", interface: "io.example.I", member: "Fired") { w in
            w.string("k")
            w.vardict { d in
                d.string("title", "Tea ☕")
                d.int64("due", -5)
                d.uint32("n", 7)
                d.boolean("late", true)
                d.strings("backends", ["a", "b"])
                d.stringPairs("user_info", [("x", "1"), ("y", "")])
                d.strings("none", [])
            }
        }
        let expected: [DBusValue] = [
            .string("k"),
            .vardict([("title", .string("Tea ☕")), ("due", .int64(-5)), ("n", .uint32(7)), ("late", .boolean(true)),
                      ("backends", .array(.string, [.string("a"), .string("b")])),
                      ("user_info", .dictionary(key: .string, value: .string, [.init(.string("x"), .string("1")), .init(.string("y"), .string(""))])),
                      ("none", .array(.string, []))]),
        ]
        #expect(try message.arguments() == expected)
        #expect(message.signature.description == "sa{sv}")
    }

    @Test("a NUL byte anywhere is refused with an error, never handed to libdbus",
          arguments: ["key", "title", "backend", "info-key", "info-value"])
    func nulRefused(place: String) {
        let bad = "a\u{0}b"
        #expect(throws: DBusError.self, "NUL in \(place)") {
            _ = try DBusMessage.signal(path: "/a", interface: "io.example.I", member: "Fired") { w in
                w.string(place == "key" ? bad : "k")
                w.vardict { d in
                    d.string("title", place == "title" ? bad : "t")
                    d.strings("backends", [place == "backend" ? bad : "b"])
                    d.stringPairs("user_info", [(place == "info-key" ? bad : "x", place == "info-value" ? bad : "1")])
                }
            }
        }
    }
}
