import Synchronization

/// A strict JSON parser (RFC 8259) that remembers where every value and key starts.
///
/// Accepted: exactly one value of any type, surrounded by optional whitespace (space, tab, CR, LF),
/// and an optional UTF-8 byte order mark at the very start. Refused, each with a ``JSONParseError``
/// that names the line and column: duplicate keys, trailing commas, comments, single quotes,
/// unquoted words, leading zeros, `NaN`/`Infinity`, numbers too large for a `Double`, raw control
/// characters in strings, invalid escapes, lone UTF-16 surrogates, invalid UTF-8, text after the value,
/// and nesting deeper than `maximumDepth`.
public enum JSONParser {
    /// Parses `bytes`, UTF-8 encoded JSON text. Positions are worked out the first time one is asked for
    /// (an error message about a value): a document that is read without complaint never pays for them.
    public static func parse(_ bytes: [UInt8], maximumDepth: Int = 256) throws(JSONParseError) -> ParsedJSON {
        var fast = Scanner(bytes: bytes, maximumDepth: maximumDepth, recordsPositions: false)
        do {
            return ParsedJSON(value: try fast.document().value, positions: PositionTable(bytes: bytes, maximumDepth: maximumDepth))
        } catch {
            // The exact complaint, with its position and path, comes from the recording scanner.
            var scanner = Scanner(bytes: bytes, maximumDepth: maximumDepth)
            return try scanner.document()
        }
    }

    /// Parses `text`.
    public static func parse(_ text: String, maximumDepth: Int = 256) throws(JSONParseError) -> ParsedJSON {
        try parse(Array(text.utf8), maximumDepth: maximumDepth)
    }

    /// The value of `bytes`, for readers that need no positions (a program's own files and messages): the
    /// same grammar, without recording where each value and key starts, which costs most of a parse (a
    /// dictionary entry per value; on a long line, each position is counted from the line's start). A
    /// refusal is the same ``JSONParseError`` that ``parse(_:maximumDepth:)`` throws (the text is then
    /// parsed again with positions).
    public static func value(of bytes: [UInt8], maximumDepth: Int = 256) throws(JSONParseError) -> JSONValue {
        try parse(bytes, maximumDepth: maximumDepth).value
    }
}

/// A parsed document: its value, and where each of its values and keys starts.
public struct ParsedJSON: Sendable {
    /// The document's value.
    public let value: JSONValue
    let positions: PositionTable

    init(value: JSONValue, positions: PositionTable) {
        self.value = value
        self.positions = positions
    }

    init(value: JSONValue, valuePositions: [JSONPath: SourcePosition], keyPositions: [JSONPath: SourcePosition]) {
        self.init(value: value, positions: PositionTable(values: valuePositions, keys: keyPositions))
    }

    /// Where the value at `path` starts (its first character: `{`, `[`, `"`, a digit...).
    public func position(of path: JSONPath) -> SourcePosition? {
        positions.value(path)
    }

    /// Where the key of the member at `path` starts (its opening quote); `nil` for the root and array
    /// elements.
    public func keyPosition(of path: JSONPath) -> SourcePosition? {
        positions.key(path)
    }

    /// The document's value, ready to be read with positions (see ``JSONObjectReader``).
    public var root: JSONElement {
        JSONElement(value: value, path: .root, position: SourcePosition(line: 1, column: 1), document: self)
    }
}

/// Where each value and key of a document starts, recorded by a second scan of its text the first time a
/// position is asked for. (A scan that records them costs most of a parse: a dictionary entry per value
/// and, on a long line, a count from the line's start for each; most documents are read without an error
/// that needs one.)
final class PositionTable: Sendable {
    private struct Tables {
        var values: [JSONPath: SourcePosition]
        var keys: [JSONPath: SourcePosition]
    }

    private let bytes: [UInt8]
    private let maximumDepth: Int
    private let tables: Mutex<Tables?>

    /// Positions of `bytes`, a document that parses, recorded when first asked for.
    init(bytes: [UInt8], maximumDepth: Int) {
        self.bytes = bytes
        self.maximumDepth = maximumDepth
        tables = Mutex(nil)
    }

