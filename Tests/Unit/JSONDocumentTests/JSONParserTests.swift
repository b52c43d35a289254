import XCTest

@testable import JSONDocument

final class JSONParserTests: XCTestCase {
    /// Parses `text`, and checks that ``JSONParser/value(of:maximumDepth:)`` (no positions) reads the same value.
    private func parse(_ text: String, file: StaticString = #filePath, line: UInt = #line) throws -> ParsedJSON {
        let parsed = try JSONParser.parse(text)
        XCTAssertEqual(try JSONParser.value(of: Array(text.utf8)), parsed.value, "value(of:) reads the same", file: file, line: line)
        return parsed
    }

    /// Checks that the fast reader refuses `bytes` with exactly `error`.
    private func checkFastReader(_ bytes: [UInt8], throws error: JSONParseError, file: StaticString, line: UInt) {
        XCTAssertThrowsError(try JSONParser.value(of: bytes), file: file, line: line) { fast in
            XCTAssertEqual(fast as? JSONParseError, error, "value(of:) refuses with the same error", file: file, line: line)
        }
    }

    /// The error `text` raises; fails the test when it parses.
    private func parseError(_ text: String, file: StaticString = #filePath, line: UInt = #line) -> JSONParseError? {
        do {
            let parsed = try JSONParser.parse(text)
            XCTFail("parsed: \(parsed.value)", file: file, line: line)
            return nil
        } catch {
            checkFastReader(Array(text.utf8), throws: error, file: file, line: line)
            return error
        }
    }

    private func parseError(bytes: [UInt8], file: StaticString = #filePath, line: UInt = #line) -> JSONParseError? {
        do {
            let parsed = try JSONParser.parse(bytes)
            XCTFail("parsed: \(parsed.value)", file: file, line: line)
            return nil
        } catch {
            checkFastReader(bytes, throws: error, file: file, line: line)
            return error
        }
    }

    // MARK: Valid documents

