/// Why a well-formed JSON document does not have the shape a reader expects: where (JSON path, line and
/// column), what was wrong and what was expected.
///
/// `description` reads like `$.downlink.dealy (line 4, column 5): unknown key "dealy" (did you mean
/// "delay"?): expected one of "rate", "delay", "jitter"`.
public struct JSONReadError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The class of the problem.
    public enum Kind: Sendable, Equatable {
        /// A value of the wrong JSON type (a number where a string belongs).
        case wrongType
        /// A required key is absent.
        case missingKey
        /// A key the reader does not know (often a typo).
        case unknownKey
        /// A value of the right type that is not acceptable; the reader's caller says why.
        case invalidValue
    }

    /// The class of the problem.
    public var kind: Kind
    /// The value (or key) at fault.
    public var path: JSONPath
    /// Where it starts: the key's position for an unknown key, the object's for a missing one.
    public var position: SourcePosition
    /// What was wrong, e.g. `found the number 400`.
    public var problem: String
    /// What was expected, e.g. `a time as a string, such as "400ms"`.
    public var expected: String

    /// An error at `path`.
    public init(kind: Kind, path: JSONPath, position: SourcePosition, problem: String, expected: String) {
        self.kind = kind
        self.path = path
        self.position = position
        self.problem = problem
        self.expected = expected
    }

    public var description: String { "\(path) (\(position)): \(problem): expected \(expected)" }
}
