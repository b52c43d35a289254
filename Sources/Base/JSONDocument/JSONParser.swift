/// A strict JSON parser (RFC 8259) that remembers where every value and key starts.
///
/// Accepted: exactly one value of any type, surrounded by optional whitespace (space, tab, CR, LF),
/// and an optional UTF-8 byte order mark at the very start. Refused, each with a ``JSONParseError``
/// that names the line and column: duplicate keys, trailing commas, comments, single quotes,
/// unquoted words, leading zeros, `NaN`/`Infinity`, numbers too large for a `Double`, raw control
/// characters in strings, invalid escapes, lone UTF-16 surrogates, invalid UTF-8, text after the value,
/// and nesting deeper than `maximumDepth`.
///
/// Parsing takes time linear in the size of the text, however long its lines.
public enum JSONParser {
    /// Parses `bytes`, UTF-8 encoded JSON text; `file` names the text in the errors of its elements.
    public static func parse(
        _ bytes: [UInt8], file: String = "", maximumDepth: Int = 256
    ) throws(JSONParseError) -> ParsedJSON {
        var scanner = JSONScanner(bytes: bytes, maximumDepth: maximumDepth)
        return try scanner.document(file: file)
    }

    /// Parses `text`; `file` names the text in the errors of its elements.
    public static func parse(
        _ text: String, file: String = "", maximumDepth: Int = 256
    ) throws(JSONParseError) -> ParsedJSON {
        try parse(Array(text.utf8), file: file, maximumDepth: maximumDepth)
    }

    /// Parses the document `file`: a text that is not JSON is a `.syntax` ``DocumentError`` naming it.
    public static func document(
        _ bytes: [UInt8], file: String, maximumDepth: Int = 256
    ) throws(DocumentError) -> ParsedJSON {
        do {
            return try parse(bytes, file: file, maximumDepth: maximumDepth)
        } catch {
            throw DocumentError(file: file, parseError: error)
        }
    }

    /// The value of `bytes`, for readers that report no positions (a program's own state files and
    /// messages). Same grammar and the same ``JSONParseError`` on refusal as ``parse(_:file:maximumDepth:)``.
    public static func value(of bytes: [UInt8], maximumDepth: Int = 256) throws(JSONParseError) -> JSONValue {
        try parse(bytes, maximumDepth: maximumDepth).value
    }
}

/// The parser's state while it walks the text once, front to back.
struct JSONScanner {
    let bytes: [UInt8]
    let maximumDepth: Int
    var index = 0
    var line = 1
    var lineStart = 0
    /// A byte offset on the current line and its column, so that each position is counted on from the
    /// last one instead of from the start of the line (which is quadratic on a long minified line).
    var columnMark = (offset: 0, column: 1)
    var depth = 0
    /// Where the parser is, for errors: components are pushed and popped as it goes in and out.
    var path = JSONPath.root

    init(bytes: [UInt8], maximumDepth: Int) {
        self.bytes = bytes
        self.maximumDepth = maximumDepth
    }

    static let anyValue = "a value: a string in double quotes, a number, an object, an array, true, false or null"