    func testEveryValueType() throws {
        let parsed = try parse(
            #"{"s": "x", "n": -1.5e2, "t": true, "f": false, "z": null, "a": [1, [], {}], "o": {"k": "v"}}"#)
        XCTAssertEqual(
            parsed.value,
            .object([
                ("s", .string("x")), ("n", .number(-150)), ("t", .bool(true)), ("f", .bool(false)), ("z", .null),
                ("a", .array([.number(1), .array([]), .object([])])), ("o", .object([("k", .string("v"))])),
            ]))
    }

    func testMembersKeepDocumentOrder() throws {
        let parsed = try parse(#"{"b": 1, "a": 2, "c": 3}"#)
        XCTAssertEqual(parsed.value.objectMembers?.map(\.key), ["b", "a", "c"])
        XCTAssertNotEqual(parsed.value, .object([("a", .number(2)), ("b", .number(1)), ("c", .number(3))]))
    }

    func testTopLevelScalarsAndWhitespace() throws {
        XCTAssertEqual(try parse(" \t\r\n 42 \n").value, .number(42))
        XCTAssertEqual(try parse("\"x\"").value, .string("x"))
        XCTAssertEqual(try parse("null").value, .null)
        XCTAssertEqual(try parse("[]").value, .array([]))
    }

    func testByteOrderMarkIsSkipped() throws {
        let parsed = try JSONParser.parse([0xEF, 0xBB, 0xBF] + Array(#"{"a": 1}"#.utf8))
        XCTAssertEqual(parsed.value, .object([("a", .number(1))]))
        XCTAssertEqual(parsed.position(of: .root), SourcePosition(line: 1, column: 1))
    }

    func testPositionsOfValuesAndKeys() throws {
        let text = """
            {
              "downlink": {
                "loss": "150%",
                "list": [1, {"x": true}]
              }
            }
            """
        let parsed = try parse(text)
        let downlink = JSONPath.root.appending("downlink")
        XCTAssertEqual(parsed.position(of: .root), SourcePosition(line: 1, column: 1))
        XCTAssertEqual(parsed.keyPosition(of: downlink), SourcePosition(line: 2, column: 3))
        XCTAssertEqual(parsed.position(of: downlink), SourcePosition(line: 2, column: 15))
        XCTAssertEqual(parsed.keyPosition(of: downlink.appending("loss")), SourcePosition(line: 3, column: 5))
        XCTAssertEqual(parsed.position(of: downlink.appending("loss")), SourcePosition(line: 3, column: 13))
        let list = downlink.appending("list")
        XCTAssertEqual(parsed.position(of: list.appending(index: 0)), SourcePosition(line: 4, column: 14))
        XCTAssertEqual(
            parsed.position(of: list.appending(index: 1).appending("x")), SourcePosition(line: 4, column: 23))
        XCTAssertNil(parsed.keyPosition(of: .root))
        XCTAssertNil(parsed.position(of: downlink.appending("missing")))
    }

    func testColumnsCountUnicodeScalarsNotBytes() throws {
        // "é" is two bytes and "😀" four, but each is one column.
        let parsed = try parse(#"{"é😀": "ü", "k": 1}"#)
        XCTAssertEqual(parsed.position(of: JSONPath.root.appending("é😀")), SourcePosition(line: 1, column: 8))
        XCTAssertEqual(parsed.keyPosition(of: JSONPath.root.appending("k")), SourcePosition(line: 1, column: 13))
    }

    // MARK: Strings and escapes

    func testSimpleEscapes() throws {
        XCTAssertEqual(try parse(#""\" \\ \/ \b \f \n \r \t""#).value, .string("\" \\ / \u{08} \u{0C} \n \r \t"))
    }

    func testUnicodeEscapes() throws {
        XCTAssertEqual(try parse(#""\u00e9\u00E9""#).value, .string("éé"))
        XCTAssertEqual(try parse(#""\u0000""#).value, .string("\u{0}"))
        XCTAssertEqual(try parse(#""\ud83d\ude00""#).value, .string("😀"))
        XCTAssertEqual(try parse(#""\uD834\uDD1E clef""#).value, .string("\u{1D11E} clef"))
    }

    func testRawUTF8IsKept() throws {
        XCTAssertEqual(try parse("\"Grüße, 世界 😀\"").value, .string("Grüße, 世界 😀"))
    }

    // MARK: Numbers

    func testNumbersKeepTheirLiteral() throws {
        let cases: [(String, Double)] = [
            ("0", 0), ("-0", 0), ("7", 7), ("-12", -12), ("1.5", 1.5), ("1.50e3", 1500), ("2E-2", 0.02),
            ("1e+2", 100), ("9007199254740993", 9_007_199_254_740_992),
        ]
        for (literal, value) in cases {
            guard case .number(let number) = try parse(literal).value else { return XCTFail(literal) }
            XCTAssertEqual(number.literal, literal)
            XCTAssertEqual(number.value, value, literal)
        }
    }

    func testIntegerFromLiteral() throws {
        XCTAssertEqual(try parse("9007199254740993").value.numberValue?.integer(as: Int64.self), 9_007_199_254_740_993)
        XCTAssertNil(try parse("5.0").value.numberValue?.integer(as: Int.self))
        XCTAssertNil(try parse("1e3").value.numberValue?.integer(as: Int.self))
        XCTAssertNil(try parse("300").value.numberValue?.integer(as: UInt8.self))
    }

    func testNumbersCompareByValue() {
        XCTAssertEqual(JSONValue.number(JSONNumber(value: 1, literal: "1.0")), .number(1))
    }

    // MARK: Errors, one test per class

    func testTruncatedObjectNamesTheOpeningBrace() throws {
        let text = "{\n  \"a\": {\n    \"b\": 1\n  }\n"
        let error = try XCTUnwrap(parseError(text))
        XCTAssertEqual(error.kind, .unexpectedEndOfFile)
        XCTAssertEqual(error.position, SourcePosition(line: 5, column: 1))
        XCTAssertEqual(error.path, .root)
        XCTAssertEqual(
            error.description,
            "unexpected end of file at line 5, column 1: expected ',' or '}' to close the object opened at line 1, column 1"
        )
    }

    func testTruncatedInsideNestedValue() throws {
        let error = try XCTUnwrap(parseError(#"{"downlink": {"delay": "40"#))
        XCTAssertEqual(error.kind, .unexpectedEndOfFile)
        XCTAssertEqual(error.path.description, "$.downlink.delay")
        XCTAssertEqual(error.expected, "'\"' to close the string started at line 1, column 24")
        XCTAssertEqual(error.position, SourcePosition(line: 1, column: 27))
    }

    func testTruncatedAfterColonAndInArray() throws {
        XCTAssertEqual(try XCTUnwrap(parseError(#"{"a":"#)).expected.hasPrefix("a value"), true)
        let array = try XCTUnwrap(parseError("[1, 2"))
        XCTAssertEqual(
            array.description,
            "unexpected end of file at line 1, column 6: expected ',' or ']' to close the array opened at line 1, column 1"
        )
        XCTAssertEqual(
            try XCTUnwrap(parseError("{")).expected,
            "a key in double quotes or '}' to close the object opened at line 1, column 1")
    }

    func testEmptyDocument() throws {
        let empty = try XCTUnwrap(parseError(""))
        XCTAssertEqual(empty.kind, .unexpectedEndOfFile)
        XCTAssertEqual(empty.description, "unexpected end of file at line 1, column 1: expected a JSON value (the file is empty)")
        XCTAssertEqual(
            try XCTUnwrap(parseError(bytes: [0xEF, 0xBB, 0xBF])).expected, "a JSON value (the file is empty)")
    }

    func testWhitespaceOnlyDocumentSaysSo() throws {
        let error = try XCTUnwrap(parseError("  \n\t\r\n "))
        XCTAssertEqual(error.kind, .unexpectedEndOfFile)
        XCTAssertEqual(
            error.description,
            "the file contains only whitespace at line 1, column 1: expected a JSON value, such as an object in braces")
    }

    func testUnexpectedCharacters() throws {
        let word = try XCTUnwrap(parseError(#"{"rate": fast}"#))
        XCTAssertEqual(word.kind, .unexpectedCharacter)
        XCTAssertEqual(word.found, "unexpected word 'fast'")
        XCTAssertEqual(word.position, SourcePosition(line: 1, column: 10))
        XCTAssertEqual(word.path.description, "$.rate")
        XCTAssertTrue(word.expected.hasSuffix("(strings go in double quotes)"))

        XCTAssertTrue(try XCTUnwrap(parseError("True")).expected.hasSuffix("(write 'true' in lowercase)"))
        XCTAssertTrue(try XCTUnwrap(parseError("NaN")).expected.hasSuffix("(JSON has no NaN or Infinity)"))
        XCTAssertTrue(try XCTUnwrap(parseError("['x']")).expected.hasSuffix("(strings use double quotes)"))
        XCTAssertTrue(try XCTUnwrap(parseError("// note\n{}")).expected.hasSuffix("(JSON has no comments)"))
        XCTAssertEqual(
            try XCTUnwrap(parseError("{a: 1}")).expected,
            "a key in double quotes or '}' to close the object opened at line 1, column 1")
        XCTAssertEqual(try XCTUnwrap(parseError(#"{"a" 1}"#)).expected, #"':' after the key "a""#)
    }

    func testMissingCommaBetweenMembers() throws {
        let error = try XCTUnwrap(parseError("{\"a\": 1\n \"b\": 2}"))
        XCTAssertEqual(error.position, SourcePosition(line: 2, column: 2))
        XCTAssertEqual(error.found, "unexpected character '\"'")
        XCTAssertTrue(error.expected.hasSuffix("(is a ',' missing?)"))
    }

    func testTrailingCommas() throws {
        let object = try XCTUnwrap(parseError(#"{"a": 1,}"#))
        XCTAssertEqual(object.kind, .unexpectedCharacter)
        XCTAssertEqual(object.expected, "a key in double quotes after ',' (trailing commas are not allowed)")
        let array = try XCTUnwrap(parseError("[1,]"))
        XCTAssertEqual(array.expected, "a value after ',' (trailing commas are not allowed)")
        XCTAssertEqual(array.position, SourcePosition(line: 1, column: 4))
    }

    func testTextAfterTheValue() throws {
        let error = try XCTUnwrap(parseError("{}\n}"))
        XCTAssertEqual(error.kind, .unexpectedCharacter)
        XCTAssertEqual(
            error.description,
            "unexpected character '}' at line 2, column 1: expected the end of the file after the value that starts at line 1, column 1"
        )
    }

    func testDuplicateKey() throws {
        let error = try XCTUnwrap(parseError("{\n  \"delay\": \"1ms\",\n  \"delay\": \"2ms\"\n}"))
        XCTAssertEqual(error.kind, .duplicateKey)
        XCTAssertEqual(error.path.description, "$.delay")
        XCTAssertEqual(error.position, SourcePosition(line: 3, column: 3))
        XCTAssertEqual(
            error.description,
            #"duplicate key "delay" at line 3, column 3: expected each key at most once in an object; "delay" was first given at line 2, column 3"#
        )
        // The same key in different objects is fine.
        XCTAssertNoThrow(try parse(#"{"a": {"k": 1}, "b": {"k": 2}}"#))
    }

    func testInvalidNumbers() throws {
        let cases: [(String, String)] = [
            ("012", "a number without leading zeros"), ("-", "a digit after '-'"), ("-x", "a digit after '-'"),
            ("1.", "a digit after the decimal point"), ("1.e3", "a digit after the decimal point"),
            ("1e", "a digit in the exponent"), ("1e+", "a digit in the exponent"),
            ("1e400", "a number within the range of a 64-bit floating-point value"),
        ]
        for (text, expected) in cases {
            let error = try XCTUnwrap(parseError(text), text)
            XCTAssertEqual(error.kind, .invalidNumber, text)
            XCTAssertEqual(error.expected, expected, text)
        }
        XCTAssertEqual(try XCTUnwrap(parseError("+1")).kind, .unexpectedCharacter)
        XCTAssertEqual(try XCTUnwrap(parseError(".5")).kind, .unexpectedCharacter)
    }

    func testNumberWithAUnitSuggestsAString() throws {
        let error = try XCTUnwrap(parseError(#"{"delay": 400ms}"#))
        XCTAssertEqual(error.kind, .invalidNumber)
        XCTAssertEqual(error.found, "unexpected 'ms' right after the number 400")
        XCTAssertEqual(
            error.expected, #"',', '}' or ']' after a number (a value with a unit is a string, such as "400ms")"#)
        XCTAssertEqual(error.position, SourcePosition(line: 1, column: 14))
    }

    func testInvalidStrings() throws {
        let escape = try XCTUnwrap(parseError(#""a\x""#))
        XCTAssertEqual(escape.kind, .invalidString)
        XCTAssertEqual(escape.found, #"invalid escape '\x' in a string"#)
        XCTAssertEqual(escape.position, SourcePosition(line: 1, column: 3))

        XCTAssertEqual(try XCTUnwrap(parseError(#""\u12G4""#)).kind, .invalidString)
        let high = try XCTUnwrap(parseError(#""\ud83d x""#))
        XCTAssertEqual(high.found, #"lone surrogate \uD83D in a string"#)
        XCTAssertEqual(try XCTUnwrap(parseError(#""\ud83d\u0041""#)).kind, .invalidString)
        let low = try XCTUnwrap(parseError(#""\ude00""#))
        XCTAssertEqual(low.expected, #"a high surrogate \uD800 to \uDBFF before a low surrogate"#)

        let tab = try XCTUnwrap(parseError("\"a\tb\""))
        XCTAssertEqual(tab.found, "unescaped control character U+0009 in a string")
        XCTAssertEqual(tab.position, SourcePosition(line: 1, column: 3))

        let newline = try XCTUnwrap(parseError("{\"delay\": \"400ms,\n\"rate\": 1}"))
        XCTAssertEqual(newline.found, "a line break inside a string")
        XCTAssertEqual(newline.position, SourcePosition(line: 1, column: 18))
        XCTAssertTrue(
            newline.expected.hasPrefix("'\"' to close the string started at line 1, column 11 on the same line"))
    }

    func testInvalidUTF8() throws {
        let inString = try XCTUnwrap(parseError(bytes: [0x22, 0x61, 0xC3, 0x28, 0x22]))
        XCTAssertEqual(inString.kind, .invalidString)
        XCTAssertEqual(inString.found, "invalid UTF-8 byte 0xC3 in a string")
        XCTAssertEqual(inString.position, SourcePosition(line: 1, column: 3))
        // Overlong encoding of "/" and an encoded surrogate.
        XCTAssertEqual(try XCTUnwrap(parseError(bytes: [0x22, 0xC0, 0xAF, 0x22])).kind, .invalidString)
        XCTAssertEqual(try XCTUnwrap(parseError(bytes: [0x22, 0xED, 0xA0, 0x80, 0x22])).kind, .invalidString)
        let outside = try XCTUnwrap(parseError(bytes: [0xFF]))
        XCTAssertEqual(outside.found, "unexpected byte 0xFF (not UTF-8)")
    }

    func testNestingLimit() throws {
        XCTAssertNoThrow(
            try JSONParser.parse(String(repeating: "[", count: 5) + String(repeating: "]", count: 5), maximumDepth: 5))
        do {
            _ = try JSONParser.parse(
                String(repeating: "[", count: 6) + String(repeating: "]", count: 6), maximumDepth: 5)
            XCTFail("parsed")
        } catch {
            XCTAssertEqual(error.kind, .tooDeep)
            XCTAssertEqual(error.expected, "at most 5 levels of nesting")
            XCTAssertEqual(error.position, SourcePosition(line: 1, column: 6))
        }
        // The default limit keeps a hostile document from exhausting the stack.
        XCTAssertEqual(try XCTUnwrap(parseError(String(repeating: "[", count: 100_000))).kind, .tooDeep)
    }

    func testLargeObjectsWithoutPositions() throws {
        // Past 32 members the fast reader keeps its keys in a set; a late duplicate is refused all the same.
        let members = (0..<40).map { "\"k\($0)\": \($0)" }
        let text = "{" + members.joined(separator: ", ") + "}"
        let parsed = try parse(text)
        XCTAssertEqual(parsed.value.objectMembers?.count, 40)
        let duplicate = try XCTUnwrap(parseError("{" + members.joined(separator: ", ") + ", \"k3\": 1}"))
        XCTAssertEqual(duplicate.kind, .duplicateKey)
        let early = try XCTUnwrap(parseError("{\"a\": 1, \"b\": [1, {\"c\": 2, \"c\": 3}]}"))
        XCTAssertEqual(early.kind, .duplicateKey)
    }
}

extension JSONParserTests {
    /// Positions on one very long line (a minified document) are exact: each is counted on from the last.
    func testPositionsOnALongMinifiedLine() throws {
        let count = 20_000
        var text = "{\"é\": ["
        for index in 0..<count { text += (index > 0 ? "," : "") + "{\"k\":\"ü\(index)\"}" }
        text += "], \"end\": true}"
        let parsed = try JSONParser.parse(text)
        let list = JSONPath.root.appending("é")
        // `{"é": [` is 7 columns; each element before index i is `{"k":"üN"},` (10 columns + digits of N).
        var column = 8
        for index in 0..<count {
            let element = list.appending(index: index)
            if index % 997 == 0 || index == count - 1 {
                XCTAssertEqual(parsed.position(of: element), SourcePosition(line: 1, column: column), "\(index)")
                XCTAssertEqual(
                    parsed.position(of: element.appending("k")), SourcePosition(line: 1, column: column + 5), "\(index)")
            }
            column += 10 + String(index).count
        }
        XCTAssertEqual(parsed.keyPosition(of: JSONPath.root.appending("end")), SourcePosition(line: 1, column: column + 2))
        // An error after it is placed exactly too.
        let error = try XCTUnwrap(parseError(String(text.dropLast()) + ",}"))
        XCTAssertEqual(error.position, SourcePosition(line: 1, column: column + 14))
    }
}

extension JSONParserTests {
    /// Duplicates are found in small objects (searched member by member) and large ones (by a table).
    func testDuplicateKeysInLargeObjects() throws {
        for count in [3, 16, 17, 40] {
            let keys = (0..<count).map { "\"k\($0)\": \($0)" }
            XCTAssertNoThrow(try JSONParser.parse("{" + keys.joined(separator: ",") + "}"), "\(count)")
            for duplicate in [0, count - 1] {
                let text = "{" + keys.joined(separator: ",") + ",\n\"k\(duplicate)\": 0}"
                let error = try XCTUnwrap(parseError(text), "\(count) keys, k\(duplicate) again")
                XCTAssertEqual(error.kind, .duplicateKey)
                XCTAssertEqual(error.position, SourcePosition(line: 2, column: 1))
                let first = 2 + keys[..<duplicate].reduce(0) { $0 + $1.count + 1 }
                XCTAssertEqual(
                    error.expected,
                    "each key at most once in an object; \"k\(duplicate)\" was first given at line 1, column \(first)")
            }
        }
    }

    /// Strings without escapes are taken as they are; with escapes, the text around them is kept.
    func testStringsAroundEscapes() throws {
        let parsed = try parse(#"["plain é", "a\"b\\c\u00e9d😀e", "\n", "x\ty"]"#.replacingOccurrences(of: "\t", with: "\\t"))
        XCTAssertEqual(parsed.value, .array([.string("plain é"), .string("a\"b\\céd😀e"), .string("\n"), .string("x\ty")]))
    }
}
