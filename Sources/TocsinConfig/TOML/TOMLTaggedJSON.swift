/// toml-test's tagged JSON: every scalar becomes `{"type": T, "value": S}`, tables objects and
/// arrays arrays. Shared by the `toml-test-decoder` executable and the conformance tests so both
/// judge exactly the same rendering.
public enum TOMLTaggedJSON: Sendable {
    public static func encode(_ table: TOMLTable) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(1024)
        write(table, into: &out)
        out.append(UInt8(ascii: "\n"))
        return String(decoding: out, as: UTF8.self)
    }

    /// The toml-test type tag of a scalar value (nil for arrays and tables).
    public static func tag(of value: TOMLValue) -> String? {
        switch value {
        case .string: return "string"
        case .integer: return "integer"
        case .float: return "float"
        case .boolean: return "bool"
        case .dateTime(let d):
            switch (d.date != nil, d.time != nil, d.offsetMinutes != nil) {
            case (true, true, true): return "datetime"
            case (true, true, false): return "datetime-local"
            case (true, false, _): return "date-local"
            default: return "time-local"
            }
        case .array, .table: return nil
        }
    }

    /// The value as toml-test spells it: RFC 3339 date-times, `inf`/`-inf`/`nan` floats.
    public static func text(of value: TOMLValue) -> String {
        switch value {
        case .string(let s): return s
        case .integer(let i): return String(i)
        case .float(let d):
            if d.isNaN { return "nan" }
            if d.isInfinite { return d < 0 ? "-inf" : "inf" }
            return "\(d)"
        case .boolean(let b): return b ? "true" : "false"
        case .dateTime(let d): return format(d)
        case .array, .table: return ""
        }
    }

    public static func format(_ d: TOMLDateTime) -> String {
        var s = ""
        if let date = d.date {
            s += pad(date.year, 4) + "-" + pad(date.month, 2) + "-" + pad(date.day, 2)
        }
        if let time = d.time {
            if d.date != nil { s += "T" }
            s += pad(time.hour, 2) + ":" + pad(time.minute, 2) + ":" + pad(time.second, 2)
            if time.nanosecond != 0 {
                var frac = pad(time.nanosecond, 9)
                while frac.hasSuffix("0") { frac.removeLast() }
                s += "." + frac
            }
        }
        if let offset = d.offsetMinutes {
            if offset == 0 {
                s += "Z"
            } else {
                let m = abs(offset)
                s += (offset < 0 ? "-" : "+") + pad(m / 60, 2) + ":" + pad(m % 60, 2)
            }
        }
        return s
    }

    private static func pad(_ n: Int, _ width: Int) -> String {
        let digits = String(n)
        return digits.count >= width ? digits : String(repeating: "0", count: width - digits.count) + digits
    }

    private static func write(_ table: TOMLTable, into out: inout [UInt8]) {
        out.append(UInt8(ascii: "{"))
        var first = true
        for entry in table.entries {
            if !first { out.append(UInt8(ascii: ",")) }
            first = false
            writeString(entry.key, into: &out)
            out.append(UInt8(ascii: ":"))
            write(entry.node.value, into: &out)
        }
        out.append(UInt8(ascii: "}"))
    }

    private static func write(_ value: TOMLValue, into out: inout [UInt8]) {
        switch value {
        case .table(let t):
            write(t, into: &out)
        case .array(let items):
            out.append(UInt8(ascii: "["))
            for (i, item) in items.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                write(item.value, into: &out)
            }
            out.append(UInt8(ascii: "]"))
        default:
            out.append(contentsOf: "{\"type\":".utf8)
            writeString(tag(of: value) ?? "", into: &out)
            out.append(contentsOf: ",\"value\":".utf8)
            writeString(text(of: value), into: &out)
            out.append(UInt8(ascii: "}"))
        }
    }

    private static func writeString(_ s: String, into out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        for b in s.utf8 {
            switch b {
            case UInt8(ascii: "\""): out.append(contentsOf: "\\\"".utf8)
            case UInt8(ascii: "\\"): out.append(contentsOf: "\\\\".utf8)
            case UInt8(ascii: "\n"): out.append(contentsOf: "\\n".utf8)
            case UInt8(ascii: "\t"): out.append(contentsOf: "\\t".utf8)
            case UInt8(ascii: "\r"): out.append(contentsOf: "\\r".utf8)
            case 0..<0x20, 0x7F:
                out.append(contentsOf: "\\u00".utf8)
                out.append(contentsOf: tomlHexByte(b).utf8)
            default: out.append(b)
            }
        }
        out.append(UInt8(ascii: "\""))
    }
}
