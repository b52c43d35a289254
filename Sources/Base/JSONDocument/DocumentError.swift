/// Why a document (a profile, a scenario) was refused: the file, the JSON path and line:column, what was
/// wrong and what was expected.
///
/// `description` reads like `profiles/bad.json: $.downlink.loss (line 4, column 13): "150%" is out of
/// range: expected a percentage from 0% to 100%`. Without a path it is `FILE: PROBLEM[: expected ...]`;
/// without a file (a value read in code) it starts at the path.
public struct DocumentError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The class of a problem. The JSON layer defines the classes every document shares; a format adds its
    /// own as static members in an extension (`.ambiguousUnit`, `.unknownStep`...).
    public struct Kind: Sendable, Hashable, CustomStringConvertible {
        /// The class's name, e.g. `outOfRange`; two kinds with the same name are the same kind.
        public let name: String

        /// A kind called `name`.
        public init(_ name: String) {
            self.name = name
        }

        /// The name.
        public var description: String { name }
    }

    /// The class of the problem.
    public var kind: Kind
    /// The document file (as given); empty for a document that came from no file.
    public var file: String
    /// The value at fault; `nil` when the problem is the file itself.
    public var path: JSONPath?
    /// Where the value starts in the file; `nil` for a value made in code or a file-level problem.
    public var position: SourcePosition?
    /// What was wrong, e.g. `"150%" is out of range`.
    public var problem: String
    /// What was expected instead, e.g. `a percentage from 0% to 100%`; `nil` when nothing can be said.
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

    /// A `.syntax` error in `file`: the text is not JSON.
    public init(file: String, parseError: JSONParseError) {
        self.init(
            .syntax, file: file, path: parseError.path, position: parseError.position, problem: parseError.found,
            expected: parseError.expected)
    }

    /// `FILE: $.path (line L, column C): PROBLEM: expected EXPECTED`.
    public var description: String {
        var text = file.isEmpty ? "" : file + ": "
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

extension DocumentError.Kind {
    /// The file cannot be read: it is missing, not a regular file, or too large.
    public static let unreadable = Self("unreadable")
    /// The file is not JSON (truncated, a stray comma, a duplicate key...).
    public static let syntax = Self("syntax")
    /// A required key is absent.
    public static let missingKey = Self("missingKey")
    /// A key the format does not have, usually a typo.
    public static let unknownKey = Self("unknownKey")
    /// A value of the wrong JSON type (a number where a string belongs).
    public static let wrongType = Self("wrongType")
    /// A value of the right type that is not acceptable: not a quantity, name or choice of the format.
    public static let invalidValue = Self("invalidValue")
    /// A value outside its range (`"150%"`, a queue limit of 0, an empty list).
    public static let outOfRange = Self("outOfRange")
    /// Values or keys that do not go together.
    public static let conflict = Self("conflict")
}
