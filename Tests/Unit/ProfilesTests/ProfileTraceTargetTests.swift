import Foundation
import JSONDocument
import XCTest

@testable import Profiles

/// A profile's delivery traces (files next to it) and traffic targets, read, checked and written back.
final class ProfileTraceTargetTests: XCTestCase {
    private var folder = ""

    override func setUpWithError() throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("lctrace-\(getpid())-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: "\(folder)/traces", withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(atPath: folder)
    }

    private func write(_ text: String, to name: String) throws -> String {
        let path = "\(folder)/\(name)"
        try text.write(toFile: path, atomically: false, encoding: .utf8)
        return path
    }

    private func error(_ body: () throws -> Profile) -> ProfileError? {
        do {
            _ = try body()
            XCTFail("accepted")
            return nil
        } catch let error as ProfileError {
            return error
        } catch {
            XCTFail("unexpected \(error)")
            return nil
        }
    }

    func testATraceIsReadFromNextToTheProfile() throws {
        _ = try write("1\n1\n2\n", to: "traces/up.trace")
        _ = try write("5\n", to: "down.trace")
        let path = try write(
            #"{"name": "drive", "uplink": {"trace": "traces/up.trace", "delay": "20ms"}, "downlink": {"trace": "down.trace"}}"#,
            to: "drive.json")
        let profile = try ProfileParser.load(path: path)
        // Two opportunities at 1 ms and one at 2 ms in a 2 ms period: 3 × 1500 bytes every 2 ms = 18 Mbit/s.
        XCTAssertEqual(profile.uplink.trace?.milliseconds, [1, 1, 2])
        XCTAssertEqual(profile.uplink.trace?.summary.meanRate ?? 0, 18_000_000, accuracy: 1e-6)
        XCTAssertEqual(profile.downlink.trace?.milliseconds, [5])
        XCTAssertEqual(profile.uplink.delay, 20_000_000)
        XCTAssertFalse(profile.uplink.isNeutral)
        // Written back with the path as the profile gave it, it reads back the same from the same folder.
        let text = ProfileParser.jsonText(of: profile)
        XCTAssertTrue(text.contains(#""trace":"traces/up.trace""#) || text.contains(#""trace": "traces/up.trace""#), text)
        let again = try write(text, to: "again.json")
        XCTAssertEqual(try ProfileParser.load(path: again).uplink.trace, profile.uplink.trace)
    }

    func testABadTraceNamesItsLine() throws {
        _ = try write("1\n2\nfast\n", to: "bad.trace")
        let path = try write(#"{"name": "x", "downlink": {"trace": "bad.trace"}}"#, to: "x.json")
        let failure = error { try ProfileParser.load(path: path) }
        XCTAssertEqual(failure?.kind, .invalidValue)
        XCTAssertEqual(failure?.path?.description, "$.downlink.trace")
        XCTAssertTrue(failure?.description.contains("bad.trace: line 3: \"fast\" is not a whole number of milliseconds") == true, failure?.description ?? "")

        let missing = try write(#"{"name": "y", "downlink": {"trace": "none.trace"}}"#, to: "y.json")
        XCTAssertTrue(error { try ProfileParser.load(path: missing) }?.description.contains("none.trace") == true)
    }

    func testATraceReplacesTheRateAndTheSlots() throws {
        _ = try write("1\n", to: "t.trace")
        for (key, value) in [("rate", #""1mbit""#), ("slot", #"{"min": "10ms"}"#)] {
            let path = try write(#"{"name": "x", "uplink": {"trace": "t.trace", "\#(key)": \#(value)}}"#, to: "x.json")
            let failure = error { try ProfileParser.load(path: path) }
            XCTAssertEqual(failure?.kind, .conflict, key)
            XCTAssertEqual(failure?.path?.description, "$.uplink.\(key)")
        }
    }

    func testTargetsAreReadCheckedAndWrittenBack() throws {
        let profile = try ProfileParser.parse(
            text: #"""
            {"name": "t", "downlink": {"delay": "100ms"},
             "targets": [{"to": "198.19.0.0/24", "protocol": "tcp", "port": 443}, {"to": "2001:2:0:100::2"}, {"to": "198.18.0.0/15", "protocol": "icmp"}]}
            """#, source: "t.json")
        XCTAssertEqual(profile.targets.map(\.description), ["tcp 198.19.0.0/24 port 443", "2001:2:0:100::2/128", "icmp 198.18.0.0/15"])
        XCTAssertEqual(try ProfileParser.parse(text: ProfileParser.jsonText(of: profile), source: "t.json"), profile)

        func failure(_ targets: String) -> ProfileError? {
            error { try ProfileParser.parse(text: #"{"name": "t", "targets": \#(targets)}"#, source: "t.json") }
        }
        XCTAssertEqual(failure(#"[{"to": "198.19.0.1/24"}]"#)?.path?.description, "$.targets[0].to")
        XCTAssertTrue(failure(#"[{"to": "198.19.0.1/24"}]"#)?.description.contains("198.19.0.0/24") == true)
        XCTAssertEqual(failure(#"[{"to": "198.19.0.0/24", "protocol": "sctp"}]"#)?.path?.description, "$.targets[0].protocol")
        XCTAssertEqual(failure(#"[{"to": "198.19.0.0/24", "protocol": "icmp", "port": 7}]"#)?.path?.description, "$.targets[0].port")
        XCTAssertEqual(failure(#"[{"to": "198.19.0.0/24", "port": 0}]"#)?.path?.description, "$.targets[0].port")
        XCTAssertEqual(failure(#"[{"dest": "198.19.0.0/24"}]"#)?.kind, .unknownKey)
        XCTAssertEqual(failure(#"{"to": "198.19.0.0/24"}"#)?.kind, .wrongType)
        let many = "[" + (0..<65).map { #"{"to": "198.19.\#($0).0/24"}"# }.joined(separator: ",") + "]"
        XCTAssertEqual(failure(many)?.kind, .outOfRange)
    }
}