    mutating func document(file: String) throws(JSONParseError) -> ParsedJSON {
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) {
            index = 3
            lineStart = 3
            columnMark = (3, 1)
        }
        let textStart = index
        skipWhitespace()
        if index == bytes.count {
            throw index == textStart
                ? error(
                    .unexpectedEndOfFile, found: "unexpected end of file", expected: "a JSON value (the file is empty)")
                : JSONParseError(
                    kind: .unexpectedEndOfFile, position: SourcePosition(line: 1, column: 1), path: .root,
                    found: "the file contains only whitespace", expected: "a JSON value, such as an object in braces")
        }
        let (value, map) = try parseValue()
        skipWhitespace()
        if index < bytes.count {
            throw error(
                .unexpectedCharacter, found: foundHere(),
                expected: "the end of the file after the value that starts at \(map.position)")
        }
        return ParsedJSON(value: value, file: file, map: map)
    }

    // MARK: Positions

    /// The position of the current byte, counted on from the previous position asked for on this line.
    mutating func here() -> SourcePosition {
        if columnMark.offset < lineStart || columnMark.offset > index { columnMark = (lineStart, 1) }
        var column = columnMark.column
        for i in columnMark.offset..<index where bytes[i] & 0xC0 != 0x80 { column += 1 }
        columnMark = (index, column)
        return SourcePosition(line: line, column: column)
    }

    /// The position of byte `offset`, which must be on the current line, counted from the start of the
    /// line (for errors, which happen once).
    func position(at offset: Int) -> SourcePosition {
        var column = 1
        for i in lineStart..<offset where bytes[i] & 0xC0 != 0x80 { column += 1 }
        return SourcePosition(line: line, column: column)
    }

    func error(
        _ kind: JSONParseError.Kind, at offset: Int? = nil, found: String, expected: String, path: JSONPath? = nil
    ) -> JSONParseError {
        JSONParseError(
            kind: kind, position: position(at: offset ?? index), path: path ?? self.path, found: found,
            expected: expected)
    }

    mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0D: index += 1
            case 0x0A:
                index += 1
                line += 1
                lineStart = index
            default: return
            }
        }
    }

    // MARK: Describing what is here

    static func isWordByte(_ byte: UInt8) -> Bool {
        (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) || (0x30...0x39).contains(byte) || byte == 0x5F
    }

    static func isLetter(_ byte: UInt8) -> Bool {
        (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
    }

    /// The word of letters, digits and `_` starting at `offset`.
    func word(at offset: Int) -> String {
        var end = offset
        while end < bytes.count, Self.isWordByte(bytes[end]) { end += 1 }
        return String(decoding: bytes[offset..<end], as: UTF8.self)
    }

    /// "unexpected end of file", "unexpected word 'fast'", "unexpected character ','", ...
    func foundHere() -> String {
        guard index < bytes.count else { return "unexpected end of file" }
        let byte = bytes[index]
        if Self.isLetter(byte) { return "unexpected word '\(word(at: index))'" }
        if (0x21...0x7E).contains(byte) { return "unexpected character '\(Character(Unicode.Scalar(byte)))'" }
        if byte < 0x80 { return "unexpected character U+\(hex(UInt32(byte)))" }
        if let (scalar, _) = decodeScalar(at: index) { return "unexpected character U+\(hex(scalar.value))" }
        return "unexpected byte 0x\(hex(UInt32(byte), digits: 2)) (not UTF-8)"
    }

    func hex(_ value: UInt32, digits: Int = 4) -> String {
        let text = String(value, radix: 16, uppercase: true)
        return String(repeating: "0", count: max(0, digits - text.count)) + text
    }

    // MARK: Values

    /// The value that starts here, and where it and its parts start.
    mutating func parseValue() throws(JSONParseError) -> (JSONValue, SourceMap) {
        skipWhitespace()
        guard index < bytes.count else {
            throw error(.unexpectedEndOfFile, found: "unexpected end of file", expected: Self.anyValue)
        }
        let position = here()
        switch bytes[index] {
        case UInt8(ascii: "{"): return try parseObject(at: position)
        case UInt8(ascii: "["): return try parseArray(at: position)
        default: return (try parseScalar(), SourceMap(position: position))
        }
    }

    mutating func parseScalar() throws(JSONParseError) -> JSONValue {
        switch bytes[index] {
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try parseNumber())
        case let byte where Self.isLetter(byte):
            let word = word(at: index)
            switch word {
            case "true":
                index += 4
                return .bool(true)
            case "false":
                index += 5
                return .bool(false)
            case "null":
                index += 4
                return .null
            default:
                let hint =
                    switch word.lowercased() {
                    case "true", "false", "null": " (write '\(word.lowercased())' in lowercase)"
                    case "nan", "infinity", "inf": " (JSON has no NaN or Infinity)"
                    default: " (strings go in double quotes)"
                    }
                throw error(.unexpectedCharacter, found: foundHere(), expected: Self.anyValue + hint)
            }
        case UInt8(ascii: "'"):
            throw error(
                .unexpectedCharacter, found: foundHere(), expected: Self.anyValue + " (strings use double quotes)")
        case UInt8(ascii: "/"), UInt8(ascii: "#"):
            throw error(.unexpectedCharacter, found: foundHere(), expected: Self.anyValue + " (JSON has no comments)")
        default:
            throw error(.unexpectedCharacter, found: foundHere(), expected: Self.anyValue)
        }
    }

    mutating func enterContainer() throws(JSONParseError) {
        depth += 1
        if depth > maximumDepth {
            throw error(
                .tooDeep, found: "objects and arrays nested \(depth) deep",
                expected: "at most \(maximumDepth) levels of nesting")
        }
    }

    mutating func parseObject(at opened: SourcePosition) throws(JSONParseError) -> (JSONValue, SourceMap) {
        try enterContainer()
        index += 1
        var members: [(key: String, value: JSONValue)] = []
        var map = SourceMap(position: opened)
        // Keys seen so far, for duplicates: searched in `members` while the object is small.
        var seen: [String: SourcePosition] = [:]
        var close: String { "'}' to close the object opened at \(opened)" }
        if closesEmpty(UInt8(ascii: "}")) { return (.object([]), map) }
        while true {
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else {
                let expected: String
                if members.isEmpty {
                    expected = "a key in double quotes or " + close
                } else if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
                    expected = "a key in double quotes after ',' (trailing commas are not allowed)"
                } else {
                    expected = "a key in double quotes"
                }
                throw error(
                    index == bytes.count ? .unexpectedEndOfFile : .unexpectedCharacter, found: foundHere(),
                    expected: expected)
            }
            let keyPosition = here()
            let key = try parseString()
            if members.count == 16 {
                for (offset, member) in members.enumerated() { seen[member.key] = map.children[offset].keyPosition }
            }
            let first =
                members.count < 16
                ? members.firstIndex { $0.key == key }.map { map.children[$0].keyPosition } : seen[key]
            if let first {
                throw JSONParseError(
                    kind: .duplicateKey, position: keyPosition, path: path.appending(key),
                    found: "duplicate key \(JSONWriter.quoted(key))",
                    expected:
                        "each key at most once in an object; \(JSONWriter.quoted(key)) was first given at \(first)")
            }
            if members.count >= 16 { seen[key] = keyPosition }
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else {
                throw error(
                    index == bytes.count ? .unexpectedEndOfFile : .unexpectedCharacter, found: foundHere(),
                    expected: "':' after the key \(JSONWriter.quoted(key))")
            }
            index += 1
            path.components.append(.key(key))
            var (value, valueMap) = try parseValue()
            path.components.removeLast()
            members.append((key, value))
            valueMap.keyPosition = keyPosition
            map.children.append(valueMap)
            if try closes(with: UInt8(ascii: "}"), close, hintAtQuote: " (is a ',' missing?)") {
                return (.object(members), map)
            }
        }
    }

    mutating func parseArray(at opened: SourcePosition) throws(JSONParseError) -> (JSONValue, SourceMap) {
        try enterContainer()
        index += 1
        var elements: [JSONValue] = []
        var map = SourceMap(position: opened)
        var close: String { "']' to close the array opened at \(opened)" }
        if closesEmpty(UInt8(ascii: "]")) { return (.array([]), map) }
        while true {
            skipWhitespace()
            if !elements.isEmpty, index < bytes.count, bytes[index] == UInt8(ascii: "]") {
                throw error(
                    .unexpectedCharacter, found: foundHere(),
                    expected: "a value after ',' (trailing commas are not allowed)")
            }
            path.components.append(.index(elements.count))
            let (value, valueMap) = try parseValue()
            path.components.removeLast()
            elements.append(value)
            map.children.append(valueMap)
            if try closes(with: UInt8(ascii: "]"), close) { return (.array(elements), map) }
        }
    }

    /// Consumes `closer` right after an opening bracket, leaving the container: whether it is empty.
    mutating func closesEmpty(_ closer: UInt8) -> Bool {
        skipWhitespace()
        guard index < bytes.count, bytes[index] == closer else { return false }
        index += 1
        depth -= 1
        return true
    }

    /// After a member or an element: consumes a `,` (false: more to come) or `closer`, leaving the
    /// container (true); anything else is an error expecting either, `close` saying where the container
    /// was opened (with `hintAtQuote` added when a `"` stands there instead).
    mutating func closes(
        with closer: UInt8, _ close: @autoclosure () -> String, hintAtQuote: String = ""
    ) throws(JSONParseError) -> Bool {
        skipWhitespace()
        guard index < bytes.count else {
            throw error(.unexpectedEndOfFile, found: foundHere(), expected: "',' or " + close())
        }
        switch bytes[index] {
        case UInt8(ascii: ","):
            index += 1
            return false
        case closer:
            index += 1
            depth -= 1
            return true
        default:
            let hint = bytes[index] == UInt8(ascii: "\"") ? hintAtQuote : ""
            throw error(.unexpectedCharacter, found: foundHere(), expected: "',' or " + close() + hint)
        }
    }
}
