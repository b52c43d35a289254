import Profiles
import JSONDocument

/// Why a scenario was refused: the file, the JSON path and line:column, what was wrong and what was
/// expected.
///
/// `description` reads like `scenarios/bad.json: $.expectations[0].after (line 12, column 16): no step named
/// "tunel" (did you mean "tunnel"?): expected one of the steps "lte", "tunnel", "3g"`.
public struct ScenarioError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The class of the problem.
    public enum Kind: Sendable, Equatable {
        /// The file (or the profile catalog) cannot be read.
        case unreadable
        /// The file is not JSON (truncated, a stray comma, a duplicate key...).
        case syntax
        /// A required key is absent (or a step has no action).
        case missingKey
        /// A key the format does not have, usually a typo.
        case unknownKey
        /// A value of the wrong JSON type.
        case wrongType
        /// A value that is not a valid name, time or choice.
        case invalidValue
        /// A value outside its range (a `within` of 0, a failure threshold of 0, an empty step list).
        case outOfRange
        /// Keys that do not go together: two actions in one step, `"side"` beside `"apply"`, `"within"` on
        /// a `holds` rule, a grace as long as the step, a `within` longer than the rest of the run.
        case conflict
        /// A second step or expectation with a name already used.
        case duplicateName
        /// An expectation names a step the scenario does not have.
        case unknownStep
        /// An expectation names a state its lane never has.
        case unknownState
        /// A step applies a profile the catalog does not have (or a profile file that does not exist).
        case unknownProfile
        /// A step applies a profile that exists but is itself refused.
        case invalidProfile
        /// A step needs the cellular link, and the scenario does not ask for it.
        case needsCellular
    }

    /// The class of the problem.
    public var kind: Kind
    /// The scenario file (as given), or the catalog directory when the catalog cannot be read.
    public var file: String
    /// The value at fault; `nil` when the problem is the file itself.
    public var path: JSONPath?
    /// Where the value starts in the file; `nil` for a file-level problem.
    public var position: SourcePosition?
    /// What was wrong, e.g. `"12 s" is not a time`.
    public var problem: String
    /// What was expected instead.
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
