import DBus
import Testing
import TocsinGateway
import TocsinModel

/// A NUL inside an array or table of a `Schedule` spec: stored, it broke every later `Fired`
/// signal and `List` reply (libdbus refuses the string) and cut the argv and environment of exec
/// programs. The bus itself refuses such strings, but a spec also arrives from the fleet and from
/// code that builds `DBusValue`s, so the decoder refuses it, naming the field.
@Suite("Schedule specs: NUL in arrays and tables")
struct SpecDecodingNULTests {
    struct Row: Sendable, CustomTestStringConvertible {
        var name: String
        var field: String
        var value: DBusValue
        var message: String
        var testDescription: String { name }
    }

    static func table(_ key: String, _ value: String) -> DBusValue {
        .dictionary(key: .string, value: .string, [.init(.string(key), .string(value))])
    }

    static let rows: [Row] = [
        Row(name: "a user_info value", field: "user_info", value: table("k", "v\u{0}w"),
            message: "'user_info.k' must not contain a NUL character"),
        Row(name: "a user_info key", field: "user_info", value: table("k\u{0}j", "v"),
            message: "a key in 'user_info' must not contain a NUL character"),
        Row(name: "an action id", field: "actions", value: table("a\u{0}b", "label"),
            message: "a key in 'actions' must not contain a NUL character"),
        Row(name: "an action label", field: "actions", value: table("a", "la\u{0}bel"),
            message: "'actions.a' must not contain a NUL character"),
        Row(name: "a backend name", field: "backends", value: .array(.string, [.string("log"), .string("lo\u{0}g")]),
            message: "'backends' must not contain a NUL character"),
    ]

    @Test("regression: refused with InvalidArgs naming the field", arguments: rows)
    func refused(_ row: Row) {
        let spec = DBusValue.vardict([("title", .string("x")), ("after", .string("1h")), (row.field, row.value)])
        do {
            let decoded = try SpecDecoding.decode(spec, requireTrigger: true)
            Issue.record("row '\(row.name)': accepted as \(decoded)")
        } catch {
            #expect(error.code == .invalidArgs, "row '\(row.name)': \(error)")
            #expect(error.message == row.message, "row '\(row.name)': \(error.message)")
        }
    }

    @Test("the same tables without the NUL are accepted")
    func accepted() throws {
        let spec = DBusValue.vardict([("title", .string("x")), ("after", .string("1h")),
                                      ("user_info", Self.table("k", "vw")), ("actions", Self.table("a", "label"))])
        let decoded = try SpecDecoding.decode(spec, requireTrigger: true)
        #expect(decoded.userInfo == ["k": "vw"])
        #expect(decoded.actions.map(\.label) == ["label"])
    }
}
