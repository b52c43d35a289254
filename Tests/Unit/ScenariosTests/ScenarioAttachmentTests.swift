import Foundation
import XCTest

@testable import Scenarios

/// Which scenarios can run on an attachment (``Scenario/needsOfASandbox``): apply, clear, wait and the wifi
/// link's router side going down or up (the target's cable) can; the client side, a cellular link, address,
/// route, portal and hand-over steps and prober expectations cannot, each said in a sentence.
final class ScenarioAttachmentTests: XCTestCase {
    private static let directory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("scenarios").path

    private func parse(_ steps: String, cellular: Bool = false, expectations: String = "[]") throws -> Scenario {
        try ScenarioParser.parse(
            text: """
                {"name": "t", "description": "d", "cellular": \(cellular), "steps": \(steps), "expectations": \(expectations)}
                """, source: "t.json", profileExists: { _ in true })
    }

    func testRouterSideWifiLinkStepsRunOnAnAttachment() throws {
        let scenario = try parse("""
            [{"name": "out", "link": "down", "side": "router", "interface": "wifi", "hold": "1s"},
             {"name": "edge", "apply": "edge", "hold": "1s"},
             {"name": "in", "link": "up", "side": "router", "interface": "wifi", "hold": "1s"}]
            """, expectations: #"[{"name": "p", "lane": "path", "reaches": "unsatisfied", "within": "1s", "after": "out"}]"#)
        XCTAssertEqual(scenario.needsOfASandbox, [])
    }

    func testTheClientSideACellularLinkAndAddressStepsNeedASandbox() throws {
        let client = try parse(#"[{"name": "radio-off", "link": "down", "side": "client", "interface": "wifi", "hold": "1s"}]"#)
        XCTAssertEqual(client.needsOfASandbox.count, 1)
        XCTAssertTrue(client.needsOfASandbox[0].hasPrefix("step 'radio-off' ("), client.needsOfASandbox[0])
        XCTAssertTrue(client.needsOfASandbox[0].contains("takes the target's own interface down or up"), client.needsOfASandbox[0])
        let cellular = try parse(#"[{"name": "cell-out", "link": "down", "side": "router", "interface": "cellular", "hold": "1s"}]"#, cellular: true)
        XCTAssertEqual(cellular.needsOfASandbox.count, 2, "\(cellular.needsOfASandbox)")
        XCTAssertTrue(cellular.needsOfASandbox[0].hasPrefix("step 'cell-out' (") && cellular.needsOfASandbox[0].contains("changes the sandbox's own links"))
        XCTAssertEqual(cellular.needsOfASandbox[1], "it asks for a cellular link")
        let addresses = try parse(#"[{"name": "bare", "address": "remove", "hold": "1s"}]"#)
        XCTAssertTrue(addresses.needsOfASandbox.first?.contains("changes the sandbox's own links, addresses, routes or portal") == true, "\(addresses.needsOfASandbox)")
    }

    /// flaky-wifi's flaps are router-side wifi link steps: only its prober expectation keeps it off an attachment.
    func testShippedScenariosOnAnAttachment() throws {
        let files = try FileManager.default.contentsOfDirectory(atPath: Self.directory).filter { $0.hasSuffix(".json") }.sorted()
        var needs: [String: [String]] = [:]
        for file in files {
            let scenario = try ScenarioParser.load(path: Self.directory + "/" + file, profileExists: { _ in true })
            needs[scenario.name] = scenario.needsOfASandbox
        }
        XCTAssertEqual(needs["flaky-wifi"], ["expectation 'prober online after the flaps' watches the prober, which asks the sandbox's server"])
        XCTAssertEqual(needs["ipv6-outage"]?.first?.hasPrefix("step 'no-ipv6' ("), true, "\(needs["ipv6-outage"] ?? [])")
        for (name, list) in needs { XCTAssertFalse(list.isEmpty, "\(name) runs on an attachment: every shipped scenario watches the prober") }
    }
}
