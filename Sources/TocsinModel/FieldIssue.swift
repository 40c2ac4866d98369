/// A problem with one field of a table, located at the key or value it concerns.
/// The config file renders it as `file:line:column`; the D-Bus API renders it as `field 'x': ...`.
public struct FieldIssue: Error, Hashable, Sendable, CustomStringConvertible {
    public var field: String
    public var location: SourceLocation
    public var message: String
    /// For a string a TocsinTime parser refused: the 1-based column of the problem inside the
    /// value. A file reports it through `location`; a surface without positions (D-Bus) has only
    /// the message, so `messageWithValueColumn` spells it out.
    public var valueColumn: Int?
    public init(field: String, location: SourceLocation, message: String) {
        self.field = field; self.location = location; self.message = message
    }
    public var description: String { message }

    /// `message`, plus where in the value the problem is when that is known.
    public var messageWithValueColumn: String {
        valueColumn.map { "\(message) (column \($0) of the value)" } ?? message
    }
}
