/// A value of a parsed document together with its JSON path and position, for strict reading.
///
/// Every read that fails throws a ``DocumentError`` that names the document's file, this value's path and
/// position, what was found and what was expected.
public struct JSONElement: Sendable {
    /// The value.
    public let value: JSONValue
    /// Where the value sits in the document.
    public let path: JSONPath
    /// Where the value starts in the text.
    public let position: SourcePosition
    /// The file the document came from, for errors; empty without a document.
    public let file: String
    /// Where the value's parts start, when it was parsed from text.
    let map: SourceMap?

    /// The element at `path` of `document` (pass `nil` for a value that was not parsed from text;
    /// positions of its children are then reported as `position`, and errors name no file).
    public init(value: JSONValue, path: JSONPath, position: SourcePosition, document: ParsedJSON?) {
        self.value = value
        self.path = path
        self.position = position
        self.file = document?.file ?? ""
        self.map = document?.locate(path)?.map
    }

    /// An element with its map (or, without one, at `position` with children placed there too).
    init(value: JSONValue, path: JSONPath, position: SourcePosition, file: String, map: SourceMap?) {
        self.value = value
        self.path = path
        self.position = position
        self.file = file
        self.map = map
    }

    /// An error about this value: `kind` (by default `.invalidValue`), what was wrong, what was expected.
    public func error(
        _ problem: String, expected: String, kind: DocumentError.Kind = .invalidValue
    ) -> DocumentError {
        DocumentError(kind, file: file, path: path, position: position, problem: problem, expected: expected)
    }

    /// A `.wrongType` error: "found the number 400: expected `expected`".
    public func wrongType(expected: String) -> DocumentError {
        error("found \(value.summary)", expected: expected, kind: .wrongType)
    }

    /// A `.missingKey` error at this object: `missing key "KEY": expected EXPECTED`.
    public func missing(_ key: String, expected: String) -> DocumentError {
        error("missing key \(JSONWriter.quoted(key))", expected: expected, kind: .missingKey)
    }

    /// The string; a wrong-type error naming `expected` otherwise.
    public func string(expected: String) throws(DocumentError) -> String {
        guard case .string(let string) = value else { throw wrongType(expected: expected) }
        return string
    }

    /// The boolean; a wrong-type error naming `expected` otherwise.
    public func bool(expected: String) throws(DocumentError) -> Bool {
        guard case .bool(let bool) = value else { throw wrongType(expected: expected) }
        return bool
    }

    /// The number; a wrong-type error naming `expected` otherwise.
    public func number(expected: String) throws(DocumentError) -> JSONNumber {
        guard case .number(let number) = value else { throw wrongType(expected: expected) }
        return number
    }

