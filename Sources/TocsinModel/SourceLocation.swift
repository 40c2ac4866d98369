/// A position in a source text. Lines and columns are 1-based; columns count Unicode scalars,
/// so a caret printed under the column lines up for the text a user sees.
public struct SourceLocation: Hashable, Comparable, Sendable, CustomStringConvertible {
    public var line: Int
    public var column: Int
    public init(line: Int, column: Int) { self.line = line; self.column = column }
    public static func < (a: SourceLocation, b: SourceLocation) -> Bool {
        (a.line, a.column) < (b.line, b.column)
    }
    public var description: String { "\(line):\(column)" }
}
