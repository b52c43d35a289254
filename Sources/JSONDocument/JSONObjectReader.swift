/// A value of a parsed document together with its JSON path and position, for strict reading.
public struct JSONElement: Sendable {
    /// The value.
    public let value: JSONValue
    /// Where the value sits in the document.
    public let path: JSONPath
    /// Where the value starts in the text (looked up when asked for: positions are for messages).
    public var position: SourcePosition { document?.position(of: path) ?? fallback }
    /// The position when the document has none for `path` (a value not parsed from text).
    private let fallback: SourcePosition
    let document: ParsedJSON?

    /// An element of `document` (pass `nil` for a value that was not parsed from text; positions of
    /// its children are then reported as `position`).
    public init(value: JSONValue, path: JSONPath, position: SourcePosition, document: ParsedJSON?) {
        self.value = value
        self.path = path
        fallback = position
        self.document = document
    }

    /// An error about this value.
    public func error(_ problem: String, expected: String, kind: JSONReadError.Kind = .invalidValue) -> JSONReadError {
        JSONReadError(kind: kind, path: path, position: position, problem: problem, expected: expected)
    }

    /// A wrong-type error: "found the number 400: expected `expected`".
    public func wrongType(expected: String) -> JSONReadError {
        error("found \(value.summary)", expected: expected, kind: .wrongType)
    }

    /// The string; a wrong-type error naming `expected` otherwise.
    public func string(expected: String) throws(JSONReadError) -> String {
        guard case .string(let string) = value else { throw wrongType(expected: expected) }
        return string
    }

    /// The boolean; a wrong-type error naming `expected` otherwise.
    public func bool(expected: String) throws(JSONReadError) -> Bool {
        guard case .bool(let bool) = value else { throw wrongType(expected: expected) }
        return bool
    }

    /// The number; a wrong-type error naming `expected` otherwise.
    public func number(expected: String) throws(JSONReadError) -> JSONNumber {
        guard case .number(let number) = value else { throw wrongType(expected: expected) }
        return number
    }

    /// The number as an integer of type `T`, written as a plain integer (no fraction, no exponent)
    /// that fits in `T`; an error naming `expected` otherwise (`.invalidValue` for a number that is
    /// not such an integer).
    public func integer<T: FixedWidthInteger>(_ type: T.Type, expected: String) throws(JSONReadError) -> T {
        let number = try number(expected: expected)
        guard let integer = number.integer(as: T.self) else {
            let reason =
                number.value != number.value.rounded()
                ? "which is not a whole number"
                : number.literal.contains(where: { $0 == "." || $0 == "e" || $0 == "E" })
                    ? "which is not written as a plain integer" : "which is out of range"
            throw error("found the number \(number.literal), \(reason)", expected: expected)
        }
        return integer
    }

    /// The elements of an array; a wrong-type error naming `expected` otherwise.
    public func array(expected: String) throws(JSONReadError) -> [JSONElement] {
        guard case .array(let values) = value else { throw wrongType(expected: expected) }
        return values.enumerated().map { offset, value in
            child(value, path: path.appending(index: offset))
        }
    }

    /// A reader for an object; a wrong-type error naming `expected` otherwise.
    public func object(expected: String) throws(JSONReadError) -> JSONObjectReader {
        guard case .object(let members) = value else { throw wrongType(expected: expected) }
        return JSONObjectReader(element: self, members: members)
    }

    func child(_ value: JSONValue, path: JSONPath) -> JSONElement {
        // The document has every value's position; without one, children report the parent's.
        JSONElement(value: value, path: path, position: fallback, document: document)
    }

    func keyPosition(of path: JSONPath) -> SourcePosition {
        document?.keyPosition(of: path) ?? position
    }
}

/// Reads an object strictly: take the keys you know, then ``finish()`` refuses any key left over,
/// suggesting the nearest known key for a typo.
///
/// ```swift
/// var reader = try element.object(expected: "an object")
/// let delay = reader.take("delay")
/// let rate = reader.take("rate")
/// try reader.finish()   // {"dealy": ...} → unknown key "dealy" (did you mean "delay"?)
/// ```
public struct JSONObjectReader: Sendable {
    /// The object being read.
    public let element: JSONElement
    private let members: [(key: String, value: JSONValue)]
    private var known: [String] = []

    init(element: JSONElement, members: [(key: String, value: JSONValue)]) {
        self.element = element
        self.members = members
    }

    /// The object's path.
    public var path: JSONPath { element.path }

    /// The object's keys, in document order.
    public var keys: [String] { members.map(\.key) }

    /// Whether the object has `key` (does not mark it known).
    public func contains(_ key: String) -> Bool {
        members.contains { $0.key == key }
    }

    /// Marks `key` as known and returns its value, or `nil` when the object lacks it.
    public mutating func take(_ key: String) -> JSONElement? {
        if !known.contains(key) { known.append(key) }
        guard let member = members.first(where: { $0.key == key }) else { return nil }
        return element.child(member.value, path: path.appending(key))
    }

    /// Marks `key` as known and returns its value; a `.missingKey` error at the object naming
    /// `expected` when the object lacks it.
    public mutating func require(_ key: String, expected: String) throws(JSONReadError) -> JSONElement {
        guard let value = take(key) else {
            throw JSONReadError(
                kind: .missingKey, path: path, position: element.position,
                problem: "missing key \(JSONWriter.quoted(key))", expected: expected)
        }
        return value
    }

    /// Marks `keys` as known without reading them (they then count for suggestions).
    public mutating func allow(_ keys: [String]) {
        for key in keys where !known.contains(key) { known.append(key) }
    }

    /// The keys taken or allowed so far, in that order.
    public var knownKeys: [String] { known }

    /// Refuses the first key (in document order) that was neither taken nor allowed: an
    /// `.unknownKey` error at the key's position, with the nearest known key as a suggestion and the
    /// known keys as the expectation.
    public func finish() throws(JSONReadError) {
        guard let unknown = members.first(where: { !known.contains($0.key) }) else { return }
        let keyPath = path.appending(unknown.key)
        var problem = "unknown key \(JSONWriter.quoted(unknown.key))"
        if let suggestion = Suggestions.closest(to: unknown.key, in: known) {
            problem += " (did you mean \(JSONWriter.quoted(suggestion))?)"
        }
        let expected =
            switch known.count {
            case 0: "no keys in this object"
            case 1: "only the key \(JSONWriter.quoted(known[0]))"
            default: "one of " + known.map(JSONWriter.quoted).joined(separator: ", ")
            }
        throw JSONReadError(
            kind: .unknownKey, path: keyPath, position: element.keyPosition(of: keyPath), problem: problem,
            expected: expected)
    }
}
