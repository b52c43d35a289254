// Strings, escapes, UTF-8 and numbers: the scalar values of JSON text.

extension JSONScanner {
    // MARK: Strings

    mutating func parseString() throws(JSONParseError) -> String {
        let started = here()
        var close: String { "'\"' to close the string started at \(started)" }
        index += 1
        // Text without escapes is taken from the input in one piece; `output` collects it only once an
        // escape has been met, run by run.
        var runStart = index
        var output: [UInt8]?
        while true {
            guard index < bytes.count else {
                throw error(.unexpectedEndOfFile, found: "unexpected end of file", expected: close)
            }
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "\""):
                defer { index += 1 }
                guard var output else { return String(decoding: bytes[runStart..<index], as: UTF8.self) }
                output.append(contentsOf: bytes[runStart..<index])
                return String(decoding: output, as: UTF8.self)
            case UInt8(ascii: "\\"):
                var escaped = output ?? []
                escaped.append(contentsOf: bytes[runStart..<index])
                try parseEscape(into: &escaped, started: started)
                output = escaped
                runStart = index
            case 0x0A, 0x0D:
                throw error(
                    .invalidString, found: "a line break inside a string",
                    expected: close + " on the same line (write a line break inside a string as \\n)")
            case 0x00..<0x20:
                throw error(
                    .invalidString, found: "unescaped control character U+\(hex(UInt32(byte))) in a string",
                    expected: "an escape such as \\t or \\u\(hex(UInt32(byte)))")
            case 0x20..<0x80:
                index += 1
            default:
                guard let (_, length) = decodeScalar(at: index) else {
                    throw error(
                        .invalidString, found: "invalid UTF-8 byte 0x\(hex(UInt32(byte), digits: 2)) in a string",
                        expected: "text encoded as UTF-8")
                }
                index += length
            }
        }
    }

    mutating func parseEscape(into output: inout [UInt8], started: SourcePosition) throws(JSONParseError) {
        var close: String { "'\"' to close the string started at \(started)" }
        let escapeStart = index
        index += 1
        guard index < bytes.count else {
            throw error(.unexpectedEndOfFile, found: "unexpected end of file", expected: close)
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
        /// Skips one or more digits; an error expecting `what` where there is none.
        func skipDigits(expected what: String) throws(JSONParseError) {
            guard isDigit(index) else {
                throw error(
                    .invalidNumber, found: index < bytes.count ? foundHere() : "unexpected end of file", expected: what)
            }
            while isDigit(index) { index += 1 }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            try skipDigits(expected: "a digit after the decimal point")
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
                index += 1
            }
            try skipDigits(expected: "a digit in the exponent")
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
