import XCTest

@testable import JSONDocument

final class JSONObjectReaderTests: XCTestCase {
    private let text = """
        {
          "name": "edge",
          "downlink": {
            "dealy": "400ms",
            "rate": 240,
            "loss": {"percent": "1%"},
            "gaps": [1, 2.5, 1e3]
          }
        }
        """

    private func downlink() throws -> JSONObjectReader {
        var top = try JSONParser.parse(text).root.object(expected: "an object")
        let element = try XCTUnwrap(top.take("downlink"))
        return try element.object(expected: "an object")
    }

    func testTakeKnownKeysThenFinishReportsUnknownWithSuggestion() throws {
        var reader = try downlink()
        XCTAssertEqual(reader.path.description, "$.downlink")
        XCTAssertNil(reader.take("delay"))
        XCTAssertNotNil(reader.take("rate"))
        XCTAssertNotNil(reader.take("loss"))
        XCTAssertNotNil(reader.take("gaps"))
        do {
            try reader.finish()
            XCTFail("finished")
        } catch {
            XCTAssertEqual(error.kind, .unknownKey)
            XCTAssertEqual(error.path?.description, "$.downlink.dealy")
            XCTAssertEqual(error.position, SourcePosition(line: 4, column: 5))
            XCTAssertEqual(
                error.description,
                #"$.downlink.dealy (line 4, column 5): unknown key "dealy" (did you mean "delay"?): expected one of "delay", "rate", "loss", "gaps""#
            )
        }
    }

