import Foundation
import Profiles
import XCTest

@testable import Scenarios

/// The shipped scenarios: compiled in byte for byte, found by name beside a catalog or built in, a typo
/// answered with the nearest name.
final class ScenarioCatalogTests: XCTestCase {
    private static let root = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    func testTheCompiledInScenariosAreTheScenariosFolder() throws {
        let folder = Self.root.appendingPathComponent("scenarios").path
        let onDisk = ScenarioCatalog(directory: folder)
        XCTAssertEqual(ScenarioCatalog.builtIn.names(), onDisk.names(), "run scripts/generate-catalogs")
        XCTAssertEqual(onDisk.names().count, 7)
        for entry in ScenarioCatalog.builtInTexts {
            let file = try String(contentsOfFile: folder + "/\(entry.name).json", encoding: .utf8)
            XCTAssertEqual(entry.text + "\n", file, "\(entry.name).json differs from its compiled-in copy: run scripts/generate-catalogs")
        }
    }

    func testScenariosAreFoundBesideTheCatalogOrBuiltIn() throws {
        let profiles = ProfileCatalog(directory: Self.root.appendingPathComponent("profiles").path)
        let beside = ScenarioCatalog.beside(profiles)
        XCTAssertEqual(beside.directory, Self.root.appendingPathComponent("scenarios").path)
        XCTAssertNil(ScenarioCatalog.beside(.builtIn).directory)
        XCTAssertNil(ScenarioCatalog.beside(ProfileCatalog(directory: "/nonexistent/profiles")).directory)

        let fromDisk = try beside.scenario("tunnel", profiles: profiles)
        let builtIn = try ScenarioCatalog.builtIn.scenario("tunnel.json", profiles: .builtIn)
        XCTAssertEqual(fromDisk.steps, builtIn.steps)
        XCTAssertEqual(fromDisk.expectations, builtIn.expectations)
        XCTAssertEqual(builtIn.links, [.wifi])
        XCTAssertEqual(try ScenarioCatalog.builtIn.all(profiles: .builtIn).map(\.name), ScenarioCatalog.builtIn.names())
    }

    func testAMistypedNameGetsTheNearestOne() {
        XCTAssertThrowsError(try ScenarioCatalog.builtIn.scenario("tunel", profiles: .builtIn)) { error in
            let error = error as? ScenarioError
            XCTAssertEqual(error?.kind, .notFound)
            XCTAssertEqual(
                error?.description,
                #"tunel: no scenario file of that name, and no shipped scenario named "tunel" (did you mean "tunnel"?): expected a path "#
                    + "to a scenario file, or one of captive-portal, flaky-wifi, handover, ipv6-outage, slow-dns, tunnel, wifi-to-3g "
                    + "(see 'linkcond scenarios')")
        }
        XCTAssertThrowsError(try ScenarioCatalog.builtIn.scenario("./nowhere.json", profiles: .builtIn)) { error in
            XCTAssertEqual((error as? ScenarioError)?.kind, .unreadable)
        }
    }

    /// Every shipped scenario says which links it is written for, and needs exactly those.
    func testShippedScenariosDeclareTheirLinks() throws {
        for scenario in try ScenarioCatalog.builtIn.all(profiles: .builtIn) {
            let links = try XCTUnwrap(scenario.links, "\(scenario.name) does not declare its links")
            let usesCellular = scenario.steps.contains { $0.action.needsCellular }
            XCTAssertEqual(links, usesCellular ? [.wifi, .cellular] : [.wifi], scenario.name)
        }
    }
}
