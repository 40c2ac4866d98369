import Testing
import TocsinConfig
import TocsinModel

@Suite("Notification keys: printable, no spaces")
struct KeyValidationTests {
    struct Row: Sendable, CustomTestStringConvertible {
        var name: String
        var key: String
        /// nil: accepted; else a fragment of the refusal.
        var refusal: String?
        var testDescription: String { name }
    }

    @Test("each key is accepted or refused naming the character", arguments: [
        Row(name: "ASCII", key: "tea-1.x_y", refusal: nil),
        Row(name: "accented letters", key: "café", refusal: nil),
        Row(name: "CJK", key: "日本", refusal: nil),
        Row(name: "emoji", key: "alarm🎉", refusal: nil),
        Row(name: "ASCII space", key: "a b", refusal: "U+0020 at character 2 is a space"),
        Row(name: "ASCII tab", key: "standup\t2", refusal: "U+0009 at character 8 is a control character"),
        Row(name: "DEL", key: "\u{7F}x", refusal: "U+007F at character 1 is a control character"),
        Row(name: "ZWJ emoji sequence", key: "\u{1F469}\u{200D}\u{1F4BB}-standup", refusal: nil),
        Row(name: "Persian word with ZWNJ", key: "\u{0645}\u{06CC}\u{200C}\u{062E}\u{0648}\u{0627}\u{0647}\u{0645}", refusal: nil),
        Row(name: "private use U+E000", key: "a\u{E000}", refusal: nil),
        Row(name: "regression: right-to-left override U+202E", key: "ab\u{202E}c", refusal: "U+202E at character 3 is a bidi control"),
        Row(name: "left-to-right mark U+200E", key: "a\u{200E}", refusal: "U+200E at character 2 is a bidi control"),
        Row(name: "regression: zero-width space U+200B", key: "a\u{200B}", refusal: "U+200B at character 2 is an invisible character"),
        Row(name: "tag character U+E0041", key: "a\u{E0041}", refusal: "U+E0041 at character 2 is an invisible tag character"),
        Row(name: "regression: no-break space U+00A0", key: "a\u{00A0}b", refusal: "U+00A0 at character 2 is a space or separator"),
        Row(name: "regression: line separator U+2028", key: "a\u{2028}b", refusal: "U+2028 at character 2 is a space or separator"),
        Row(name: "byte-order mark U+FEFF", key: "\u{FEFF}a", refusal: "U+FEFF at character 1 is an invisible character"),
        Row(name: "C1 control U+0085", key: "a\u{0085}", refusal: "U+0085 at character 2 is a control character"),
    ])
    func keys(_ row: Row) {
        let problem = NotificationFields.validateKey(row.key)
        if let refusal = row.refusal {
            #expect(problem?.contains(refusal) == true, "\(row.name): \(problem ?? "accepted")")
        } else {
            #expect(problem == nil, "\(row.name): \(problem ?? "")")
        }
    }
}
