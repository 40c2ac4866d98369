public import TocsinModel

/// Where a character of a string value's decoded text is written in the source.
///
/// A parser of a value's text (a duration, a calendar expression) reports a column in that text;
/// the value's opening quote plus that column is where it is in the file only for a one-line
/// string without escapes. An escape (`\u0031` is one character written as six), a line-ending
/// backslash and a multi-line string's line breaks move it. Found on the error path only, by
/// scanning the value again, so the parser keeps no positions for the characters of every string.
public enum TOMLStringPositions: Sendable {
    typealias ASCII = TOMLParser.ASCII

    /// The position of character `column` (1-based, in Unicode scalars) of the decoded text of the
    /// string value whose opening quote is at `open` in `source`, a document that parsed; one past
    /// the last character is the closing quote. Nil when `open` is not at a string's opening quote.
    static func location(ofCharacter column: Int, inStringAt open: SourceLocation,
                                source: [UInt8]) -> SourceLocation? {
        source.withUnsafeBufferPointer { location(ofCharacter: column, inStringAt: open, source: $0) }
    }

    /// `location(ofCharacter:inStringAt:source:)` when the document is at hand and `open` is a
    /// string's opening quote in it; else the opening quote plus `column` (exact for a one-line
    /// string without escapes). `column` 0 or less: the value itself.
    public static func place(ofCharacter column: Int, inStringAt open: SourceLocation, source: [UInt8]?) -> SourceLocation {
        guard column > 0 else { return open }
        return source.flatMap { location(ofCharacter: column, inStringAt: open, source: $0) }
            ?? SourceLocation(line: open.line, column: open.column + column)
    }

    private static func location(ofCharacter column: Int, inStringAt open: SourceLocation,
                                 source: UnsafeBufferPointer<UInt8>) -> SourceLocation? {
        guard column > 0, var p = offset(of: open, in: source), p < source.count else { return nil }
        let quote = source[p]
        guard quote == ASCII.quote || quote == ASCII.apostrophe else { return nil }
        let basic = quote == ASCII.quote
        let multiline = p + 2 < source.count && source[p + 1] == quote && source[p + 2] == quote
        var line = open.line, col = open.column
        func advance(_ bytes: Int) { p += bytes; col += bytes }  // ASCII only
        func newline(_ bytes: Int) { p += bytes; line += 1; col = 1 }
        func lineBreak(at i: Int) -> Int? {
            if i < source.count, source[i] == ASCII.lf { return 1 }
            if i + 1 < source.count, source[i] == ASCII.cr, source[i + 1] == ASCII.lf { return 2 }
            return nil
        }
        advance(multiline ? 3 : 1)
        if multiline, let n = lineBreak(at: p) { newline(n) }  // trimmed, as TOML says
        var character = 1
        while p < source.count {
            let b = source[p]
            if basic, multiline, b == ASCII.backslash, let n = tomlLineEndingBackslash(source, from: p + 1, end: source.count) {
                // The backslash, the rest of the line and the blank space after it decode to nothing.
                advance(n - p)
                while p < source.count {
                    if let n = lineBreak(at: p) { newline(n) } else if source[p] == ASCII.space || source[p] == ASCII.tab { advance(1) } else { break }
                }
                continue
            }
            if multiline, b == quote {
                var run = 1
                while p + run < source.count, source[p + run] == quote { run += 1 }
                if run >= 3 {
                    // Three close the string; up to two before them belong to it.
                    return column - character <= run - 3 ? SourceLocation(line: line, column: col + column - character) : nil
                }
            }
            if character == column { return SourceLocation(line: line, column: col) }
            character += 1
            if basic, b == ASCII.backslash {
                let e = p + 1 < source.count ? source[p + 1] : 0
                advance(e == UInt8(ascii: "u") ? 6 : e == UInt8(ascii: "U") ? 10 : e == UInt8(ascii: "x") ? 4 : 2)
            } else if multiline, let n = lineBreak(at: p) {
                newline(n)
            } else if !multiline, b == quote {
                return nil  // past the closing quote
            } else {
                // One character: a lead byte and its continuation bytes, one column.
                p += 1
                while p < source.count, source[p] & 0xC0 == 0x80 { p += 1 }
                col += 1
            }
        }
        return nil
    }

    /// The offset of `location` (line and column in Unicode scalars, as the parser counts them:
    /// a byte order mark at the start is no column).
    private static func offset(of location: SourceLocation, in source: UnsafeBufferPointer<UInt8>) -> Int? {
        var p = 0, line = 1
        while line < location.line {
            while p < source.count, source[p] != ASCII.lf { p += 1 }
            guard p < source.count else { return nil }
            p += 1
            line += 1
        }
        if p == 0, source.count >= 3, source[0] == 0xEF, source[1] == 0xBB, source[2] == 0xBF { p = 3 }
        var col = 1
        while col < location.column, p < source.count {
            p += 1
            while p < source.count, source[p] & 0xC0 == 0x80 { p += 1 }
            col += 1
        }
        return col == location.column ? p : nil
    }
}
