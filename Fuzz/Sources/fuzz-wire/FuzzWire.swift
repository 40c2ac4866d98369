import DBus
import FuzzSupport

/// Arguments of every shape the builder makes, marshalled by libdbus into a message, must read
/// back as they went in: received bodies are read from the wire bytes (`WireReader`), with
/// libdbus's iterator as the fallback, and a wrong reading would hand a handler other values
/// than the caller sent. Doubles compare by bit pattern (NaN is not equal to itself); values
/// carrying a file descriptor are left out (a received one is a new descriptor).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    var builder = DBusValueBuilder(fuzzBytes(data, size), fieldNames: ["key", "title", "a", ""], exampleStrings: ["x", "grüß", ""])
    var values: [DBusValue] = []
    for _ in 0...builder.cursor.below(4) { values.append(builder.anyValue()) }
    guard !values.contains(where: carriesFD),
          let message = try? DBusMessage.methodCall(destination: "org.tocsin.Fuzz", path: "/f", interface: "org.tocsin.Fuzz",
                                                   member: "M", arguments: values) else { return 0 }
    do {
        let read = try message.arguments()
        if read.count != values.count || !zip(read, values).allSatisfy(same) {
            fuzzFailure("read back \(read), sent \(values)")
        }
    } catch {
        fuzzFailure("a body libdbus marshalled did not read back: \(error)")
    }
    return 0
}

func carriesFD(_ v: DBusValue) -> Bool {
    switch v {
    case .unixFD: true
    case .array(_, let items), .structure(let items): items.contains(where: carriesFD)
    case .dictionary(_, _, let entries): entries.contains { carriesFD($0.key) || carriesFD($0.value) }
    case .variant(let inner): carriesFD(inner)
    default: false
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
