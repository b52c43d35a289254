import Foundation
import JSONDocument
import XCTest

@testable import Profiles

/// Profiles as documents: where each range rule is checked, writing and reading back, and the files a
/// profile may come from.
final class ProfileDocumentTests: XCTestCase {
    private let file = "profiles/bad.json"

    /// `profiles/` in the source tree.
    private static let catalog = ProfileCatalog(
        directory: URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("profiles").path)

    private func error(downlink members: String, line: UInt = #line) -> String? {
        do {
            let profile = try ProfileParser.parse(
                text: "{\n  \"name\": \"bad\",\n  \"downlink\": {\n    \(members)\n  }\n}\n", source: file)
            XCTFail("accepted: \(profile)", line: line)
            return nil
        } catch {
            return error.description
        }
    }

    // MARK: Ranges

    /// Every range is the validator's: the same message for a value read from a file (quoted as written,
    /// at its position) and for a profile made in code.
    func testRangesAreCheckedOnce() throws {
        let cases: [(String, String)] = [
            (
                #""rate": "4bit""#,
                #"$.downlink.rate (line 4, column 13): "4bit" is too low: expected a rate of at least 8bit (one byte per second); leave "rate" out for an unlimited link"#
            ),
            (#""rate": "0kbit""#, #"$.downlink.rate (line 4, column 13): "0kbit" is too low: expected a rate"#),
            (
                #""delay": "4295s""#,
                #"$.downlink.delay (line 4, column 14): "4295s" is out of range: expected a time from 0 to 4294s"#
            ),
            (
                #""delay": "4294.000000001s""#,
                #"$.downlink.delay (line 4, column 14): "4294.000000001s" is out of range: expected a time from 0 to 4294s"#
            ),
            (
                #""delay": "1s", "jitter": "5000s""#,
                #"$.downlink.jitter (line 4, column 30): "5000s" is out of range"#
            ),
            (
                #""delay": "1s", "jitter": {"amount": "5000s"}"#,
                #"$.downlink.jitter.amount (line 4, column 41): "5000s" is out of range"#
            ),
            (
                #""loss": "100.01%""#,
                #"$.downlink.loss (line 4, column 13): "100.01%" is out of range: expected a percentage from 0% to 100%"#
            ),
            (
                #""loss": {"percent": "150%", "correlation": "1%"}"#,
                #"$.downlink.loss.percent (line 4, column 25): "150%" is out of range"#
            ),
            (
                #""delay": "1s", "jitter": {"amount": "1ms", "correlation": "101%"}"#,
                #"$.downlink.jitter.correlation (line 4, column 63): "101%" is out of range"#
            ),
            (
                #""slot": {"min": "1ms", "max": "4295s"}"#,
                #"$.downlink.slot.max (line 4, column 35): "4295s" is out of range"#
            ),
            (
                #""slot": {"min": "1ms", "packets": 2147483648}"#,
                "$.downlink.slot.packets (line 4, column 39): 2147483648 is out of range: expected packets per slot: "
                    + "a whole number from 1 to 2147483647"
            ),
            (
                #""delay": "1s", "reorder": {"percent": "1%", "gap": 0}"#,
                "$.downlink.reorder.gap (line 4, column 56): 0 is out of range: expected a gap in packets: a whole "
                    + "number from 1 to 4294967295 (every gap-th packet may be reordered)"
            ),
        ]
        for (members, message) in cases {
            let description = try XCTUnwrap(error(downlink: members), members)
            XCTAssertTrue(description.hasPrefix("profiles/bad.json: " + message), "\(description)\nis not\n\(message)")
        }
        let made = Profile(name: "x", uplink: LinkConditions(rate: 4, loss: .random(probability: 1.5, correlation: 0)))
        XCTAssertThrowsError(try ProfileParser.validate(made)) { error in
            XCTAssertEqual(
                "\(error)",
                #"profile "x": $.uplink.rate: 4bit is too low: expected a rate of at least 8bit (one byte per second); leave "rate" out for an unlimited link"#
            )
        }
        var lossy = made
        lossy.uplink.rate = nil
        XCTAssertThrowsError(try ProfileParser.validate(lossy)) { error in
            XCTAssertEqual(
                "\(error)",
                #"profile "x": $.uplink.loss.percent: 150% is out of range: expected a percentage from 0% to 100%"#)
        }
    }

    func testDNSDelayIsInRangeToo() throws {
        XCTAssertThrowsError(try ProfileParser.parse(text: "{\"name\": \"x\",\n\"dnsDelay\": \"5000s\"}", source: file)) {
            XCTAssertEqual(
                "\($0)",
                #"profiles/bad.json: $.dnsDelay (line 2, column 13): "5000s" is out of range: expected a time from 0 to 4294s"#)
        }
    }

    // MARK: Writing and reading back

    func testEveryCatalogProfileReadsBackFromWhatIsWritten() throws {
        let profiles = try Self.catalog.all()
        XCTAssertGreaterThanOrEqual(profiles.count, 14)
        for profile in profiles {
            let text = ProfileParser.jsonText(of: profile)
            let again = try ProfileParser.parse(text: text, source: try XCTUnwrap(profile.source))
            XCTAssertEqual(again, profile, text)
            XCTAssertEqual(ProfileParser.jsonText(of: again), text, "writing is stable")
        }
    }

    func testWrittenProfilesAreValid() throws {
        // What the writer produces for a valid profile is accepted as it is (no range is widened by writing).
        let edge = try Self.catalog.profile(named: "edge")
        XCTAssertNoThrow(try ProfileParser.validate(edge))
        XCTAssertEqual(
            ProfileParser.jsonText(of: edge),
            """
            {
              "name": "edge",
              "description": \(JSONWriter.quoted(edge.description)),
              "downlink": {
                "rate": "240kbit",
                "delay": "400ms",
                "queue": "1600ms"
              },
              "uplink": {
                "rate": "200kbit",
                "delay": "440ms",
                "queue": "1600ms"
              }
            }

            """)
    }

    // MARK: Files

    func testWhitespaceOnlyFileSaysSo() throws {
        XCTAssertThrowsError(try ProfileParser.parse(text: "\n  \n", source: file)) {
            XCTAssertEqual(
                "\($0)",
                "profiles/bad.json: $ (line 1, column 1): the file contains only whitespace: expected a JSON value, "
                    + "such as an object in braces")
        }
    }

    func testAFIFOIsRefusedAtOnce() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("linkcond-fifo-\(UUID())").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/edge.json"
        XCTAssertEqual(mkfifo(path, 0o600), 0)
        let message = unblockingFIFO(path) { () -> String in
            do throws(ProfileError) {
                return "loaded \(try ProfileParser.load(path: path))"
            } catch {
                return error.description
            }
        }
        XCTAssertEqual(message, "\(path): it is a FIFO, not a regular file: expected a profile file")
        let catalog = ProfileCatalog(directory: directory)
        let named = unblockingFIFO(path) { () -> String in
            do throws(ProfileError) {
                return "loaded \(try catalog.profile(named: "edge"))"
            } catch {
                return "\(error.kind): \(error.problem)"
            }
        }
        XCTAssertEqual(named, "unreadable: it is a FIFO, not a regular file")
    }
}

/// `body` runs on a thread of its own. It must not open the FIFO at `path` for reading; if it does (and
/// blocks, as a plain `open` of a FIFO does), a writer comes and goes so that it returns — with a wrong
/// answer the test then reports — instead of hanging the suite.
private func unblockingFIFO<T: Sendable>(_ path: String, _ body: @escaping @Sendable () -> T) -> T {
    let box = ResultBox<T>()
    let done = DispatchSemaphore(value: 0)
    Thread {
        box.value = body()
        done.signal()
    }.start()
    while done.wait(timeout: .now() + .milliseconds(20)) == .timedOut {
        let writer = open(path, O_WRONLY | O_NONBLOCK)
        if writer >= 0 { close(writer) }
    }
    return box.value!
}

/// What the thread of ``unblockingFIFO(_:_:)`` returns; read only after its semaphore is signalled.
private final class ResultBox<T>: @unchecked Sendable { var value: T? }
