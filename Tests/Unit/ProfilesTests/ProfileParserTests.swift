import Foundation
import JSONDocument
import XCTest

@testable import Profiles

final class ProfileParserTests: XCTestCase {
    private let file = "profiles/bad.json"
    private let millisecond: UInt64 = 1_000_000

    private func parse(_ text: String) throws -> Profile {
        try ProfileParser.parse(text: text, source: file)
    }

    private func profileError(_ text: String, file: StaticString = #filePath, line: UInt = #line) -> ProfileError? {
        do {
            let profile = try ProfileParser.parse(text: text, source: self.file)
            XCTFail("accepted: \(profile)", file: file, line: line)
            return nil
        } catch {
            return error
        }
    }

    /// A profile named "bad" whose downlink object starts at line 3, column 15 and whose members start
    /// on line 4.
    private func withDownlink(_ members: String) -> String {
        "{\n  \"name\": \"bad\",\n  \"downlink\": {\n    \(members)\n  }\n}\n"
    }

    private func downlinkError(_ members: String, file: StaticString = #filePath, line: UInt = #line) -> ProfileError? {
        profileError(withDownlink(members), file: file, line: line)
    }

    private func downlink(_ members: String) throws -> LinkConditions {
        try parse(withDownlink(members)).downlink
    }

    private static let directionKeys =
        #""rate", "delay", "jitter", "jitterModel", "loss", "duplicate", "corrupt", "reorder", "slot", "queueLimit", "queue", "ecn", "trace", "delayTrace", "lossTrace""#

    // MARK: The five "done when" cases

