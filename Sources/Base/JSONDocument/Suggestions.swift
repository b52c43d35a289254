/// "Did you mean" suggestions by edit distance.
public enum Suggestions {
    /// The optimal-string-alignment distance between `a` and `b`: the fewest insertions, deletions,
    /// substitutions and swaps of adjacent characters that turn one into the other (`dealy` → `delay`
    /// is 1).
    public static func editDistance(_ a: String, _ b: String) -> Int {
        let a = Array(a)
        let b = Array(b)
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var table = [[Int]](repeating: [Int](repeating: 0, count: b.count + 1), count: a.count + 1)
        for i in 0...a.count { table[i][0] = i }
        for j in 0...b.count { table[0][j] = j }
        for i in 1...a.count {
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                var best = min(table[i - 1][j] + 1, table[i][j - 1] + 1, table[i - 1][j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
                    best = min(best, table[i - 2][j - 2] + 1)
                }
                table[i][j] = best
            }
        }
        return table[a.count][b.count]
    }

    /// The candidate nearest to `word`, if it is near enough to be a typo of it: at most 1 edit for
    /// words of up to 3 characters, 2 up to 6, 3 beyond. Case is ignored (`Delay` → `delay`); ties
    /// go to the earlier candidate.
    public static func closest(to word: String, in candidates: [String]) -> String? {
        let tolerance =
            switch word.count {
            case ...3: 1
            case 4...6: 2
            default: 3
            }
        var best: (candidate: String, distance: Int)?
        for candidate in candidates {
            let distance = editDistance(word.lowercased(), candidate.lowercased())
            if distance <= tolerance, distance < best?.distance ?? .max {
                best = (candidate, distance)
            }
        }
        return best?.candidate
    }
}

extension Suggestions {
    /// ` (did you mean "delay"?)` for the candidate nearest to `word` (or the candidate `aliases` gives for
    /// the lowercased word), or `""` when none is near enough.
    public static func didYouMean(_ word: String, in candidates: [String], aliases: [String: String] = [:]) -> String {
        guard let suggestion = aliases[word.lowercased()] ?? closest(to: word, in: candidates) else { return "" }
        return " (did you mean \(JSONWriter.quoted(suggestion))?)"
    }

    /// The choices for a message: `"a"`, `"a" or "b"`, `one of "a", "b", "c"`.
    public static func alternatives(_ choices: [String]) -> String {
        let quoted = choices.map(JSONWriter.quoted)
        switch quoted.count {
        case 1: return quoted[0]
        case 2: return quoted[0] + " or " + quoted[1]
        default: return "one of " + quoted.joined(separator: ", ")
        }
    }
}
