import Profiles
import Conditioning
import Foundation
import Timeline
import XCTest

@testable import Scenarios

/// The scenarios in `scenarios/`, parsed with the real profile catalog in `profiles/`.
final class ShippedScenariosTests: XCTestCase {
    private static let root = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    private static let directory = root.appendingPathComponent("scenarios").path
    private let catalog = ProfileCatalog(directory: root.appendingPathComponent("profiles").path)

    private func load(_ name: String) throws -> Scenario {
        try ScenarioParser.load(path: Self.directory + "/" + name + ".json", catalog: catalog)
    }

    private func s(_ seconds: UInt64) -> UInt64 { seconds * 1_000_000_000 }

    func testEveryShippedScenarioIsValid() throws {
        let files = try FileManager.default.contentsOfDirectory(atPath: Self.directory)
            .filter { $0.hasSuffix(".json") }.sorted()
        XCTAssertEqual(files, [
            "captive-portal.json", "flaky-wifi.json", "handover.json", "ipv6-outage.json", "slow-dns.json", "tunnel.json", "wifi-to-3g.json",
        ])
        for file in files {
            let scenario: Scenario
            do {
                scenario = try ScenarioParser.load(path: Self.directory + "/" + file, catalog: catalog)
            } catch {
                XCTFail("\(error)")
                continue
            }
            XCTAssertEqual(scenario.name + ".json", file, "the name is the file name")
            XCTAssertFalse(scenario.description.isEmpty, file)
            XCTAssertFalse(scenario.expectations.isEmpty, file)
            XCTAssertLessThanOrEqual(scenario.duration, s(90), file)
            XCTAssertEqual(scenario.cellular, scenario.steps.contains { $0.action.needsCellular }, file)
        }
    }

    func testTunnel() throws {
        let tunnel = try load("tunnel")
        XCTAssertEqual(
            tunnel.steps.map(\.action),
            [.apply(profile: "lte"), .apply(profile: "100-loss"), .apply(profile: "3g"), .apply(profile: "lte")])
        XCTAssertEqual(tunnel.steps.map(\.hold), [s(10), s(25), s(15), s(10)])
        XCTAssertTrue(tunnel.expectations.contains {
            $0.lane == .path && $0.rule == .holds(state: "satisfied", duringStep: "tunnel")
        })
        XCTAssertTrue(tunnel.expectations.contains {
            $0.lane == .reachability && $0.rule == .reaches(state: "offline", within: s(12), afterStep: "tunnel")
        })
        XCTAssertTrue(tunnel.expectations.contains {
            $0.lane == .reachability && $0.rule == .reaches(state: "online", within: s(10), afterStep: "3g")
        })
        // The probe settings make the limits hold: detection within 12 s, recovery within 10 s.
        let settings = tunnel.probeSettings()
        XCTAssertLessThanOrEqual(settings.detectionBound, 12 - 1)
        XCTAssertLessThanOrEqual(settings.recoveryBound, 10 - 0.5)
    }

