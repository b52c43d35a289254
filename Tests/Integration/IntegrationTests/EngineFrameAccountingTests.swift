import Foundation
import Glibc
import LinkcondBase
import Sandboxing
import XCTest

/// The reliability suite, issue 18 finding 6: frames never vanish without a count. A sandbox with the
/// userspace engine, driven as a user drives it — `linkcond up`, `apply`, `exec -- ping -s 8000`,
/// `show --json` — with jumbo MTUs set on the path by `ip link`.
final class EngineFrameAccountingTests: SandboxTestCase {
    private static var profilesDirectory: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("profiles").path
    }

    private func linkcond(_ arguments: [String], store: String) throws -> CommandResult {
        try Command.run(
            try linkcondExecutable(), arguments, environment: ["LINKCOND_STORE": store, "LINKCOND_PROFILES": Self.profilesDirectory])
    }

    private func setMTU(_ mtu: Int, _ interfaces: [(namespace: String, interface: String)]) throws {
        for (namespace, interface) in interfaces {
            let result = try Command.ip(["-n", namespace, "link", "set", "dev", interface, "mtu", String(mtu)])
            XCTAssertEqual(result.status, 0, "ip -n \(namespace) link set dev \(interface) mtu \(mtu): \(result.errorOutput)")
        }
    }

    /// `ping -s SIZE -M do` from the client to the router (through `linkcond exec`): how many of `count`
    /// echo requests were answered.
    private func pings(_ count: Int, size: Int, name: String, store: String) throws -> Int {
        let router = SandboxPlan.wifiSubnet.routerIPv4.address.description
        let ping = try linkcond(
            ["exec", "--name", name, "--", "/usr/bin/ping", "-n", "-q", "-s", String(size), "-M", "do", "-c", String(count), "-i", "0.2", "-W", "1", router],
            store: store)
        // "5 packets transmitted, 5 received, 0% packet loss"
        guard let range = ping.output.range(of: #"(\d+) received"#, options: .regularExpression),
            let received = Int(ping.output[range].split(separator: " ")[0])
        else {
            XCTFail("no ping summary: \(ping.output) \(ping.errorOutput)")
            return -1
        }
        return received
    }

    /// The `engine` counters of the wifi uplink's main stage in `linkcond show --json`.
    private func uplinkEngineCounters(name: String, store: String) throws -> [String: Any] {
        let show = try linkcond(["show", "--name", name, "--json"], store: store)
        XCTAssertEqual(show.status, 0, show.errorOutput)
        let document = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(show.output.utf8)) as? [String: Any], show.output)
        let sites = try XCTUnwrap(document["sites"] as? [[String: Any]], show.output)
        let uplink = try XCTUnwrap(sites.first { $0["direction"] as? String == "uplink" && $0["link"] as? String == "wifi" }, show.output)
        let stages = try XCTUnwrap(uplink["stages"] as? [[String: Any]], show.output)
        let main = try XCTUnwrap(stages.first { $0["handle"] as? String == "main" }, show.output)
        return try XCTUnwrap(main["engine"] as? [String: Any], show.output)
    }

    /// With MTU 9000 on the whole path an 8000-byte ping crosses the engine both ways; when the router's side
    /// is put back to 1500, the same pings cannot leave the engine, and `show --json` counts each of them as
    /// `oversized` (before: all lost, and no counter of `show` moved).
    func testJumboPingsCrossAndThoseTheFarEndCannotTakeAreCountedInShow() throws {
        let store = FileManager.default.temporaryDirectory.appendingPathComponent("lcfr-\(getpid())-\(UniqueName.next())").path
        try FileManager.default.createDirectory(atPath: store, withIntermediateDirectories: true)
        addTeardownBlock { try? FileManager.default.removeItem(atPath: store) }
        let name = UniqueName.sandbox()
        addTeardownBlock { SandboxCleanup.remove(name: name, storeDirectory: store) }
        let up = try linkcond(["up", "--name", name, "--backend", "userspace"], store: store)
        XCTAssertEqual(up.status, 0, up.errorOutput)
        let apply = try linkcond(["apply", "wifi", "--name", name], store: store)
        XCTAssertEqual(apply.status, 0, apply.errorOutput)
        let topology = try SandboxTopology(name: name)
        let client = (topology.clientNamespace, SandboxPlan.wifiInterface)
        let wireClient = (topology.wireNamespace, SandboxPlan.wireClientWifiInterface)
        let wireRouter = (topology.wireNamespace, SandboxPlan.wireRouterWifiInterface)
        let router = (topology.routerNamespace, SandboxPlan.routerWifiInterface)
        XCTAssertGreaterThan(try pings(3, size: 56, name: name, store: store), 0, "the path does not answer at all")

        try setMTU(9000, [client, wireClient, wireRouter, router])
        XCTAssertEqual(try pings(5, size: 8000, name: name, store: store), 5, "8000-byte pings were lost with MTU 9000 on the wire")

        try setMTU(1500, [wireRouter, router])
        XCTAssertEqual(try pings(4, size: 8000, name: name, store: store), 0, "an 8000-byte frame crossed a 1500-byte MTU")
        let counters = try uplinkEngineCounters(name: name, store: store)
        XCTAssertEqual((counters["oversized"] as? NSNumber)?.intValue, 4, "the frames too long for the router's end are not counted: \(counters)")
        XCTAssertNil(counters["truncated"], "nothing was too long for the engine's receive ring: \(counters)")

        let text = try linkcond(["show", "--name", name], store: store)
        XCTAssertTrue(text.output.contains("oversized 4 (longer than the sending end's MTU)"), text.output)
    }
}
