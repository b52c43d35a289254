import JSONDocument

/// Why a profile was refused: the file, the JSON path and line:column, what was wrong and what was
/// expected.
///
/// `description` reads like `profiles/bad.json: $.downlink.loss (line 4, column 13): "150%" is out of
/// range: expected a percentage from 0% to 100%`.
public struct ProfileError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The class of the problem.
    public enum Kind: Sendable, Equatable {
        /// The file cannot be read.
        case unreadable
        /// The file is not JSON (truncated, a stray comma, a duplicate key...).
        case syntax
        /// A required key is absent.
        case missingKey
        /// A key the format does not have, usually a typo.
        case unknownKey
        /// A value of the wrong JSON type.
        case wrongType
        /// A value that is not a valid quantity, name or choice.
        case invalidValue
        /// A unit that can be read two ways (`kbps`, `KB/s`, a bare number).
        case ambiguousUnit
        /// A value outside its range (`"150%"`, a negative delay, a queue limit of 0).
        case outOfRange
        /// Settings that netem refuses or ignores together (reorder without delay, ecn without loss...).
        case conflict
        /// No catalog profile of that name, or no catalog.
        case notFound
    }

    /// The class of the problem.
    public var kind: Kind
    /// The profile file (as given), or the catalog directory for a name that is not in it.
    public var file: String
    /// The value at fault; `nil` when the problem is the file itself.
    public var path: JSONPath?
    /// Where the value starts in the file; `nil` for a profile made in code or a file-level problem.
    public var position: SourcePosition?
    /// What was wrong, e.g. `"150%" is out of range`.
    public var problem: String
    /// What was expected instead, e.g. `a percentage from 0% to 100%`.
    public var expected: String?

    /// An error about `file`.
    public init(
        _ kind: Kind, file: String, path: JSONPath? = nil, position: SourcePosition? = nil, problem: String,
        expected: String? = nil
    ) {
        self.kind = kind
        self.file = file
        self.path = path
        self.position = position
        self.problem = problem
        self.expected = expected
    }

    /// A syntax error in `file`.
    public init(file: String, parseError: JSONParseError) {
        self.init(
            .syntax, file: file, path: parseError.path, position: parseError.position, problem: parseError.found,
            expected: parseError.expected)
    }

    /// A shape error in `file`.
    public init(file: String, readError: JSONReadError) {
        let kind: Kind =
            switch readError.kind {
            case .wrongType: .wrongType
            case .missingKey: .missingKey
            case .unknownKey: .unknownKey
            case .invalidValue: .invalidValue
            }
        self.init(
            kind, file: file, path: readError.path, position: readError.position, problem: readError.problem,
            expected: readError.expected)
    }

    public var description: String {
        var text = file + ": "
        if let path {
            text += path.description
            if let position { text += " (\(position))" }
            text += ": "
        }
        text += problem
        if let expected { text += ": expected " + expected }
        return text
    }
}