    /// The number as an integer of type `T`, written as a plain integer (no fraction, no exponent)
    /// that fits in `T`; an error naming `expected` otherwise (`.invalidValue` for a number that is
    /// not such an integer).
    public func integer<T: FixedWidthInteger>(_ type: T.Type, expected: String) throws(DocumentError) -> T {
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
    public func array(expected: String) throws(DocumentError) -> [JSONElement] {
        guard case .array(let values) = value else { throw wrongType(expected: expected) }
        return values.enumerated().map { offset, value in
            child(value, at: offset, path: path.appending(index: offset))
        }
    }

    /// A reader for an object; a wrong-type error naming `expected` otherwise.
    public func object(expected: String) throws(DocumentError) -> JSONObjectReader {
        guard case .object(let members) = value else { throw wrongType(expected: expected) }
        return JSONObjectReader(element: self, members: members)
    }

    /// The member or element at `offset` of this object or array, `value`, at `path`.
    func child(_ value: JSONValue, at offset: Int, path: JSONPath) -> JSONElement {
        guard let map, map.children.indices.contains(offset) else {
            return JSONElement(value: value, path: path, position: position, file: file, map: nil)
        }
        let child = map.children[offset]
        return JSONElement(value: value, path: path, position: child.position, file: file, map: child)
    }

    /// Where the key of the member at `offset` of this object starts.
    func keyPosition(at offset: Int) -> SourcePosition {
        guard let map, map.children.indices.contains(offset) else { return position }
        return map.children[offset].keyPosition
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
        guard let offset = members.firstIndex(where: { $0.key == key }) else { return nil }
        return element.child(members[offset].value, at: offset, path: path.appending(key))
    }

    /// Marks `key` as known and returns its value; a `.missingKey` error at the object naming
    /// `expected` when the object lacks it.
    public mutating func require(_ key: String, expected: String) throws(DocumentError) -> JSONElement {
        guard let value = take(key) else { throw element.missing(key, expected: expected) }
        return value
    }

    /// Marks `keys` as known and returns those the object has, in document order.
    public mutating func take(_ keys: [String]) -> [JSONMember] {
        let present = keys.compactMap { key in take(key).map { JSONMember(key: key, element: $0) } }
        return present.sorted { a, b in
            (members.firstIndex { $0.key == a.key } ?? 0) < (members.firstIndex { $0.key == b.key } ?? 0)
        }
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
    public func finish() throws(DocumentError) {
        guard let offset = members.firstIndex(where: { !known.contains($0.key) }) else { return }
        let unknown = members[offset]
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
        throw DocumentError(
            .unknownKey, file: element.file, path: keyPath, position: element.keyPosition(at: offset),
            problem: problem, expected: expected)
    }
}

/// A member of an object: its key and its value.
public struct JSONMember: Sendable {
    /// The key.
    public let key: String
    /// The value, with its path and position.
    public let element: JSONElement
}

extension [JSONMember] {
    /// The one member of keys that exclude each other (see ``JSONObjectReader/take(_:)-([String])``), or
    /// `nil` when there is none. Two or more are a `.conflict` at the second in document order:
    /// `"b" cannot be combined with "a"` followed by `problemSuffix`, expecting `expected`.
    public func atMostOne(problemSuffix: String = "", expected: String) throws(DocumentError) -> JSONMember? {
        if count > 1 {
            throw self[1].element.error(
                "\(JSONWriter.quoted(self[1].key)) cannot be combined with \(JSONWriter.quoted(self[0].key))"
                    + problemSuffix,
                expected: expected, kind: .conflict)
        }
        return first
    }
}

/// The members of an object read in one go: the object may have only the keys it was read with (any other
/// is refused with a did-you-mean, see ``JSONObjectReader/finish()``), and each is looked up by its key.
///
/// ```swift
/// let fields = try element.fields(["rate", "delay"], expected: "link conditions")
/// if let rate = fields["rate"] { ... }            // {"dealy": ...} was refused already
/// ```
public struct JSONFields: Sendable {
    /// The object.
    public let element: JSONElement
    /// The keys the object may have, in the order messages list them.
    public let keys: [String]
    /// The members the object has, in document order.
    public let members: [JSONMember]

    /// The value of `key`, which must be one of ``keys``; `nil` when the object lacks it.
    public subscript(key: String) -> JSONElement? {
        precondition(keys.contains(key), "\(key) is not a key these fields were read with")
        return members.first { $0.key == key }?.element
    }

    /// The value of `key`; a `.missingKey` error at the object naming `expected` when it lacks it.
    public func require(_ key: String, expected: String) throws(DocumentError) -> JSONElement {
        guard let value = self[key] else { throw element.missing(key, expected: expected) }
        return value
    }

    /// Those of `keys` the object has, in document order (for keys that exclude each other, see
    /// ``Swift/Array/atMostOne(problemSuffix:expected:)``).
    public func present(_ keys: [String]) -> [JSONMember] {
        members.filter { keys.contains($0.key) }
    }
}

extension JSONElement {
    /// The members of this object, which may have only `keys` (listed in that order when an unknown key is
    /// refused); a `.wrongType` error naming `expected` when this is not an object.
    public func fields(_ keys: [String], expected: String) throws(DocumentError) -> JSONFields {
        var reader = try object(expected: expected)
        let members = reader.take(keys)
        try reader.finish()
        return JSONFields(element: self, keys: keys, members: members)
    }
}
