import Testing
@testable import DBus
import TocsinModel

/// Every type the layer can carry, nested the ways real APIs nest them.
let everyType: [DBusValue] = [
    .byte(0xfe), .boolean(true), .int16(-2), .uint16(3), .int32(-4), .uint32(5), .int64(-6), .uint64(7),
    .double(1.5), .string("grüß"), .objectPath("/org/tocsin/x"), .signature("a{sv}"),
    .vardict([("urgent", .boolean(true)), ("count", .int32(3)), ("tags", .array(.string, ["a", "b"]))]),
    .structure([.string("s"), .int32(1), .variant(.structure([.double(2.5)]))]),
    .variant(.variant(.uint64(9))),
    .dictionary(key: .uint32, value: .array(.string), [.init(.uint32(1), .array(.string, ["x"]))]),
    .array(.byte, [.byte(0), .byte(1), .byte(255)]),
    .array(.array(.int32), [.array(.int32, [.int32(1)]), .array(.int32, [])]),
    .array(.structure([.string, .variant]), []),
]

@Suite("Marshalling without a bus")
struct MarshallingTests {
    @Test("signatures parse and print back", arguments: ["", "s", "a{sv}", "(ia(sv))", "aai", "a{oa{sa{sv}}}", "v", "h"])
    func signatureRoundTrip(_ text: String) throws {
        #expect(try DBusSignature(text).description == text)
    }

    /// Every signature the table answers, so a new entry is tested without being listed here.
    static let tableSignatures: [String] = [""] + (1..<128).map { String(UnicodeScalar(UInt8($0))) }
        .filter { DBusSignature.common($0) != nil } + DBusSignature.commonTable.map(\.0)

    @Test("signatures from the table of common ones equal what the parser makes of them", arguments: tableSignatures)
    func commonSignature(_ text: String) throws {
        let known = try #require(DBusSignature.common(text), "'\(text)' is not in the table")
        #expect(known.types == (try DBusSignature.parse(text)), "'\(text)'")
        #expect(known.description == text, "'\(text)'")
        if known.types.count == 1 {
            #expect(try DBusType(text) == known.types[0], "'\(text)'")
        } else {
            #expect(throws: DBusError.self, "'\(text)' is not a single complete type") { try DBusType(text) }
        }
    }

