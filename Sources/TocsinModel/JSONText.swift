/// The one home for escaping client text on its way out: JSON string literals for the places
/// that print JSON by hand (`--json` outputs, the log backend, `tocsin watch`'s values) and the
/// same escapes, unquoted, for every line the CLI prints for people. A title is client input, and
/// a raw ESC, BEL or CSI in it would drive the reader's terminal (retitle it, clear it, fake
/// output); a bidi override would make the line read differently from what it holds.
public enum JSONText: Sendable {
    /// A JSON string literal; control characters (see `isControl`) as `\uXXXX`, so the text decodes
    /// to exactly what was sent.
    public static func quote(_ s: String) -> String {
        "\"" + escape(s, quoting: true) + "\""
    }

    /// `s` for a terminal: control characters in the JSON notation (`\u001b`, `\n`), everything
    /// else as it is. Not reversible (a backslash stays one); `--json` is the exact form.
    public static func visible(_ s: String) -> String {
        // The common case allocates nothing new.
        if !s.unicodeScalars.contains(where: isControl) { return s }
        return escape(s, quoting: false)
    }

    /// C0, DEL, C1, and the bidi embedding, override and isolate controls (U+202A–U+202E,
    /// U+2066–U+2069): what a terminal acts on or reorders instead of showing.
    public static func isControl(_ u: Unicode.Scalar) -> Bool {
        switch u.value {
        case 0..<0x20, 0x7f...0x9f, 0x202a...0x202e, 0x2066...0x2069: return true
        default: return false
        }
    }

    private static func escape(_ s: String, quoting: Bool) -> String {
        var out = ""
        for u in s.unicodeScalars {
            switch u {
            case "\"" where quoting: out += "\\\""
            case "\\" where quoting: out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                if isControl(u) {
                    let hex = String(u.value, radix: 16)
                    out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                } else {
                    out.unicodeScalars.append(u)
                }
            }
        }
        return out
    }
}
