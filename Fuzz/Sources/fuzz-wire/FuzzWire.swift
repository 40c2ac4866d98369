@_spi(Fuzz) import DBus
import FuzzSupport

/// Arguments of every shape the builder makes, marshalled by libdbus into a message, must read
/// back from the wire bytes (`WireReader`, the path of every received message) as they went in,
/// and as libdbus's iterator reads them: a wrong reading would hand a handler other values than
/// the caller sent, and a needless fallback would cost what the reader saves. Doubles compare by
/// bit pattern (NaN is not equal to itself); descriptors become integers (the reader leaves a
/// message carrying one to the iterator, which duplicates it).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    var builder = DBusValueBuilder(fuzzBytes(data, size), fieldNames: ["key", "title", "a", ""], exampleStrings: ["x", "grüß", ""])
    var values: [DBusValue] = []
    for _ in 0...builder.cursor.below(4) { values.append(withoutFDs(builder.anyValue())) }
    guard let message = try? DBusMessage.methodCall(destination: "org.tocsin.Fuzz", path: "/f", interface: "org.tocsin.Fuzz",
                                                   member: "M", arguments: values) else { return 0 }
    guard let read = message.wireArguments() else {
        fuzzFailure("the wire reader declined a body libdbus marshalled: \(values)")
    }
    if !sameList(read, values) { fuzzFailure("read back \(read), sent \(values)") }
    do {
        if !sameList(try message.arguments(), values) { fuzzFailure("arguments() differs from what was sent: \(values)") }
    } catch {
        fuzzFailure("arguments() threw \(error) for a body libdbus marshalled")
    }
    return 0
}

func withoutFDs(_ v: DBusValue) -> DBusValue {
    switch v {
    case .unixFD(let fd): .int32(fd)
    case .array(let t, let items): .array(withoutFDs(t), items.map(withoutFDs))
    case .structure(let items): .structure(items.map(withoutFDs))
    case .dictionary(let k, let t, let entries):
        .dictionary(key: withoutFDs(k), value: withoutFDs(t), entries.map { .init(withoutFDs($0.key), withoutFDs($0.value)) })
    case .variant(let inner): .variant(withoutFDs(inner))
    default: v
    }
}

func withoutFDs(_ t: DBusType) -> DBusType {
    switch t {
    case .unixFD: .int32
    case .array(let e): .array(withoutFDs(e))
    case .dictionary(let k, let v): .dictionary(key: withoutFDs(k), value: withoutFDs(v))
    case .structure(let fs): .structure(fs.map(withoutFDs))
    default: t
    }
}

func same(_ a: DBusValue, _ b: DBusValue) -> Bool {
    switch (a, b) {
    case (.double(let x), .double(let y)): return x.bitPattern == y.bitPattern
    case (.array(let t, let xs), .array(let u, let ys)): return t == u && sameList(xs, ys)
    case (.structure(let xs), .structure(let ys)): return sameList(xs, ys)
    case (.dictionary(let k, let v, let xs), .dictionary(let l, let w, let ys)):
        return k == l && v == w && xs.count == ys.count
            && zip(xs, ys).allSatisfy { same($0.key, $1.key) && same($0.value, $1.value) }
    case (.variant(let x), .variant(let y)): return same(x, y)
    default: return a == b
    }
}

func sameList(_ xs: [DBusValue], _ ys: [DBusValue]) -> Bool {
    xs.count == ys.count && zip(xs, ys).allSatisfy(same)
}

@_cdecl("fuzz_wire_main")
public func entry(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> CInt {
    runFuzzer(argc, argv)
}
