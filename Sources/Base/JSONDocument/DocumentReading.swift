/// An error from turning a string into a value (a quantity, a name) that knows nothing of where the
/// string was; ``JSONElement/string(expected:parse:)`` places it in the document.
public protocol DocumentValueError: Error {
    /// The class of the problem in a document.
    var documentKind: DocumentError.Kind { get }
    /// What was wrong, quoting the string: `"150ms" is not a rate`.
    var problem: String { get }
    /// What was expected instead.
    var expected: String { get }
}

/// Typed reads of a document's values: quantities and other parsed strings, choices with a did-you-mean,
/// and values written either short (a string) or in full (an object). Each failure is a ``DocumentError``
/// at this value.
extension JSONElement {
    /// The string turned into a value by `parse`. A value that is not a string is a `.wrongType` error
    /// naming `expected`; a string `parse` refuses is its error, placed at this value.
    public func string<Value, Failure: DocumentValueError>(
        expected: String, parse: (String) throws(Failure) -> Value
    ) throws(DocumentError) -> Value {
        let text = try string(expected: expected)
        do {
            return try parse(text)
        } catch {
            throw self.error(error.problem, expected: error.expected, kind: error.documentKind)
        }
    }

    /// The string, which must be one of `choices`; otherwise an `.invalidValue` error such as `"dwn" is not
    /// a link change (did you mean "down"?): expected "down" or "up"`. `aliases` map other spellings
    /// (lowercased) to the choice to suggest; `typeExpected` is the expectation for a value that is not a
    /// string (by default the list of choices).
    public func choice(
        _ choices: [String], noun: String, aliases: [String: String] = [:], typeExpected: String? = nil
    ) throws(DocumentError) -> String {
        let listed = Suggestions.alternatives(choices)
        let text = try string(expected: typeExpected ?? listed)
        if choices.contains(text) { return text }
        let problem =
            "\(JSONWriter.quoted(text)) is not \(noun)"
            + Suggestions.didYouMean(text, in: choices, aliases: aliases)
        throw error(problem, expected: listed)
    }

    /// The case of `type` whose raw value the string is; see ``choice(_:noun:aliases:typeExpected:)``.
    public func choice<Choice: RawRepresentable & CaseIterable>(
        _ type: Choice.Type, noun: String, aliases: [String: String] = [:], typeExpected: String? = nil
    ) throws(DocumentError) -> Choice where Choice.RawValue == String {
        let text = try choice(
            Choice.allCases.map(\.rawValue), noun: noun, aliases: aliases, typeExpected: typeExpected)
        return Choice(rawValue: text)!
    }

    /// A value written either short, as a string (read by `short`), or in full, as an object that may have
    /// only `keys` (read by `full`). Anything else is a `.wrongType` error naming `expected`.
    public func shortOrFull<Value>(
        expected: String, keys: [String], short: (JSONElement) throws(DocumentError) -> Value,
        full: (JSONFields) throws(DocumentError) -> Value
    ) throws(DocumentError) -> Value {
        switch value {
        case .string:
            return try short(self)
        case .object:
            return try full(try fields(keys, expected: expected))
        default:
            throw wrongType(expected: expected)
        }
    }
}
