/// "Did you mean" for misspelt names: the closest candidate within a small edit distance.
///
/// Client input reaches it (an unknown `Schedule` field, a `History` filter key, a backend name,
/// a config key), and it runs on the daemon's one loop thread, so its cost is bounded by the
/// candidates, never by the word: a word longer than every candidate by more than the largest
/// distance accepted is no typo of any and is not compared at all, and a comparison keeps three
/// rows of the distance table (not the whole table) and stops once a row is past the limit.
public enum Suggestion: Sendable {
    /// The largest edit distance ever suggested (a long word allows up to this many typos).
    static let maxDistance = 3

    public static func closest(to word: String, among candidates: [String]) -> String? {
        search(word, among: candidates).match
    }

    /// The suggestion and how many cells of distance tables were computed for it (for tests:
    /// the work is bounded by the candidates' lengths, whatever the word).
    static func search(_ word: String, among candidates: [String]) -> (match: String?, cells: Int) {
        let targets = candidates.map { Array($0.unicodeScalars) }
        let longest = targets.map(\.count).max() ?? 0
        // Read at most one scalar past the longest useful length: a longer word is too far from all.
        var head = ""
        var read = 0
        for scalar in word.unicodeScalars {
            if read > longest + maxDistance { return (nil, 0) }
            head.unicodeScalars.append(scalar)
            read += 1
        }
        let a = Array(head.lowercased().unicodeScalars)
        let limit = max(1, min(maxDistance, head.count / 3 + 1))
        var best: (String, Int)?
        var cells = 0
        for (c, b) in zip(candidates, targets) where abs(a.count - b.count) <= limit {
            let d = distance(a, b, limit: limit, cells: &cells)
            if d <= limit, d < (best?.1 ?? .max) { best = (c, d) }
        }
        return (best?.0, cells)
    }

    /// Damerau–Levenshtein (optimal string alignment): a swapped pair of letters is one typo.
    /// Returns `limit + 1` as soon as the distance is known to exceed `limit`.
    static func distance(_ a: [Unicode.Scalar], _ b: [Unicode.Scalar], limit: Int, cells: inout Int) -> Int {
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        // Rows i-2, i-1 and i of the table; O(|b|) memory.
        var older = [Int](repeating: 0, count: b.count + 1)
        var previous = Array(0...b.count)
        var current = [Int](repeating: 0, count: b.count + 1)
        var previousMin = 0
        for i in 1...a.count {
            current[0] = i
            var rowMin = i
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                var v = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] { v = min(v, older[j - 2] + 1) }
                current[j] = v
                rowMin = min(rowMin, v)
            }
            cells += b.count
            // Every later cell grows from this row or (by a transposition) the one before it.
            if rowMin > limit, previousMin > limit { return limit + 1 }
            previousMin = rowMin
            (older, previous, current) = (previous, current, older)
        }
        return previous[b.count]
    }
}

/// Client text quoted back in an error message, cut to a readable length: a 100 MB name must not
/// come back as a 100 MB message (nor be logged whole).
public enum Echo: Sendable {
    /// Characters kept; the cut is marked with "…".
    public static let maxCharacters = 64

    /// Counted in Unicode scalars, not characters: one character can hold millions of combining
    /// marks, and finding where it ends would walk them all.
    public static func capped(_ text: String) -> String {
        let scalars = text.unicodeScalars
        guard let end = scalars.index(scalars.startIndex, offsetBy: maxCharacters, limitedBy: scalars.endIndex),
              end != scalars.endIndex else { return text }
        return String(scalars[..<end]) + "…"
    }
}