    func testFinishWithoutSuggestionWhenNothingIsClose() throws {
        var reader = try downlink()
        reader.allow(["delay", "loss", "gaps"])
        _ = reader.take("rate")
        XCTAssertEqual(reader.knownKeys, ["delay", "loss", "gaps", "rate"])
        reader.allow(["dealy"])
        XCTAssertNoThrow(try reader.finish())

        var other = try JSONParser.parse(#"{"zzzzzz": 1}"#).root.object(expected: "an object")
        _ = other.take("rate")
        XCTAssertThrowsError(try other.finish()) { error in
            XCTAssertEqual((error as? DocumentError)?.problem, #"unknown key "zzzzzz""#)
            XCTAssertEqual((error as? DocumentError)?.expected, #"only the key "rate""#)
        }
    }

    func testElementsCarryPathAndPosition() throws {
        var reader = try downlink()
        let loss = try XCTUnwrap(reader.take("loss"))
        XCTAssertEqual(loss.path.description, "$.downlink.loss")
        XCTAssertEqual(loss.position, SourcePosition(line: 6, column: 13))
        var lossReader = try loss.object(expected: "an object")
        let percent = try XCTUnwrap(lossReader.take("percent"))
        XCTAssertEqual(percent.path.description, "$.downlink.loss.percent")
        XCTAssertEqual(percent.position, SourcePosition(line: 6, column: 25))
        XCTAssertEqual(try percent.string(expected: "a percentage"), "1%")
        let gaps = try XCTUnwrap(reader.take("gaps")).array(expected: "an array")
        XCTAssertEqual(
            gaps.map(\.path.description), ["$.downlink.gaps[0]", "$.downlink.gaps[1]", "$.downlink.gaps[2]"])
        XCTAssertEqual(gaps[2].position, SourcePosition(line: 7, column: 22))
    }

    func testWrongTypeNamesWhatWasFound() throws {
        var reader = try downlink()
        let rate = try XCTUnwrap(reader.take("rate"))
        XCTAssertThrowsError(try rate.string(expected: #"a rate as a string, such as "240kbit""#)) { error in
            let error = error as? DocumentError
            XCTAssertEqual(error?.kind, .wrongType)
            XCTAssertEqual(
                error?.description,
                #"$.downlink.rate (line 5, column 13): found the number 240: expected a rate as a string, such as "240kbit""#
            )
        }
        XCTAssertThrowsError(try rate.object(expected: "an object")) { error in
            XCTAssertEqual((error as? DocumentError)?.kind, .wrongType)
        }
        XCTAssertThrowsError(try rate.bool(expected: "true or false"))
        XCTAssertEqual(try rate.integer(UInt32.self, expected: "packets"), 240)
    }

    func testIntegers() throws {
        var reader = try downlink()
        let gaps = try XCTUnwrap(reader.take("gaps")).array(expected: "an array")
        XCTAssertEqual(try gaps[0].integer(Int.self, expected: "a gap"), 1)
        XCTAssertThrowsError(try gaps[1].integer(Int.self, expected: "a gap")) { error in
            XCTAssertEqual((error as? DocumentError)?.problem, "found the number 2.5, which is not a whole number")
            XCTAssertEqual((error as? DocumentError)?.kind, .invalidValue)
        }
        XCTAssertThrowsError(try gaps[2].integer(Int.self, expected: "a gap")) { error in
            XCTAssertEqual(
                (error as? DocumentError)?.problem, "found the number 1e3, which is not written as a plain integer")
        }
        let big = try JSONParser.parse("[4294967296, -1]").root.array(expected: "an array")
        XCTAssertThrowsError(try big[0].integer(UInt32.self, expected: "a u32")) { error in
            XCTAssertEqual((error as? DocumentError)?.problem, "found the number 4294967296, which is out of range")
        }
        XCTAssertThrowsError(try big[1].integer(UInt32.self, expected: "a u32"))
    }

    func testRequireReportsMissingKeyAtTheObject() throws {
        var reader = try downlink()
        XCTAssertThrowsError(try reader.require("amount", expected: #"{"amount": "50ms"}"#)) { error in
            let error = error as? DocumentError
            XCTAssertEqual(error?.kind, .missingKey)
            XCTAssertEqual(error?.path?.description, "$.downlink")
            XCTAssertEqual(error?.position, SourcePosition(line: 3, column: 15))
            XCTAssertEqual(error?.problem, #"missing key "amount""#)
        }
    }

    func testRootThatIsNotAnObject() throws {
        XCTAssertThrowsError(try JSONParser.parse(#""edge""#).root.object(expected: "a profile")) { error in
            XCTAssertEqual(
                (error as? DocumentError)?.description,
                #"$ (line 1, column 1): found the string "edge": expected a profile"#)
        }
    }

    func testPathDescriptions() {
        let path = JSONPath.root.appending("downlink").appending("loss").appending("gilbertElliott").appending("1-h")
        XCTAssertEqual(path.description, #"$.downlink.loss.gilbertElliott["1-h"]"#)
        XCTAssertEqual(JSONPath.root.description, "$")
        XCTAssertEqual(
            JSONPath.root.appending("items").appending(index: 3).appending("2x").description, #"$.items[3]["2x"]"#)
        XCTAssertEqual(JSONPath.root.appending("a b").appending("q\"").description, #"$["a b"]["q\""]"#)
        XCTAssertEqual(path.lastKey, "1-h")
    }

    func testSuggestions() {
        XCTAssertEqual(Suggestions.editDistance("dealy", "delay"), 1)
        XCTAssertEqual(Suggestions.editDistance("", "abc"), 3)
        XCTAssertEqual(Suggestions.editDistance("kitten", "sitting"), 3)
        XCTAssertEqual(Suggestions.closest(to: "dealy", in: ["rate", "delay", "jitter"]), "delay")
        XCTAssertEqual(Suggestions.closest(to: "Jitter", in: ["rate", "delay", "jitter"]), "jitter")
        XCTAssertEqual(Suggestions.closest(to: "queuelimt", in: ["queueLimit", "slot"]), "queueLimit")
        XCTAssertNil(Suggestions.closest(to: "bandwidth", in: ["rate", "delay"]))
    }

    func testWriterRoundTrip() throws {
        let value = JSONValue.object([
            ("name", .string("a \"quoted\"\\ line\nwith\ttab and \u{1} é 😀")),
            ("n", .number(JSONNumber(value: 1.5e3, literal: "1.5e3"))),
            ("list", .array([.bool(true), .bool(false), .null, .array([]), .object([])])),
        ])
        for indent in [nil, 2] as [Int?] {
            let text = JSONWriter.text(of: value, indent: indent)
            XCTAssertEqual(try JSONParser.parse(text).value, value)
        }
        XCTAssertEqual(
            JSONWriter.text(of: .object([("a", .array([.number(1)]))]), indent: 2), "{\n  \"a\": [\n    1\n  ]\n}")
        XCTAssertEqual(JSONWriter.text(of: .object([("a", .number(1))]), indent: nil), #"{"a":1}"#)
        XCTAssertEqual(JSONWriter.quoted("\u{1}"), #""\u0001""#)
    }
}
