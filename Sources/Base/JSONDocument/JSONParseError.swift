/// Why a text is not JSON: where, what was found there, and what was expected instead.
///
/// `description` reads like `unexpected end of file at line 12, column 3: expected '}' to close the
/// object opened at line 1, column 1`.
public struct JSONParseError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The class of the problem.
    public enum Kind: Sendable, Equatable {
        /// The text ends inside a value, or is empty.
        case unexpectedEndOfFile
        /// A character (or word) that cannot stand where it is, including text after the value.
        case unexpectedCharacter
        /// A string with a bad escape, a lone surrogate, a raw control character or invalid UTF-8.
        case invalidString
        /// A number that RFC 8259 does not allow (leading zero, missing digits) or that is too large.
        case invalidNumber
        /// An object that has the same key twice.
        case duplicateKey
        /// Objects and arrays nested deeper than the parser allows.
        case tooDeep
    }

    /// The class of the problem.
    public var kind: Kind
    /// Where the problem is.
    public var position: SourcePosition
    /// The value the parser was inside (for a duplicate key, the key's own path).
    public var path: JSONPath
    /// What was found, e.g. `unexpected end of file`, `unexpected character ','`.
    public var found: String
    /// What was expected instead, e.g. `'}' to close the object opened at line 1, column 1`.
    public var expected: String

    /// A parse error; the parser makes these.
    public init(kind: Kind, position: SourcePosition, path: JSONPath, found: String, expected: String) {
        self.kind = kind
        self.position = position
        self.path = path
        self.found = found
        self.expected = expected
    }

    public var description: String { "\(found) at \(position): expected \(expected)" }
}