    /// Positions recorded already.
    init(values: [JSONPath: SourcePosition], keys: [JSONPath: SourcePosition]) {
        bytes = []
        maximumDepth = 0
        tables = Mutex(Tables(values: values, keys: keys))
    }

    private func lookup(_ body: (Tables) -> SourcePosition?) -> SourcePosition? {
        tables.withLock { tables in
            if tables == nil {
                var scanner = Scanner(bytes: bytes, maximumDepth: maximumDepth)
                let parsed = try? scanner.document()
                tables = Tables(values: scanner.valuePositions, keys: scanner.keyPositions)
                _ = parsed
            }
            return body(tables!)
        }
    }

    func value(_ path: JSONPath) -> SourcePosition? { lookup { $0.values[path] } }
    func key(_ path: JSONPath) -> SourcePosition? { lookup { $0.keys[path] } }
}

private struct Scanner {
    let bytes: [UInt8]
    let maximumDepth: Int
    /// False for ``JSONParser/value(of:maximumDepth:)``: no positions, no paths, and errors only as good
    /// as "this text is refused" (the caller parses again for the real one).
    let recordsPositions: Bool
    var index = 0
    var line = 1
    var lineStart = 0
    var depth = 0
    var path = JSONPath.root
    var valuePositions: [JSONPath: SourcePosition] = [:]
    var keyPositions: [JSONPath: SourcePosition] = [:]

    init(bytes: [UInt8], maximumDepth: Int, recordsPositions: Bool = true) {
        self.bytes = bytes
        self.maximumDepth = maximumDepth
        self.recordsPositions = recordsPositions
    }

    /// A place in the text, kept cheaply; its line and column are worked out only when a message needs them.
    struct Mark {
        let offset: Int
        let line: Int
        let lineStart: Int
    }

    var mark: Mark { Mark(offset: index, line: line, lineStart: lineStart) }

    func position(of mark: Mark) -> SourcePosition {
        var column = 1
        var i = mark.lineStart
        while i < mark.offset {
            if bytes[i] & 0xC0 != 0x80 { column += 1 }
            i += 1
        }
        return SourcePosition(line: mark.line, column: column)
    }

    static let anyValue = "a value: a string in double quotes, a number, an object, an array, true, false or null"

