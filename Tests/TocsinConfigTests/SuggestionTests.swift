import Testing
@testable import TocsinConfig
@testable import TocsinModel

/// One word and the suggestion it must get.
struct SuggestionRow: Sendable, CustomTestStringConvertible {
    var word: String
    var expected: String?
    var testDescription: String { "'\(word.prefix(20))'" }
}

/// "Did you mean" answers typos, and its work is bounded by the candidates, not by the word:
/// a client's 60 MB field name must not keep the loop thread busy (regression: a full
/// edit-distance matrix of a 1 MB name blocked the daemon 3.8 s).
@Suite struct SuggestionTests {
    static let known = NotificationFields.all.map(\.name)

    @Test("typos get the closest field; unrelated and overlong words get none", arguments: [
        SuggestionRow(word: "titel", expected: "title"),
        SuggestionRow(word: "TITLE", expected: "title"),
        SuggestionRow(word: "on_calender", expected: "on_calendar"),
        SuggestionRow(word: "userinfo", expected: "user_info"),
        SuggestionRow(word: "aftr", expected: "after"),
        SuggestionRow(word: "zzzzzz", expected: nil),
        SuggestionRow(word: "", expected: nil),
        SuggestionRow(word: "on_calendarxy", expected: "on_calendar"),
        SuggestionRow(word: "on_calendar_xyzw", expected: nil),
        SuggestionRow(word: String(repeating: "z", count: 4_000_000), expected: nil),
    ])
    func suggests(_ row: SuggestionRow) {
        #expect(Suggestion.closest(to: row.word, among: Self.known) == row.expected)
    }

    @Test("a name longer than every candidate plus the largest distance is compared with none")
    func overlongNameCostsNoComparison() {
        let longest = Self.known.map(\.unicodeScalars.count).max() ?? 0
        let word = String(repeating: "z", count: longest + Suggestion.maxDistance + 1)
        #expect(Suggestion.search(word, among: Self.known).cells == 0)
        #expect(Suggestion.search(String(repeating: "z", count: 4 << 20), among: Self.known).cells == 0)
    }

    @Test("the cells computed never exceed the candidates' own tables, however long the word")
    func workIsBoundedByCandidates() {
        let longest = Self.known.map(\.unicodeScalars.count).max() ?? 0
        let bound = Self.known.map { ($0.unicodeScalars.count + Suggestion.maxDistance) * $0.unicodeScalars.count }.reduce(0, +)
        for n in 0...(longest + Suggestion.maxDistance + 2) {
            let cells = Suggestion.search(String(repeating: "e", count: n), among: Self.known).cells
            #expect(cells <= bound, "a \(n)-letter word computed \(cells) cells (bound \(bound))")
        }
    }

    @Test("a 60 MB name returns nil at once (the old matrix needed gigabytes)", .timeLimit(.minutes(1)))
    func sixtyMegabytes() {
        let word = String(repeating: "q", count: 60 << 20)
        #expect(Suggestion.closest(to: word, among: Self.known) == nil)
    }

    @Test("echoed client text is cut to 64 characters and marked")
    func echoIsCapped() {
        #expect(Echo.capped("titel") == "titel")
        #expect(Echo.capped(String(repeating: "a", count: 64)) == String(repeating: "a", count: 64))
        #expect(Echo.capped(String(repeating: "a", count: 65)) == String(repeating: "a", count: 64) + "…")
        #expect(Echo.capped(String(repeating: "é", count: 1000)) == String(repeating: "é", count: 64) + "…")
    }

    @Test("the unknown-key diagnostic for a 1 MB key names it cut short, with no suggestion")
    func hugeUnknownKeyDiagnostic() {
        let key = String(repeating: "z", count: 1 << 20)
        let toml = "[[notification]]\ntitle = \"t\"\nafter = \"1h\"\n\(key) = \"x\"\n"
        guard case .failure(let e) = ConfigLoader.load(bytes: Array(toml.utf8), file: "c.toml") else {
            Issue.record("accepted"); return
        }
        #expect(e.diagnostics.map(\.message) == ["unknown key '\(String(repeating: "z", count: 64))…' in [[notification]] #1"])
    }
}
