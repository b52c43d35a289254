import JSONDocument
import XCTest

@testable import Profiles

/// The fidelity fields of a direction: the jitter model, the queue, and the delay and loss traces.
final class ProfileFidelityTests: XCTestCase {
    private let file = "profiles/bad.json"

    private func withDownlink(_ members: String) -> String {
        "{\n  \"name\": \"bad\",\n  \"downlink\": {\n    \(members)\n  }\n}\n"
    }

    private func downlink(_ members: String) throws -> LinkConditions {
        try ProfileParser.parse(text: withDownlink(members), source: file).downlink
    }

    private func downlinkError(_ members: String, file: StaticString = #filePath, line: UInt = #line) -> ProfileError? {
        do {
            let profile = try ProfileParser.parse(text: withDownlink(members), source: self.file)
            XCTFail("accepted: \(profile)", file: file, line: line)
            return nil
        } catch {
            return error
        }
    }

    private func roundTrip(_ conditions: LinkConditions, file: StaticString = #filePath, line: UInt = #line) throws {
        let profile = Profile(name: "trip", downlink: conditions, source: self.file)
        XCTAssertEqual(try ProfileParser.parse(text: ProfileParser.jsonText(of: profile), source: self.file), profile, file: file, line: line)
    }

    // MARK: Jitter model

    func testJitterModelDefaultsToOrderedAndReadsBothModels() throws {
        let plain = try downlink(#""delay": "40ms", "jitter": "10ms""#)
        XCTAssertNil(plain.jitterModel)
        XCTAssertEqual(plain.effectiveJitterModel, .ordered)
        XCTAssertEqual(try downlink(#""delay": "40ms", "jitter": "10ms", "jitterModel": "netem""#).jitterModel, .netem)
        XCTAssertEqual(try downlink(#""delay": "40ms", "jitter": "10ms", "jitterModel": "ordered""#).jitterModel, .ordered)
        try roundTrip(LinkConditions(delay: 40_000_000, jitter: 10_000_000, jitterModel: .netem))
        let text = ProfileParser.jsonText(of: Profile(name: "m", downlink: LinkConditions(delay: 1, jitter: 1, jitterModel: .netem)))
        XCTAssertTrue(text.contains(#""jitterModel": "netem""#), text)
    }

    func testABadJitterModelIsNamedWithItsPath() throws {
        let typo = try XCTUnwrap(downlinkError(#""delay": "40ms", "jitter": "10ms", "jitterModel": "nettem""#))
        XCTAssertEqual(typo.kind, .invalidValue)
        XCTAssertEqual(typo.path?.description, "$.downlink.jitterModel")
        XCTAssertEqual(typo.problem, #""nettem" is not a jitter model (did you mean "netem"?)"#)
        XCTAssertEqual(typo.expected, #""ordered" or "netem""#)
        XCTAssertEqual(try XCTUnwrap(downlinkError(#""delay": "40ms", "jitter": "10ms", "jitterModel": 1"#)).kind, .wrongType)
        let alone = try XCTUnwrap(downlinkError(#""delay": "40ms", "jitterModel": "netem""#))
        XCTAssertEqual(alone.kind, .conflict)
        XCTAssertEqual(alone.path?.description, "$.downlink.jitterModel")
        XCTAssertEqual(alone.problem, "a jitter model without jitter")
    }
}