    func testMisspelledKey() throws {
        let error = try XCTUnwrap(downlinkError(#""dealy": "400ms""#))
        XCTAssertEqual(error.kind, .unknownKey)
        XCTAssertEqual(error.file, "profiles/bad.json")
        XCTAssertEqual(error.path?.description, "$.downlink.dealy")
        XCTAssertEqual(error.position, SourcePosition(line: 4, column: 5))
        XCTAssertEqual(
            error.description,
            #"profiles/bad.json: $.downlink.dealy (line 4, column 5): unknown key "dealy" (did you mean "delay"?): "#
                + "expected one of \(Self.directionKeys)")
    }

    func testLossOutOfRange() throws {
        let error = try XCTUnwrap(downlinkError(#""loss": "150%""#))
        XCTAssertEqual(error.kind, .outOfRange)
        XCTAssertEqual(
            error.description,
            #"profiles/bad.json: $.downlink.loss (line 4, column 13): "150%" is out of range: expected a percentage from 0% to 100%"#
        )
    }

    func testNegativeDelay() throws {
        let error = try XCTUnwrap(downlinkError(#""delay": "-40ms""#))
        XCTAssertEqual(error.kind, .outOfRange)
        XCTAssertEqual(
            error.description,
            #"profiles/bad.json: $.downlink.delay (line 4, column 14): "-40ms" is negative: expected a time from 0 to 4294s"#
        )

        let number = try XCTUnwrap(downlinkError(#""delay": -40"#))
        XCTAssertEqual(number.kind, .wrongType)
        XCTAssertEqual(
            number.description,
            #"profiles/bad.json: $.downlink.delay (line 4, column 14): found the number -40: expected a time as a string, such as "400ms""#
        )
    }

    func testFastAsARate() throws {
        let error = try XCTUnwrap(downlinkError(#""rate": "fast""#))
        XCTAssertEqual(error.kind, .invalidValue)
        XCTAssertEqual(
            error.description,
            #"profiles/bad.json: $.downlink.rate (line 4, column 13): "fast" is not a rate: expected "#
                + Quantity.rateExpectation)
        XCTAssertTrue(error.description.contains(#"a rate such as "240kbit""#))

        let unquoted = try XCTUnwrap(downlinkError(#""rate": fast"#))
        XCTAssertEqual(unquoted.kind, .syntax)
        XCTAssertEqual(unquoted.path?.description, "$.downlink.rate")
        XCTAssertEqual(unquoted.position, SourcePosition(line: 4, column: 13))
        XCTAssertTrue(
            unquoted.description.hasPrefix(
                "profiles/bad.json: $.downlink.rate (line 4, column 13): unexpected word 'fast': expected a value"))
    }

    func testTruncatedFile() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("linkcond-profile-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("truncated.json").path
        try Data(
            "{\n  \"name\": \"truncated\",\n  \"downlink\": {\n    \"rate\": \"240kbit\",\n    \"delay\": \"400ms\"\n"
                .utf8
        )
        .write(to: URL(fileURLWithPath: path))
        do {
            _ = try ProfileParser.load(path: path)
            XCTFail("loaded")
        } catch {
            XCTAssertEqual(error.kind, .syntax)
            XCTAssertEqual(error.file, path)
            XCTAssertEqual(error.path?.description, "$.downlink")
            XCTAssertEqual(error.position, SourcePosition(line: 6, column: 1))
            XCTAssertEqual(
                error.description,
                "\(path): $.downlink (line 6, column 1): unexpected end of file: expected ',' or '}' to close the object opened at line 3, column 15"
            )
        }

        let midString = try XCTUnwrap(profileError("{\"name\": \"x\", \"downlink\": {\"delay\": \"40"))
        XCTAssertEqual(
            midString.description,
            #"profiles/bad.json: $.downlink.delay (line 1, column 40): unexpected end of file: expected '"' to close the string started at line 1, column 37"#
        )
    }

    // MARK: Files

    func testMissingAndEmptyFiles() throws {
        XCTAssertThrowsError(try ProfileParser.load(path: "/nonexistent/edge.json")) { error in
            let error = error as? ProfileError
            XCTAssertEqual(error?.kind, .unreadable)
            XCTAssertEqual(
                error?.description, "/nonexistent/edge.json: cannot read the file: No such file or directory")
        }
        let empty = try XCTUnwrap(profileError(""))
        XCTAssertEqual(empty.kind, .syntax)
        XCTAssertEqual(
            empty.description,
            "profiles/bad.json: $ (line 1, column 1): unexpected end of file: expected a JSON value (the file is empty)"
        )
        XCTAssertEqual(try XCTUnwrap(profileError("[]")).kind, .wrongType)
    }

    // MARK: Top level

    func testTopLevelKeys() throws {
        let missing = try XCTUnwrap(profileError(#"{"description": "no name"}"#))
        XCTAssertEqual(missing.kind, .missingKey)
        XCTAssertEqual(
            missing.description,
            #"profiles/bad.json: $ (line 1, column 1): missing key "name": expected a "name" such as "edge" (the file name without .json)"#
        )

        let unknown = try XCTUnwrap(profileError("{\"name\": \"x\",\n \"dnsdelay\": \"1s\"}"))
        XCTAssertEqual(unknown.kind, .unknownKey)
        XCTAssertEqual(
            unknown.description,
            #"profiles/bad.json: $.dnsdelay (line 2, column 2): unknown key "dnsdelay" (did you mean "dnsDelay"?): expected one of "name", "description", "downlink", "uplink", "dnsDelay", "targets""#
        )

        let badName = try XCTUnwrap(profileError(#"{"name": "Edge, Lossy"}"#))
        XCTAssertEqual(badName.kind, .invalidValue)
        XCTAssertEqual(badName.path?.description, "$.name")
        XCTAssertEqual(try XCTUnwrap(profileError(#"{"name": 3}"#)).kind, .wrongType)
        XCTAssertEqual(try XCTUnwrap(profileError(#"{"name": "x", "downlink": "fast"}"#)).kind, .wrongType)

        let duplicate = try XCTUnwrap(profileError("{\"name\": \"x\",\n\"name\": \"y\"}"))
        XCTAssertEqual(duplicate.kind, .syntax)
        XCTAssertEqual(
            duplicate.description,
            #"profiles/bad.json: $.name (line 2, column 1): duplicate key "name": expected each key at most once in an object; "name" was first given at line 1, column 2"#
        )
    }

    func testMinimalProfiles() throws {
        let bare = try parse(#"{"name": "bare"}"#)
        XCTAssertEqual(bare, Profile(name: "bare", source: file))
        XCTAssertTrue(bare.isNeutral)

        let dns = try parse(#"{"name": "slow-dns", "dnsDelay": "3s"}"#)
        XCTAssertEqual(dns.dnsDelay, 3000 * millisecond)
        XCTAssertFalse(dns.isNeutral)
        XCTAssertEqual(dns.downlink, .unconditioned)
    }

    // MARK: Units inside profiles

    func testAmbiguousRateInAProfile() throws {
        let error = try XCTUnwrap(downlinkError(#""rate": "240kbps""#))
        XCTAssertEqual(error.kind, .ambiguousUnit)
        XCTAssertEqual(
            error.description,
            #"profiles/bad.json: $.downlink.rate (line 4, column 13): "240kbps" is ambiguous: tc reads kbps as kilobytes per second (1920 kbit/s): expected "240kbit" for kilobits per second, or "240kbyte/s" for kilobytes per second"#
        )
        XCTAssertEqual(try XCTUnwrap(downlinkError(#""rate": "240KB/s""#)).kind, .ambiguousUnit)
        XCTAssertEqual(try XCTUnwrap(downlinkError(#""rate": "240""#)).kind, .ambiguousUnit)
        XCTAssertEqual(try XCTUnwrap(downlinkError(#""rate": 240000"#)).kind, .wrongType)
    }

    func testSpacedTimeIsRefused() throws {
        let error = try XCTUnwrap(downlinkError(#""delay": "400 ms""#))
        XCTAssertEqual(error.problem, #""400 ms" contains a space"#)
        XCTAssertEqual(error.expected, #"no spaces: "400ms""#)
    }

    // MARK: Every field

    private let everyField = """
        {
          "name": "every-field",
          "description": "Uses every key.",
          "downlink": {
            "rate": "1.5mbit",
            "delay": "100ms",
            "jitter": {"amount": "20ms", "correlation": "25%", "distribution": "paretonormal"},
            "loss": {"gilbertElliott": {"p": "1%", "r": "10%", "1-h": "70%", "1-k": "0.1%"}},
            "duplicate": {"percent": "1%", "correlation": "10%"},
            "corrupt": "0.1%",
            "reorder": {"percent": "25%", "correlation": "50%", "gap": 5},
            "slot": {"min": "10ms", "max": "20ms", "packets": 10, "bytes": 1500},
            "queueLimit": 250,
            "ecn": true
          },
          "uplink": {
            "rate": "64kbyte/s",
            "delay": "50ms",
            "jitter": "5ms",
            "loss": {"fourState": {"p13": "2%", "p31": "50%", "p32": "10%", "p23": "40%", "p14": "1%"}},
            "duplicate": "0.5%",
            "corrupt": {"percent": "0.2%", "correlation": "5%"},
            "reorder": "10%",
            "slot": {"min": "1ms"}
          },
          "dnsDelay": "250ms"
        }
        """

    private var everyFieldProfile: Profile {
        let ms = millisecond
        return Profile(
            name: "every-field", description: "Uses every key.",
            downlink: LinkConditions(
                rate: 1_500_000, delay: 100 * ms, jitter: 20 * ms, delayCorrelation: 0.25, distribution: .paretonormal,
                loss: .gilbertElliott(p: 0.01, r: 0.1, oneMinusH: 0.7, oneMinusK: 0.001),
                duplicate: Chance(0.01, correlation: 0.1), corrupt: Chance(0.001),
                reorder: Reorder(0.25, correlation: 0.5, gap: 5),
                slot: Slot(minDelay: 10 * ms, maxDelay: 20 * ms, packets: 10, bytes: 1500), queueLimit: 250, ecn: true),
            uplink: LinkConditions(
                rate: 64_000 * 8, delay: 50 * ms, jitter: 5 * ms,
                loss: .fourState(p13: 0.02, p31: 0.5, p32: 0.1, p23: 0.4, p14: 0.01), duplicate: Chance(0.005),
                corrupt: Chance(0.002, correlation: 0.05), reorder: Reorder(0.1), slot: Slot(minDelay: ms)),
            dnsDelay: 250 * ms, source: file)
    }

    func testEveryField() throws {
        XCTAssertEqual(try parse(everyField), everyFieldProfile)
    }

    func testRoundTripOfEveryField() throws {
        let text = ProfileParser.jsonText(of: everyFieldProfile)
        XCTAssertEqual(try parse(text), everyFieldProfile)
        // The written form is the shortest one.
        XCTAssertTrue(text.contains(#""rate": "1500kbit""#))
        XCTAssertTrue(text.contains(#""rate": "512kbit""#))
        XCTAssertTrue(text.contains(#""corrupt": "0.1%""#))
        XCTAssertTrue(text.contains(#""reorder": "10%""#))
        XCTAssertTrue(text.contains(#""slot": {"#))
        XCTAssertTrue(text.contains(#""1-h": "70%""#))
    }

    func testRoundTripOfRandomLossAndJitterForms() throws {
        let profile = Profile(
            name: "forms",
            downlink: LinkConditions(
                delay: 10 * millisecond, jitter: 30 * millisecond, loss: .random(probability: 0.03, correlation: 0.25)),
            uplink: LinkConditions(
                delay: 1, jitter: 1, distribution: .normal, loss: .random(probability: 1, correlation: 0),
                reorder: Reorder(0.5, gap: 3), queueLimit: 1),
            source: file)
        XCTAssertEqual(try parse(ProfileParser.jsonText(of: profile)), profile)
    }

    // MARK: Jitter

    func testJitterForms() throws {
        XCTAssertEqual(try downlink(#""delay": "40ms", "jitter": "20ms""#).jitter, 20 * millisecond)
        // Jitter larger than the delay is allowed.
        let wide = try downlink(#""delay": "10ms", "jitter": "50ms""#)
        XCTAssertEqual(wide.jitter, 50 * millisecond)

        let missing = try XCTUnwrap(downlinkError(#""delay": "40ms", "jitter": {"correlation": "25%"}"#))
        XCTAssertEqual(missing.kind, .missingKey)
        XCTAssertEqual(missing.path?.description, "$.downlink.jitter")

        let typo = try XCTUnwrap(
            downlinkError(#""delay": "40ms", "jitter": {"amount": "5ms", "distribution": "normla"}"#))
        XCTAssertEqual(typo.kind, .invalidValue)
        XCTAssertEqual(typo.problem, #""normla" is not a distribution (did you mean "normal"?)"#)
        XCTAssertEqual(typo.expected, #"one of "uniform", "normal", "pareto", "paretonormal""#)
        XCTAssertEqual(typo.path?.description, "$.downlink.jitter.distribution")

        XCTAssertEqual(try XCTUnwrap(downlinkError(#""jitter": 5"#)).kind, .wrongType)
    }

    func testDelayCorrelationNeedsJitter() throws {
        let error = try XCTUnwrap(downlinkError(#""delay": "40ms", "jitter": {"amount": "0", "correlation": "25%"}"#))
        XCTAssertEqual(error.kind, .conflict)
        XCTAssertEqual(error.path?.description, "$.downlink.jitter.correlation")
        XCTAssertEqual(error.position, SourcePosition(line: 4, column: 63))
        XCTAssertEqual(error.problem, "a delay correlation without jitter")
    }

    func testDistributionNeedsDelayAndJitter() throws {
        let error = try XCTUnwrap(downlinkError(#""jitter": {"amount": "10ms", "distribution": "normal"}"#))
        XCTAssertEqual(error.kind, .conflict)
        XCTAssertEqual(error.path?.description, "$.downlink.jitter.distribution")
        XCTAssertEqual(error.problem, "a distribution needs a delay and a jitter")
        XCTAssertEqual(
            try downlink(#""delay": "40ms", "jitter": {"amount": "10ms", "distribution": "pareto"}"#).distribution,
            .pareto)
    }

    // MARK: Loss

    func testLossForms() throws {
        XCTAssertEqual(try downlink(#""loss": "1%""#).loss, .random(probability: 0.01, correlation: 0))
        XCTAssertEqual(
            try downlink(#""loss": {"percent": "3%", "correlation": "25%"}"#).loss,
            .random(probability: 0.03, correlation: 0.25))
        // tc's defaults for the parameters left out.
        XCTAssertEqual(
            try downlink(#""loss": {"gilbertElliott": {"p": "5%"}}"#).loss,
            .gilbertElliott(p: 0.05, r: 1, oneMinusH: 1, oneMinusK: 0))
        XCTAssertEqual(
            try downlink(#""loss": {"fourState": {"p13": "5%"}}"#).loss,
            .fourState(p13: 0.05, p31: 1 - 0.05, p32: 0, p23: 1, p14: 0))
    }

    func testLossModelErrors() throws {
        let none = try XCTUnwrap(downlinkError(#""loss": {"correlation": "25%"}"#))
        XCTAssertEqual(none.kind, .missingKey)
        XCTAssertEqual(none.problem, "no loss model")

        let two = try XCTUnwrap(downlinkError(#""loss": {"percent": "1%", "gilbertElliott": {"p": "1%"}}"#))
        XCTAssertEqual(two.kind, .conflict)
        XCTAssertEqual(two.path?.description, "$.downlink.loss.gilbertElliott")
        XCTAssertEqual(two.problem, #""gilbertElliott" cannot be combined with "percent""#)

        let correlation = try XCTUnwrap(downlinkError(#""loss": {"fourState": {"p13": "1%"}, "correlation": "5%"}"#))
        XCTAssertEqual(correlation.kind, .conflict)
        XCTAssertEqual(correlation.path?.description, "$.downlink.loss.correlation")

        let typo = try XCTUnwrap(downlinkError(#""loss": {"gilbertElliott": {"p": "1%", "1-j": "5%"}}"#))
        XCTAssertEqual(typo.kind, .unknownKey)
        XCTAssertEqual(typo.path?.description, #"$.downlink.loss.gilbertElliott["1-j"]"#)
        XCTAssertEqual(typo.problem, #"unknown key "1-j" (did you mean "1-h"?)"#)

        let missingP = try XCTUnwrap(downlinkError(#""loss": {"gilbertElliott": {"r": "5%"}}"#))
        XCTAssertEqual(missingP.kind, .missingKey)
        XCTAssertEqual(missingP.problem, #"missing key "p""#)

        let sums = try XCTUnwrap(downlinkError(#""loss": {"fourState": {"p13": "60%", "p14": "50%"}}"#))
        XCTAssertEqual(sums.kind, .conflict)
        XCTAssertEqual(sums.path?.description, "$.downlink.loss.fourState")
        XCTAssertEqual(sums.problem, "p13 + p14 is 110%, above 100%")
        XCTAssertEqual(sums.expected, "p13 + p14 at most 100% (both leave state 1)")

        let outOfRange = try XCTUnwrap(downlinkError(#""loss": {"gilbertElliott": {"p": "1%", "r": "101%"}}"#))
        XCTAssertEqual(outOfRange.kind, .outOfRange)
        XCTAssertEqual(outOfRange.path?.description, "$.downlink.loss.gilbertElliott.r")

        let zero = try XCTUnwrap(downlinkError(#""loss": {"percent": "0%", "correlation": "25%"}"#))
        XCTAssertEqual(zero.kind, .conflict)
        XCTAssertEqual(zero.path?.description, "$.downlink.loss.correlation")
    }

    // MARK: Duplicate, corrupt, reorder

    func testDuplicateAndCorrupt() throws {
        let conditions = try downlink(#""duplicate": "1%", "corrupt": {"percent": "0.5%", "correlation": "10%"}"#)
        XCTAssertEqual(conditions.duplicate, Chance(0.01))
        XCTAssertEqual(conditions.corrupt, Chance(0.005, correlation: 0.1))
        let missing = try XCTUnwrap(downlinkError(#""duplicate": {"correlation": "10%"}"#))
        XCTAssertEqual(missing.kind, .missingKey)
        XCTAssertEqual(try XCTUnwrap(downlinkError(#""corrupt": true"#)).kind, .wrongType)
    }

    func testReorderNeedsDelay() throws {
        let error = try XCTUnwrap(downlinkError(#""reorder": "25%""#))
        XCTAssertEqual(error.kind, .conflict)
        XCTAssertEqual(
            error.description,
            #"profiles/bad.json: $.downlink.reorder (line 4, column 16): reordering needs a delay: expected a "delay" above 0 in the same direction: netem reorders by sending some packets without the delay"#
        )
    }

    func testReorderGap() throws {
        XCTAssertEqual(
            try downlink(#""delay": "10ms", "reorder": {"percent": "25%", "gap": 5}"#).reorder, Reorder(0.25, gap: 5))
        XCTAssertEqual(try downlink(#""delay": "10ms", "reorder": "25%""#).reorder?.gap, 1)

        let zeroGap = try XCTUnwrap(downlinkError(#""delay": "10ms", "reorder": {"percent": "25%", "gap": 0}"#))
        XCTAssertEqual(zeroGap.kind, .outOfRange)
        XCTAssertEqual(zeroGap.path?.description, "$.downlink.reorder.gap")

        let fraction = try XCTUnwrap(downlinkError(#""delay": "10ms", "reorder": {"percent": "25%", "gap": 2.5}"#))
        XCTAssertEqual(fraction.kind, .invalidValue)
        XCTAssertEqual(fraction.problem, "found the number 2.5, which is not a whole number")

        let withoutReorder = try XCTUnwrap(downlinkError(#""delay": "10ms", "reorder": {"percent": "0%", "gap": 5}"#))
        XCTAssertEqual(withoutReorder.kind, .conflict)
        XCTAssertEqual(withoutReorder.path?.description, "$.downlink.reorder.gap")
        XCTAssertEqual(withoutReorder.problem, "a gap beside a reorder probability of 0%")
    }

    // MARK: Slot, queue limit, ecn

    func testSlot() throws {
        XCTAssertEqual(
            try downlink(#""slot": {"min": "5ms"}"#).slot, Slot(minDelay: 5 * millisecond, maxDelay: 5 * millisecond))
        let inverted = try XCTUnwrap(downlinkError(#""slot": {"min": "20ms", "max": "10ms"}"#))
        XCTAssertEqual(inverted.kind, .conflict)
        XCTAssertEqual(inverted.path?.description, "$.downlink.slot.max")
        XCTAssertEqual(inverted.problem, #""max" (10ms) is below "min" (20ms)"#)
        XCTAssertEqual(try XCTUnwrap(downlinkError(#""slot": {"max": "10ms"}"#)).kind, .missingKey)
        XCTAssertEqual(try XCTUnwrap(downlinkError(#""slot": {"min": "0"}"#)).kind, .outOfRange)
        let packets = try XCTUnwrap(downlinkError(#""slot": {"min": "1ms", "packets": 0}"#))
        XCTAssertEqual(packets.kind, .outOfRange)
        XCTAssertEqual(packets.path?.description, "$.downlink.slot.packets")
        XCTAssertEqual(try XCTUnwrap(downlinkError(#""slot": {"min": "1ms", "bytes": 2147483648}"#)).kind, .outOfRange)
        XCTAssertEqual(try XCTUnwrap(downlinkError(#""slot": "10ms""#)).kind, .wrongType)
    }

    func testQueueLimit() throws {
        XCTAssertEqual(try downlink(#""queueLimit": 4294967295"#).queueLimit, UInt32.max)
        let zero = try XCTUnwrap(downlinkError(#""queueLimit": 0"#))
        XCTAssertEqual(zero.kind, .outOfRange)
        XCTAssertEqual(
            zero.description,
            "profiles/bad.json: $.downlink.queueLimit (line 4, column 19): 0 is out of range: expected a queue limit in packets: a whole number from 1 to 4294967295"
        )
        XCTAssertEqual(try XCTUnwrap(downlinkError(#""queueLimit": -5"#)).kind, .outOfRange)
        XCTAssertEqual(try XCTUnwrap(downlinkError(#""queueLimit": 1.5"#)).kind, .invalidValue)
        XCTAssertEqual(try XCTUnwrap(downlinkError(#""queueLimit": "100""#)).kind, .wrongType)
    }

    func testEcnNeedsLoss() throws {
        let error = try XCTUnwrap(downlinkError(#""ecn": true"#))
        XCTAssertEqual(error.kind, .conflict)
        XCTAssertEqual(error.path?.description, "$.downlink.ecn")
        XCTAssertEqual(error.problem, "ecn without loss")
        XCTAssertTrue(try downlink(#""loss": "1%", "ecn": true"#).ecn)
        XCTAssertFalse(try downlink(#""ecn": false"#).ecn)
        XCTAssertEqual(try XCTUnwrap(downlinkError(#""ecn": "yes""#)).kind, .wrongType)
    }

    // MARK: Profiles made in code

    func testValidateCodeMadeProfiles() throws {
        XCTAssertNoThrow(try ProfileParser.validate(everyFieldProfile))
        let reorder = Profile(name: "x", downlink: LinkConditions(reorder: Reorder(0.1)))
        XCTAssertThrowsError(try ProfileParser.validate(reorder)) { error in
            let error = error as? ProfileError
            XCTAssertEqual(error?.kind, .conflict)
            XCTAssertNil(error?.position)
            XCTAssertEqual(
                error?.description,
                #"profile "x": $.downlink.reorder: reordering needs a delay: expected a "delay" above 0 in the same direction: netem reorders by sending some packets without the delay"#
            )
        }
        let cases: [(Profile, ProfileError.Kind, String)] = [
            (Profile(name: "Bad Name"), .invalidValue, "$.name"),
            (Profile(name: "x", uplink: LinkConditions(rate: 7)), .outOfRange, "$.uplink.rate"),
            (
                Profile(name: "x", uplink: LinkConditions(delay: Quantity.maximumTime + 1)), .outOfRange,
                "$.uplink.delay"
            ),
            (Profile(name: "x", dnsDelay: Quantity.maximumTime + 1), .outOfRange, "$.dnsDelay"),
            (
                Profile(name: "x", uplink: LinkConditions(loss: .random(probability: 1.5, correlation: 0))),
                .outOfRange, "$.uplink.loss.percent"
            ),
            (
                Profile(name: "x", uplink: LinkConditions(loss: .random(probability: .nan, correlation: 0))),
                .outOfRange, "$.uplink.loss.percent"
            ),
            (Profile(name: "x", uplink: LinkConditions(queueLimit: 0)), .outOfRange, "$.uplink.queueLimit"),
            (
                Profile(name: "x", uplink: LinkConditions(delay: 1, reorder: Reorder(0.1, gap: 0))), .outOfRange,
                "$.uplink.reorder.gap"
            ),
            (
                Profile(name: "x", uplink: LinkConditions(jitter: 1, delayCorrelation: -0.1)), .outOfRange,
                "$.uplink.jitter.correlation"
            ),
            (
                Profile(name: "x", uplink: LinkConditions(slot: Slot(minDelay: 2, maxDelay: 1))), .conflict,
                "$.uplink.slot.max"
            ),
            (
                Profile(
                    name: "x",
                    uplink: LinkConditions(loss: .gilbertElliott(p: 0, r: 1, oneMinusH: 1, oneMinusK: 0), ecn: true)),
                .conflict, "$.uplink.ecn"
            ),
        ]
        for (profile, kind, path) in cases {
            XCTAssertThrowsError(try ProfileParser.validate(profile), path) { error in
                XCTAssertEqual((error as? ProfileError)?.kind, kind, path)
                XCTAssertEqual((error as? ProfileError)?.path?.description, path)
            }
        }
    }

    func testNeutrality() {
        XCTAssertTrue(LinkConditions.unconditioned.isNeutral)
        XCTAssertTrue(LinkConditions(loss: .random(probability: 0, correlation: 0), queueLimit: 10).isNeutral)
        XCTAssertTrue(LinkConditions(loss: .fourState(p13: 0, p31: 1, p32: 0, p23: 1, p14: 0)).isNeutral)
        XCTAssertFalse(LinkConditions(rate: 8).isNeutral)
        XCTAssertFalse(LinkConditions(jitter: 1).isNeutral)
        XCTAssertFalse(LinkConditions(loss: .gilbertElliott(p: 0, r: 1, oneMinusH: 1, oneMinusK: 0.01)).isNeutral)
        XCTAssertFalse(LinkConditions(duplicate: Chance(0.01)).isNeutral)
        XCTAssertFalse(LinkConditions(slot: Slot(minDelay: 1)).isNeutral)
        XCTAssertFalse(Profile(name: "x", dnsDelay: 1).isNeutral)
        XCTAssertTrue(Profile(name: "x").isNeutral)
    }
}
