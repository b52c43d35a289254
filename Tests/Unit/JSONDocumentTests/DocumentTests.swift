import Foundation
import XCTest

@testable import JSONDocument

/// `body` runs on a thread of its own. It must not open the FIFO at `path` for reading; if it does (and
/// blocks, as a plain `open` of a FIFO does), a writer comes and goes so that it returns — with a wrong
/// answer the test then reports — instead of hanging the suite.
func unblockingFIFO<T: Sendable>(_ path: String, _ body: @escaping @Sendable () -> T) -> T {
    let box = ResultBox<T>()
    let done = DispatchSemaphore(value: 0)
    Thread {
        box.value = body()
        done.signal()
    }.start()
    while done.wait(timeout: .now() + .milliseconds(20)) == .timedOut {
        let writer = open(path, O_WRONLY | O_NONBLOCK)  // succeeds only while a reader has the FIFO open
        if writer >= 0 { close(writer) }
    }
    return box.value!
}

/// What the thread of ``unblockingFIFO(_:_:)`` returns; read only after its semaphore is signalled.
final class ResultBox<T>: @unchecked Sendable { var value: T? }

final class DocumentTests: XCTestCase {
    private var directory = ""

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("linkcond-document-\(UUID())").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(atPath: directory)
    }

    private func readError(_ path: String, maximumSize: Int = 1 << 20) -> DocumentError? {
        let result = unblockingFIFO(path) { () -> Result<[UInt8], DocumentError> in
            Result { () throws(DocumentError) in try DocumentFile.read(path, maximumSize: maximumSize, expected: "a test file") }
        }
        switch result {
        case .success(let bytes):
            XCTFail("read \(bytes.count) bytes from \(path)")
            return nil
        case .failure(let error):
            return error
        }
    }

    // MARK: Files

    func testRegularFileIsRead() throws {
        let path = directory + "/doc.json"
        try Data(#"{"a": 1}"#.utf8).write(to: URL(fileURLWithPath: path))
        XCTAssertEqual(try DocumentFile.read(path, maximumSize: 100, expected: "a test file"), Array(#"{"a": 1}"#.utf8))
        let link = directory + "/link.json"
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: path)
        XCTAssertEqual(try DocumentFile.read(link, maximumSize: 100, expected: "a test file").count, 8)
    }

    func testFIFOIsRefusedWithoutOpeningIt() throws {
        let path = directory + "/fifo.json"
        XCTAssertEqual(mkfifo(path, 0o600), 0)
        let error = try XCTUnwrap(readError(path))
        XCTAssertEqual(error.kind, .unreadable)
        XCTAssertEqual(error.description, "\(path): it is a FIFO, not a regular file: expected a test file")
    }

    func testDirectoriesAndDevicesAreRefused() throws {
        XCTAssertEqual(
            readError(directory)?.description, "\(directory): it is a directory, not a regular file: expected a test file")
        XCTAssertEqual(readError("/dev/null")?.problem, "it is a character device, not a regular file")
    }

    func testMissingAndTooLargeFiles() throws {
        XCTAssertEqual(
            readError(directory + "/missing.json")?.description,
            "\(directory)/missing.json: cannot read the file: No such file or directory")
        let path = directory + "/big.json"
        try Data(repeating: 0x20, count: 101).write(to: URL(fileURLWithPath: path))
        XCTAssertEqual(
            readError(path, maximumSize: 100)?.description,
            "\(path): the file is larger than 100 bytes: expected a test file")
    }

    // MARK: Errors

    func testDescriptions() {
        let path = JSONPath.root.appending("downlink").appending("loss")
        let position = SourcePosition(line: 4, column: 13)
        XCTAssertEqual(
            DocumentError(.outOfRange, file: "p.json", path: path, position: position, problem: "p", expected: "e")
                .description,
            "p.json: $.downlink.loss (line 4, column 13): p: expected e")
        XCTAssertEqual(
            DocumentError(.outOfRange, file: "p.json", path: path, problem: "p", expected: "e").description,
            "p.json: $.downlink.loss: p: expected e")
        XCTAssertEqual(DocumentError(.unreadable, file: "p.json", problem: "gone").description, "p.json: gone")
        XCTAssertEqual(DocumentError(.conflict, file: "", path: path, problem: "p").description, "$.downlink.loss: p")
        XCTAssertEqual(DocumentError.Kind("outOfRange"), .outOfRange)
        XCTAssertNotEqual(DocumentError.Kind.conflict, .outOfRange)
    }

    func testSyntaxErrorsNameTheFile() throws {
        XCTAssertThrowsError(try JSONParser.document(Array("{\n".utf8), file: "x.json")) { error in
            XCTAssertEqual(
                "\(error)",
                "x.json: $ (line 2, column 1): unexpected end of file: expected a key in double quotes or '}' to "
                    + "close the object opened at line 1, column 1")
        }
        XCTAssertThrowsError(try JSONParser.document(Array(" \n ".utf8), file: "blank.json")) { error in
            XCTAssertEqual(
                "\(error)",
                "blank.json: $ (line 1, column 1): the file contains only whitespace: expected a JSON value, such "
                    + "as an object in braces")
        }
        let root = try JSONParser.document(Array(#"{"rate": 1}"#.utf8), file: "r.json").root
        XCTAssertThrowsError(try root.string(expected: "a string")) { error in
            XCTAssertEqual((error as? DocumentError)?.file, "r.json")
        }
    }

    // MARK: Typed reads

    private struct Problem: DocumentValueError {
        var documentKind: DocumentError.Kind { .outOfRange }
        var problem: String
        var expected: String { "a short word" }
    }

    private func element(_ text: String) throws -> JSONObjectReader {
        try JSONParser.parse(text, file: "t.json").root.object(expected: "an object")
    }

    func testParsedStringsPlaceTheParsersError() throws {
        var reader = try element("{\n  \"word\": \"elephant\", \"n\": 3}")
        let word = try XCTUnwrap(reader.take("word"))
        let parse = { (text: String) throws(Problem) -> Int in
            guard text.count < 5 else { throw Problem(problem: "\"\(text)\" is long") }
            return text.count
        }
        XCTAssertThrowsError(try word.string(expected: "a word", parse: parse)) { error in
            XCTAssertEqual(
                "\(error)", #"t.json: $.word (line 2, column 11): "elephant" is long: expected a short word"#)
            XCTAssertEqual((error as? DocumentError)?.kind, .outOfRange)
        }
        XCTAssertThrowsError(try XCTUnwrap(reader.take("n")).string(expected: "a word", parse: parse)) { error in
            XCTAssertEqual((error as? DocumentError)?.kind, .wrongType)
            XCTAssertEqual((error as? DocumentError)?.problem, "found the number 3")
        }
    }

    private enum Side: String, CaseIterable { case client, router }

    func testChoicesSuggestTheNearestOrAnAlias() throws {
        var reader = try element(#"{"a": "clinet", "b": "dut", "c": "router", "d": "qq", "e": 1}"#)
        XCTAssertThrowsError(try XCTUnwrap(reader.take("a")).choice(Side.self, noun: "a side")) { error in
            XCTAssertEqual(
                "\(error)",
                #"t.json: $.a (line 1, column 7): "clinet" is not a side (did you mean "client"?): expected "client" or "router""#
            )
        }
        XCTAssertThrowsError(
            try XCTUnwrap(reader.take("b")).choice(Side.self, noun: "a side", aliases: ["dut": "client"])
        ) { error in
            XCTAssertEqual((error as? DocumentError)?.problem, #""dut" is not a side (did you mean "client"?)"#)
        }
        XCTAssertEqual(try XCTUnwrap(reader.take("c")).choice(Side.self, noun: "a side"), .router)
        XCTAssertThrowsError(try XCTUnwrap(reader.take("d")).choice(["x", "y", "z"], noun: "a letter")) { error in
            XCTAssertEqual((error as? DocumentError)?.problem, #""qq" is not a letter"#)
            XCTAssertEqual((error as? DocumentError)?.expected, #"one of "x", "y", "z""#)
        }
        XCTAssertThrowsError(
            try XCTUnwrap(reader.take("e")).choice(["x"], noun: "a letter", typeExpected: "a letter as a string")
        ) { error in
            XCTAssertEqual((error as? DocumentError)?.expected, "a letter as a string")
        }
    }

    func testShortOrFullForms() throws {
        var reader = try element(#"{"short": "5", "full": {"value": "6"}, "typo": {"valeu": "7"}, "bad": true}"#)
        func read(_ element: JSONElement) throws(DocumentError) -> String {
            try element.shortOrFull(
                expected: "a value", keys: ["value"],
                short: { element throws(DocumentError) in try element.string(expected: "") },
                full: { fields throws(DocumentError) in
                    try fields.require("value", expected: "a value").string(expected: "a string")
                })
        }
        XCTAssertEqual(try read(XCTUnwrap(reader.take("short"))), "5")
        XCTAssertEqual(try read(XCTUnwrap(reader.take("full"))), "6")
        XCTAssertThrowsError(try read(XCTUnwrap(reader.take("typo")))) { error in
            XCTAssertEqual(
                "\(error)",
                #"t.json: $.typo.valeu (line 1, column 49): unknown key "valeu" (did you mean "value"?): expected only the key "value""#)
        }
        XCTAssertThrowsError(try read(XCTUnwrap(reader.take("bad")))) { error in
            XCTAssertEqual("\(error)", "t.json: $.bad (line 1, column 71): found true: expected a value")
        }
    }

    func testKeysThatExcludeEachOther() throws {
        var reader = try element(#"{"b": 1, "x": 2, "a": 3}"#)
        let present = reader.take(["a", "b", "c"])
        XCTAssertEqual(present.map(\.key), ["b", "a"], "document order")
        XCTAssertThrowsError(try present.atMostOne(problemSuffix: " here", expected: "one of them")) { error in
            XCTAssertEqual(
                "\(error)", #"t.json: $.a (line 1, column 23): "a" cannot be combined with "b" here: expected one of them"#)
            XCTAssertEqual((error as? DocumentError)?.kind, .conflict)
        }
        XCTAssertEqual(try reader.take(["x"]).atMostOne(expected: "")?.key, "x")
        XCTAssertNil(try reader.take(["c"]).atMostOne(expected: ""))
    }

    func testFieldsRefuseUnknownKeysAndKeepDocumentOrder() throws {
        let root = try JSONParser.parse("{\"b\": 1,\n \"a\": 2}", file: "f.json").root
        let fields = try root.fields(["a", "b", "c"], expected: "an object")
        XCTAssertEqual(fields.members.map(\.key), ["b", "a"])
        XCTAssertEqual(fields["a"]?.position, SourcePosition(line: 2, column: 7))
        XCTAssertNil(fields["c"])
        XCTAssertEqual(fields.present(["a", "c", "b"]).map(\.key), ["b", "a"])
        XCTAssertThrowsError(try fields.require("c", expected: "a c")) { error in
            XCTAssertEqual("\(error)", #"f.json: $ (line 1, column 1): missing key "c": expected a c"#)
        }
        XCTAssertThrowsError(try root.fields(["alpha"], expected: "an object")) { error in
            XCTAssertEqual(
                "\(error)", #"f.json: $.b (line 1, column 2): unknown key "b": expected only the key "alpha""#)
        }
    }

    // MARK: Locating problems found after reading

    func testLocatorFollowsWhatTheDocumentWrote() throws {
        let text = """
            {
              "d": {"loss": "150%", "jitter": {"amount": "9s"}},
              "steps": [{"name": "a"}, {"name": "b"}]
            }
            """
        let locator = DocumentLocator(file: "l.json", document: try JSONParser.parse(text))
        let d = JSONPath.root.appending("d")
        let short = locator.error(.outOfRange, at: d.appending("loss").appending("percent"), problem: "p", expected: "e")
        XCTAssertEqual(short.path?.description, "$.d.loss", "a value written short")
        XCTAssertEqual(short.position, SourcePosition(line: 2, column: 17))
        XCTAssertEqual(locator.shown(at: d.appending("loss").appending("percent"), otherwise: "1.5"), #""150%""#)

        let full = d.appending("jitter").appending("amount")
        XCTAssertEqual(locator.writtenPath(of: full), full)
        XCTAssertEqual(locator.position(of: full), SourcePosition(line: 2, column: 46))

        let absent = d.appending("jitter").appending("correlation")
        XCTAssertEqual(locator.writtenPath(of: absent), absent, "a member the document lacks stays")
        XCTAssertEqual(locator.position(of: absent), SourcePosition(line: 2, column: 35), "the nearest value")
        XCTAssertNil(locator.value(at: absent))
        XCTAssertEqual(locator.shown(at: absent, otherwise: "25%"), "25%")

        let second = JSONPath.root.appending("steps").appending(index: 1).appending("name")
        XCTAssertEqual(locator.value(at: second), .string("b"))
        XCTAssertEqual(locator.position(of: second), SourcePosition(line: 3, column: 37))

        let code = DocumentLocator(file: "made in code", document: nil)
        let error = code.error(.conflict, at: full, problem: "p", expected: "e")
        XCTAssertEqual(error.description, "made in code: $.d.jitter.amount: p: expected e")
        XCTAssertNil(error.position)
    }
}