    /// The error FORMAT.md shows.
    func testTheDocumentedError() throws {
        let text = try String(contentsOfFile: Self.directory + "/tunnel.json", encoding: .utf8)
            .replacingOccurrences(of: #""reaches": "offline", "within": "12s", "after": "tunnel""#,
                with: #""reaches": "offline", "within": "12s", "after": "tunel""#)
        XCTAssertThrowsError(try ScenarioParser.parse(text: text, source: "scenarios/tunnel.json", catalog: catalog)) {
            XCTAssertEqual(
                "\($0)",
                #"scenarios/tunnel.json: $.expectations[2].after (line 20, column 115): no step named "tunel" (did "#
                    + #"you mean "tunnel"?): expected the name of a step: one of "lte", "tunnel", "3g", "lte-again""#)
        }
        let format = try String(contentsOfFile: Self.root.appendingPathComponent("scenarios/FORMAT.md").path, encoding: .utf8)
        XCTAssertTrue(format.contains(
            #"scenarios/tunnel.json: $.expectations[2].after (line 20, column 115): no step named "tunel" (did you "#
                + #"mean "tunnel"?): expected the name of a step: one of "lte", "tunnel", "3g", "lte-again""#))
    }

    func testFlakyWifi() throws {
        let flaky = try load("flaky-wifi")
        let flaps = flaky.steps.filter {
            if case .linkDown(.router, .wifi) = $0.action { return true }
            return false
        }
        XCTAssertGreaterThanOrEqual(flaps.count, 3)
        for step in flaps {
            XCTAssertTrue((s(2)...s(3)).contains(step.hold), step.name)
            XCTAssertTrue(flaky.expectations.contains {
                $0.lane == .path && $0.rule == .reaches(state: "unsatisfied", within: s(1), afterStep: step.name)
            }, step.name)
        }
        for step in flaky.steps where step.action == .linkUp(side: .router, link: .wifi) {
            XCTAssertTrue(flaky.expectations.contains {
                $0.lane == .path && $0.rule == .reaches(state: "satisfied", within: s(1), afterStep: step.name)
            }, step.name)
        }
        // The prober's recovery bound fits in the time allowed after the last flap.
        let last = try XCTUnwrap(flaky.expectations.first { $0.lane == .reachability })
        guard case .reaches("online", let within, _) = last.rule else { return XCTFail("\(last.rule)") }
        XCTAssertLessThan(flaky.probeSettings().recoveryBound, Double(within) / 1e9)
    }

    func testCaptivePortal() throws {
        let portal = try load("captive-portal")
        XCTAssertEqual(portal.steps.map(\.action), [.clear(), .portal(on: true), .portal(on: false)])
        XCTAssertTrue(portal.expectations.contains {
            $0.lane == .reachability && $0.rule == .reaches(state: "portal", within: s(5), afterStep: "portal-on")
        })
        XCTAssertTrue(portal.expectations.contains {
            $0.lane == .path && $0.rule == .holds(state: "satisfied", duringStep: "portal-on")
        })
        XCTAssertTrue(portal.expectations.contains {
            $0.lane == .reachability && $0.rule == .reaches(state: "online", within: s(5), afterStep: "portal-off")
        })
    }

    func testHandover() throws {
        let handover = try load("handover")
        XCTAssertTrue(handover.cellular)
        XCTAssertEqual(handover.steps.map(\.action), [.clear(), .handover(to: .cellular), .handover(to: .wifi)])
        XCTAssertTrue(handover.expectations.contains {
            $0.lane == .path && $0.rule == .holds(state: "satisfied", duringStep: "to-cellular", grace: s(1))
        })
        XCTAssertTrue(handover.expectations.contains {
            $0.lane == .reachability && $0.rule == .holds(state: "online", duringStep: "to-cellular", grace: s(5))
        })
        XCTAssertEqual(handover.links, [.wifi, .cellular])
        // With wifi alone the same file is refused.
        let text = try String(contentsOfFile: Self.directory + "/handover.json", encoding: .utf8)
            .replacingOccurrences(of: #""links": ["wifi", "cellular"]"#, with: #""links": ["wifi"]"#)
        XCTAssertThrowsError(try ScenarioParser.parse(text: text, source: "handover.json", catalog: catalog)) { error in
            XCTAssertEqual((error as? ScenarioError)?.kind, .needsCellular)
        }
    }

    func testSlowDNS() throws {
        let slow = try load("slow-dns")
        XCTAssertEqual(slow.steps.map(\.action), [.clear(), .apply(profile: "high-latency-dns"), .clear()])
        let profile = try catalog.profile(named: "high-latency-dns")
        let timeout = try XCTUnwrap(slow.probe?.timeout)
        XCTAssertGreaterThan(timeout, profile.dnsDelay + 1_000_000_000, "the timeout leaves room for the DNS delay and the RTT")
        XCTAssertTrue(slow.expectations.contains {
            $0.lane == .reachability && $0.rule == .holds(state: "online", duringStep: "slow-dns")
        })
        XCTAssertTrue(slow.expectations.contains {
            $0.lane == .path && $0.rule == .holds(state: "satisfied", duringStep: "slow-dns")
        })
    }

    /// The scenarios of the features beyond the presets: one profile per link, one family at a time.
    func testPerLinkAndPerFamilyScenarios() throws {
        let handover = try load("wifi-to-3g")
        XCTAssertTrue(handover.cellular)
        XCTAssertEqual(
            handover.steps.map(\.action),
            [.apply(profile: "wifi", link: .wifi), .apply(profile: "3g", link: .cellular), .handover(to: .cellular), .handover(to: .wifi)])
        let outage = try load("ipv6-outage")
        XCTAssertEqual(
            outage.steps.map(\.action),
            [.clear(), .removeDefaultRoute(link: .wifi, family: .ipv6), .restoreDefaultRoute(link: .wifi, family: .ipv6)])
        XCTAssertEqual(outage.expectations.compactMap(\.family), [.ipv6, .ipv6, .ipv4, .ipv6])
    }
}