    mutating func document() throws(JSONParseError) -> ParsedJSON {
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) {
            index = 3
            lineStart = 3
        }
        skipWhitespace()
        if index == bytes.count {
            throw error(
                .unexpectedEndOfFile, found: "unexpected end of file", expected: "a JSON value (the file is empty)")
        }
        let start = position
        let value = try parseValue()
        skipWhitespace()
        if index < bytes.count {
            throw error(
                .unexpectedCharacter, found: foundHere(),
                expected: "the end of the file after the value that starts at \(start)")
        }
        return ParsedJSON(value: value, valuePositions: valuePositions, keyPositions: keyPositions)
    }

    // MARK: Positions

    var position: SourcePosition { position(at: index) }

    /// The position of byte `offset`, which must be on the current line.
    func position(at offset: Int) -> SourcePosition {
        var column = 1
        var i = lineStart
        while i < offset {
            if bytes[i] & 0xC0 != 0x80 { column += 1 }
            i += 1
        }
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

    mutating func parseValue() throws(JSONParseError) -> JSONValue {
        skipWhitespace()
        guard index < bytes.count else {
            throw error(.unexpectedEndOfFile, found: "unexpected end of file", expected: Self.anyValue)
        }
        if recordsPositions { valuePositions[path] = position }
        switch bytes[index] {
        case UInt8(ascii: "{"): return try parseObject()
        case UInt8(ascii: "["): return try parseArray()
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

    mutating func parseObject() throws(JSONParseError) -> JSONValue {
        let opened = mark
        try enterContainer()
        index += 1
        var members: [(key: String, value: JSONValue)] = []
        var seen: [String: SourcePosition] = [:]
        var close: String { "'}' to close the object opened at \(position(of: opened))" }
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
            index += 1
            depth -= 1
            return .object([])
        }
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
            guard recordsPositions else {
                // Keys only, no positions: a duplicate is refused here, and described by the full parse.
                let key = try parseString()
                if members.count < 32 ? members.contains(where: { $0.key == key }) : seen[key] != nil {
                    throw error(.duplicateKey, found: "duplicate key", expected: "each key at most once")
                }
                if members.count >= 31 {
                    if seen.isEmpty { for member in members { seen[member.key] = SourcePosition(line: 0, column: 0) } }
                    seen[key] = SourcePosition(line: 0, column: 0)
                }
                skipWhitespace()
                guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else {
                    throw error(.unexpectedCharacter, found: "no ':'", expected: "':' after a key")
                }
                index += 1
                members.append((key, try parseValue()))
                skipWhitespace()
                guard index < bytes.count else { throw error(.unexpectedEndOfFile, found: "end of file", expected: "',' or '}'") }
                switch bytes[index] {
                case UInt8(ascii: ","):
                    index += 1
                    continue
                case UInt8(ascii: "}"):
                    index += 1
                    depth -= 1
                    return .object(members)
                default:
                    throw error(.unexpectedCharacter, found: "not ',' or '}'", expected: "',' or '}'")
                }
            }
            let keyPosition = position
            let key = try parseString()
            let memberPath = path.appending(key)
            if let first = seen[key] {
                throw JSONParseError(
                    kind: .duplicateKey, position: keyPosition, path: memberPath,
                    found: "duplicate key \(JSONWriter.quoted(key))",
                    expected:
                        "each key at most once in an object; \(JSONWriter.quoted(key)) was first given at \(first)")
            }
            seen[key] = keyPosition
            keyPositions[memberPath] = keyPosition
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else {
                throw error(
                    index == bytes.count ? .unexpectedEndOfFile : .unexpectedCharacter, found: foundHere(),
                    expected: "':' after the key \(JSONWriter.quoted(key))")
            }
            index += 1
            let outer = path
            path = memberPath
            let value = try parseValue()
            path = outer
            members.append((key, value))
            skipWhitespace()
            guard index < bytes.count else {
                throw error(.unexpectedEndOfFile, found: foundHere(), expected: "',' or " + close)
            }
            switch bytes[index] {
            case UInt8(ascii: ","):
                index += 1
            case UInt8(ascii: "}"):
                index += 1
                depth -= 1
                return .object(members)
            default:
                let hint = bytes[index] == UInt8(ascii: "\"") ? " (is a ',' missing?)" : ""
                throw error(.unexpectedCharacter, found: foundHere(), expected: "',' or " + close + hint)
            }
        }
    }

    mutating func parseArray() throws(JSONParseError) -> JSONValue {
        let opened = mark
        try enterContainer()
        index += 1
        var elements: [JSONValue] = []
        var close: String { "']' to close the array opened at \(position(of: opened))" }
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
            index += 1
            depth -= 1
            return .array([])
        }
        while true {
            skipWhitespace()
            if !elements.isEmpty, index < bytes.count, bytes[index] == UInt8(ascii: "]") {
                throw error(
                    .unexpectedCharacter, found: foundHere(),
                    expected: "a value after ',' (trailing commas are not allowed)")
            }
            if recordsPositions {
                let outer = path
                path = path.appending(index: elements.count)
                let value = try parseValue()
                path = outer
                elements.append(value)
            } else {
                elements.append(try parseValue())
            }
            skipWhitespace()
            guard index < bytes.count else {
                throw error(.unexpectedEndOfFile, found: foundHere(), expected: "',' or " + close)
            }
            switch bytes[index] {
            case UInt8(ascii: ","):
                index += 1
            case UInt8(ascii: "]"):
                index += 1
                depth -= 1
                return .array(elements)
            default:
                throw error(.unexpectedCharacter, found: foundHere(), expected: "',' or " + close)
            }
        }
    }

    // MARK: Strings

    mutating func parseString() throws(JSONParseError) -> String {
        let started = mark
        var close: String { "'\"' to close the string started at \(position(of: started))" }
        index += 1
        var output: [UInt8] = []
        while true {
            guard index < bytes.count else {
                throw error(.unexpectedEndOfFile, found: "unexpected end of file", expected: close)
            }
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "\""):
                index += 1
                return String(decoding: output, as: UTF8.self)
            case UInt8(ascii: "\\"):
                try parseEscape(into: &output, started: started)
            case 0x0A, 0x0D:
                throw error(
                    .invalidString, found: "a line break inside a string",
                    expected: close + " on the same line (write a line break inside a string as \\n)")
            case 0x00..<0x20:
                throw error(
                    .invalidString, found: "unescaped control character U+\(hex(UInt32(byte))) in a string",
                    expected: "an escape such as \\t or \\u\(hex(UInt32(byte)))")
            case 0x20..<0x80:
                output.append(byte)
                index += 1
            default:
                guard let (_, length) = decodeScalar(at: index) else {
                    throw error(
                        .invalidString, found: "invalid UTF-8 byte 0x\(hex(UInt32(byte), digits: 2)) in a string",
                        expected: "text encoded as UTF-8")
                }
                output.append(contentsOf: bytes[index..<index + length])
                index += length
            }
        }
    }

    mutating func parseEscape(into output: inout [UInt8], started: Mark) throws(JSONParseError) {
        let escapeStart = index
        index += 1
        guard index < bytes.count else {
            throw error(
                .unexpectedEndOfFile, found: "unexpected end of file",
                expected: "'\"' to close the string started at \(position(of: started))")
        }
        let simple: UInt8? =
            switch bytes[index] {
            case UInt8(ascii: "\""): 0x22
            case UInt8(ascii: "\\"): 0x5C
            case UInt8(ascii: "/"): 0x2F
            case UInt8(ascii: "b"): 0x08
            case UInt8(ascii: "f"): 0x0C
            case UInt8(ascii: "n"): 0x0A
            case UInt8(ascii: "r"): 0x0D
            case UInt8(ascii: "t"): 0x09
            default: nil
            }
        if let simple {
            output.append(simple)
            index += 1
            return
        }
        guard bytes[index] == UInt8(ascii: "u") else {
            let shown =
                bytes[index] < 0x80 && bytes[index] >= 0x20 ? String(Character(Unicode.Scalar(bytes[index]))) : "?"
            throw error(
                .invalidString, at: escapeStart, found: "invalid escape '\\\(shown)' in a string",
                expected: "one of \\\" \\\\ \\/ \\b \\f \\n \\r \\t or \\u followed by four hexadecimal digits")
        }
        index += 1
        let first = try hexQuad(escapeStart: escapeStart)
        var scalarValue = UInt32(first)
        switch first {
        case 0xD800...0xDBFF:
            let lowStart = index
            guard index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u")
            else {
                throw error(
                    .invalidString, at: escapeStart, found: "lone surrogate \\u\(hex(UInt32(first))) in a string",
                    expected: "a low surrogate \\uDC00 to \\uDFFF right after a high surrogate")
            }
            index += 2
            let second = try hexQuad(escapeStart: lowStart)
            guard (0xDC00...0xDFFF).contains(second) else {
                throw error(
                    .invalidString, at: escapeStart, found: "lone surrogate \\u\(hex(UInt32(first))) in a string",
                    expected: "a low surrogate \\uDC00 to \\uDFFF right after a high surrogate")
            }
            scalarValue = 0x10000 + ((UInt32(first) - 0xD800) << 10) + (UInt32(second) - 0xDC00)
        case 0xDC00...0xDFFF:
            throw error(
                .invalidString, at: escapeStart, found: "lone surrogate \\u\(hex(UInt32(first))) in a string",
                expected: "a high surrogate \\uD800 to \\uDBFF before a low surrogate")
        default:
            break
        }
        let scalar = Unicode.Scalar(scalarValue)!
        output.append(contentsOf: Array(String(Character(scalar)).utf8))
    }

    mutating func hexQuad(escapeStart: Int) throws(JSONParseError) -> UInt16 {
        var value: UInt16 = 0
        for _ in 0..<4 {
            guard index < bytes.count else {
                throw error(
                    .unexpectedEndOfFile, found: "unexpected end of file", expected: "four hexadecimal digits after \\u"
                )
            }
            let byte = bytes[index]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default:
                throw error(
                    .invalidString, at: escapeStart, found: "invalid \\u escape in a string",
                    expected: "four hexadecimal digits after \\u, such as \\u00E9")
            }
            value = value << 4 | UInt16(digit)
            index += 1
        }
        return value
    }

    /// The scalar encoded in valid UTF-8 at `offset` and its length in bytes; `nil` for invalid UTF-8
    /// (bad lead or continuation bytes, overlong forms, surrogates, values above U+10FFFF).
    func decodeScalar(at offset: Int) -> (Unicode.Scalar, Int)? {
        let lead = bytes[offset]
        let length: Int
        var value: UInt32
        switch lead {
        case 0x00..<0x80: return (Unicode.Scalar(lead), 1)
        case 0xC2...0xDF: (length, value) = (2, UInt32(lead & 0x1F))
        case 0xE0...0xEF: (length, value) = (3, UInt32(lead & 0x0F))
        case 0xF0...0xF4: (length, value) = (4, UInt32(lead & 0x07))
        default: return nil
        }
        guard offset + length <= bytes.count else { return nil }
        for i in 1..<length {
            let byte = bytes[offset + i]
            guard byte & 0xC0 == 0x80 else { return nil }
            value = value << 6 | UInt32(byte & 0x3F)
        }
        let minimum: UInt32 = length == 2 ? 0x80 : length == 3 ? 0x800 : 0x10000
        guard value >= minimum, let scalar = Unicode.Scalar(value) else { return nil }
        return (scalar, length)
    }

    // MARK: Numbers

    mutating func parseNumber() throws(JSONParseError) -> JSONNumber {
        let start = index
        func isDigit(_ offset: Int) -> Bool {
            offset < bytes.count && (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[offset])
        }
        if bytes[index] == UInt8(ascii: "-") { index += 1 }
        guard isDigit(index) else {
            throw error(
                .invalidNumber, found: index < bytes.count ? foundHere() : "unexpected end of file",
                expected: "a digit after '-'")
        }
        if bytes[index] == UInt8(ascii: "0"), isDigit(index + 1) {
            var end = index
            while isDigit(end) { end += 1 }
            let literal = String(decoding: bytes[start..<end], as: UTF8.self)
            throw error(
                .invalidNumber, at: start, found: "the number \(literal) with a leading zero",
                expected: "a number without leading zeros")
        }
        while isDigit(index) { index += 1 }
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            guard isDigit(index) else {
                throw error(
                    .invalidNumber, found: index < bytes.count ? foundHere() : "unexpected end of file",
                    expected: "a digit after the decimal point")
            }
            while isDigit(index) { index += 1 }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
                index += 1
            }
            guard isDigit(index) else {
                throw error(
                    .invalidNumber, found: index < bytes.count ? foundHere() : "unexpected end of file",
                    expected: "a digit in the exponent")
            }
            while isDigit(index) { index += 1 }
        }
        let literal = String(decoding: bytes[start..<index], as: UTF8.self)
        if index < bytes.count, Self.isLetter(bytes[index]) || bytes[index] == UInt8(ascii: "%") {
            let suffix = bytes[index] == UInt8(ascii: "%") ? "%" : word(at: index)
            throw error(
                .invalidNumber, found: "unexpected '\(suffix)' right after the number \(literal)",
                expected:
                    "',', '}' or ']' after a number (a value with a unit is a string, such as \"\(literal)\(suffix)\")")
        }
        guard let value = Double(literal), value.isFinite else {
            throw error(
                .invalidNumber, at: start, found: "the number \(literal), which is too large",
                expected: "a number within the range of a 64-bit floating-point value")
        }
        return JSONNumber(value: value, literal: literal)
    }
}