    @Test("the table holds the signatures of a Schedule call and every single-letter type")
    func tableCoverage() {
        #expect(Set(Self.tableSignatures) == Set(["", "y", "b", "n", "q", "i", "u", "x", "t", "d", "s", "o", "g", "h", "v",
                                                   "a{sv}", "as", "aa{sv}"]))
    }

    @Test("signatures outside the table are parsed", arguments: ["a{sa{sv}}", "(ss)", "ai", "sv", "ss", "a{ss}"])
    func uncommonSignature(_ text: String) throws {
        #expect(DBusSignature.common(text) == nil, "'\(text)'")
        #expect(try DBusSignature(text).description == text)
    }

    @Test("a signature of several types is not one type", arguments: ["ss", "su", "sa{sv}", ""])
    func notOneType(_ text: String) {
        #expect(throws: DBusError.self, "'\(text)'") { try DBusType(text) }
    }

    @Test("bad signatures are refused", arguments: ["a", "a{vs}", "(", "()", "z", "a{s}", "a{sss}", "{sv}"])
    func badSignature(_ text: String) {
        #expect(throws: DBusError.self) { try DBusSignature(text) }
    }

    @Test func deepNestingIsLimited() {
        #expect(throws: DBusError.self) { try DBusSignature(String(repeating: "a", count: 33) + "i") }
        #expect((try? DBusSignature(String(repeating: "a", count: 32) + "i")) != nil)
    }

    @Test func namesAreValidated() {
        #expect(ObjectPath(validating: "/ok/path_1") != nil)
        #expect(ObjectPath(validating: "/trailing/") == nil)
        #expect(ObjectPath(validating: "no/slash") == nil)
        #expect(ObjectPath(validating: "/a//b") == nil)
        #expect(ObjectPath(validating: "/nul\0here") == nil)
        #expect(BusName(validating: "org.tocsin.Test") != nil)
        #expect(BusName(validating: ":1.42") != nil)
        #expect(BusName(validating: "nodots") == nil)
        #expect(BusName(validating: "org..x") == nil)
        #expect(InterfaceName(validating: "org.tocsin.X") != nil)
        #expect(InterfaceName(validating: "org.tocsin.9x") == nil)
        #expect(MemberName(validating: "Ping") != nil)
        #expect(MemberName(validating: "Pi.ng") == nil)
        #expect(ErrorName(validating: "org.tocsin.Error.Bad") != nil)
        #expect(ErrorName(validating: "bad") == nil)
    }

    @Test func everyTypeSurvivesAMessage() throws {
        let m = try DBusMessage.methodCall(
            destination: "org.tocsin.Test", path: "/t", interface: "org.tocsin.Test", member: "Echo",
            arguments: everyType)
        #expect(try m.arguments() == everyType)
        #expect(m.signature == DBusSignature(everyType.map(\.type)))
    }

    @Test func invalidStringsAreRefusedNotAborted() throws {
        // libdbus would abort the process on these; we must throw instead.
        #expect(throws: DBusError.self) { try DBusValue.string(validatingUTF8: [0x61, 0xff, 0xfe]) }
        #expect(throws: DBusError.self) { try DBusValue.string(validatingUTF8: [0x61, 0x00, 0x62]) }
        #expect(try DBusValue.string(validatingUTF8: Array("ok".utf8)) == .string("ok"))
        let bad: [[DBusValue]] = [
            [.string("nul\0inside")],
            [.array(.string, [.int32(1)])],
            [.dictionary(key: .string, value: .int32, [.init(.string("k"), .string("v"))])],
            [.structure([])],
            [.vardict([("k", .string("a\0b"))])],
        ]
        for args in bad {
            #expect(throws: DBusError.self) {
                try DBusMessage.methodCall(destination: nil, path: "/t", interface: nil, member: "M", arguments: args)
            }
            #expect(throws: DBusError.self) {
                try DBusMessage.signal(path: "/t", interface: "org.tocsin.T", member: "S", arguments: args)
            }
        }
    }

    @Test func typeLimitsAreCheckedBeforeLibDBus() {
        // Built in code rather than parsed, so only validation stands between these and an abort.
        var deep: DBusValue = .int32(1)
        for _ in 0..<33 { deep = .array(deep.type, [deep]) }
        #expect(throws: DBusError.self) {
            try DBusMessage.methodCall(destination: nil, path: "/t", interface: nil, member: "M", arguments: [deep])
        }
        var variants: DBusValue = .int32(1)
        for _ in 0..<70 { variants = .variant(variants) }
        #expect(throws: DBusError.self) {
            try DBusMessage.methodCall(destination: nil, path: "/t", interface: nil, member: "M", arguments: [variants])
        }
        let longSignature = DBusSignature(Array(repeating: DBusType.int32, count: 300))
        #expect(throws: DBusError.self) {
            try DBusMessage.methodCall(destination: nil, path: "/t", interface: nil, member: "M", arguments: [.signature(longSignature)])
        }
        #expect(throws: DBusError.self) {
            try DBusMessage.methodCall(destination: nil, path: "/t", interface: nil, member: "M", arguments: [.unixFD(-1)])
        }
        let manyArgs = Array(repeating: DBusValue.int32(0), count: 256)
        #expect(throws: DBusError.self) {
            try DBusMessage.methodCall(destination: nil, path: "/t", interface: nil, member: "M", arguments: manyArgs)
        }
    }

    @Test func errorCodesAreStableNames() {
        #expect(DBusError.Code.invalidArgs.description == "org.freedesktop.DBus.Error.InvalidArgs")
        #expect(DBusError(.invalidArgs, "x").name == "org.freedesktop.DBus.Error.InvalidArgs")
        #expect(DBusError(name: "org.freedesktop.DBus.Error.UnknownMethod", message: "x").code == .unknownMethod)
        #expect(DBusError.from(CancellationError()).code == .cancelled)
        // A name outside the closed set (a peer's own error) keeps its name but has no code.
        #expect(DBusError(name: "org.example.Error.Odd", message: "x").code == nil)
    }

    @Test func matchRuleText() {
        let rule = MatchRule(interface: "org.tocsin.Test", member: "Rang", path: "/a", arguments: [0: "it's"])
        #expect(rule.description == "type='signal',interface='org.tocsin.Test',member='Rang',path='/a',arg0='it'\\''s'")
    }

    @Test func backoffIsBoundedExponential() {
        let b = Backoff(initial: .milliseconds(100), maximum: .seconds(1), multiplier: 2)
        #expect((0..<6).map { b.delay(attempt: $0) } == [
            .milliseconds(100), .milliseconds(200), .milliseconds(400), .milliseconds(800), .seconds(1), .seconds(1),
        ])
        #expect(b.delay(attempt: 10_000) == .seconds(1))
    }

    @Test func introspectionFromTables() {
        let iface = DBusInterface(
            "org.tocsin.Test",
            methods: [DBusMethod("Add", input: "ii", output: "i") { _ in [.int32(0)] }],
            signals: [DBusSignalDeclaration("Rang", signature: "s")],
            properties: [DBusPropertyDeclaration("Volume", type: .int32, access: .readwrite)])
        let xml = iface.introspectionXML
        #expect(xml.contains("<method name=\"Add\">"))
        #expect(xml.contains("<arg type=\"i\" direction=\"out\"/>"))
        #expect(xml.contains("<signal name=\"Rang\">"))
        #expect(xml.contains("<property name=\"Volume\" type=\"i\" access=\"readwrite\"/>"))
    }
}
