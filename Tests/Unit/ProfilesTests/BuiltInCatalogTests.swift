import Foundation
import JSONDocument
import XCTest

@testable import Profiles

/// The catalog compiled into the library: the same files as `profiles/`, byte for byte, and usable as a catalog.
final class BuiltInCatalogTests: XCTestCase {
    private static let directory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("profiles").path

    func testTheCompiledInCatalogIsTheProfilesFolder() throws {
        let onDisk = ProfileCatalog(directory: Self.directory)
        XCTAssertEqual(try ProfileCatalog.builtIn.names(), try onDisk.names(), "run scripts/generate-catalogs")
        for name in try onDisk.names() {
            let file = try String(contentsOfFile: Self.directory + "/\(name).json", encoding: .utf8)
            XCTAssertEqual(ProfileCatalog.builtIn.text(of: name), file, "\(name).json differs from its compiled-in copy: run scripts/generate-catalogs")
        }
    }

    func testBuiltInProfilesReadAsTheFilesDoWithoutASource() throws {
        let onDisk = ProfileCatalog(directory: Self.directory)
        for name in try onDisk.names() {
            var fromFile = try onDisk.profile(named: name)
            let builtIn = try ProfileCatalog.builtIn.profile(named: name)
            XCTAssertNil(builtIn.source, "a built-in profile comes from no file")
            fromFile.source = nil
            XCTAssertEqual(builtIn, fromFile, name)
        }
        XCTAssertTrue(ProfileCatalog.builtIn.isBuiltIn)
        XCTAssertEqual(ProfileCatalog.builtIn.origin, "built into linkcond")
        XCTAssertThrowsError(try ProfileCatalog.builtIn.profile(named: "egde")) { error in
            XCTAssertEqual((error as? ProfileError)?.kind, .notFound)
            XCTAssertTrue("\(error)".hasPrefix(#"built into linkcond: no profile named "egde" (did you mean "edge"?)"#), "\(error)")
        }
    }
}

/// Conditions typed as options become a profile read by the profile reader, and are refused in its words,
/// named by the option.
final class InlineConditionsTests: XCTestCase {
    func testOptionsMakeAProfileOnBothDirectionsOrOne() throws {
        let both = try InlineConditions(values: ["delay": "100ms", "jitter": "10ms", "loss": "1%", "rate": "1mbit"]).profile()
        XCTAssertEqual(both.name, "inline")
        XCTAssertNil(both.source)
        let expected = LinkConditions(rate: 1_000_000, delay: 100_000_000, jitter: 10_000_000, loss: .random(probability: 0.01, correlation: 0))
        XCTAssertEqual(both.downlink, expected)
        XCTAssertEqual(both.uplink, expected)
        XCTAssertEqual(both.description, "Conditions given as options: delay 100ms, jitter 10ms, loss 1%, rate 1mbit on both directions.")

        let down = try InlineConditions(values: ["delay": "50ms", "queue-limit": "20"], direction: .downlink).profile()
        XCTAssertEqual(down.downlink.delay, 50_000_000)
        XCTAssertEqual(down.downlink.queueLimit, 20)
        XCTAssertTrue(down.uplink.isNeutral)
        let up = try InlineConditions(values: ["loss": "100%"], direction: .uplink).profile()
        XCTAssertTrue(up.downlink.isNeutral)
        XCTAssertEqual(up.uplink.loss, .random(probability: 1, correlation: 0))
    }

    func testRefusalsAreTheFormatsOwnNamedByTheOption() {
        func refusal(_ values: [String: String], _ direction: InlineConditions.Direction = .both) -> String {
            do {
                _ = try InlineConditions(values: values, direction: direction).profile()
                return "accepted"
            } catch {
                return error.description
            }
        }
        XCTAssertEqual(refusal(["loss": "150%"]), #"--loss: "150%" is out of range: expected a percentage from 0% to 100%"#)
        XCTAssertTrue(refusal(["rate": "1mbps"]).hasPrefix(#"--rate: "1mbps""#), refusal(["rate": "1mbps"]))
        XCTAssertTrue(refusal(["delay": "100"]).hasPrefix(#"--delay: "100""#), refusal(["delay": "100"]))
        XCTAssertTrue(refusal(["reorder": "25%"], .uplink).hasPrefix("--reorder: "), refusal(["reorder": "25%"], .uplink))
        XCTAssertTrue(refusal(["queue-limit": "lots"]).hasPrefix("--queue-limit: "), refusal(["queue-limit": "lots"]))
        // The same words a profile file gets for the same value, without the document's path and position.
        do {
            _ = try ProfileParser.parse(text: #"{"name": "x", "downlink": {"loss": "150%"}}"#, source: "x.json")
        } catch {
            XCTAssertEqual(refusal(["loss": "150%"]), "--loss: \(error.problem): expected \(error.expected ?? "")")
        }
    }
}
