import Conditioning
import Foundation
import LinkcondBase
import NetNamespace
import PathMonitor
import Profiles
import Sandboxing
import Scenarios
import Timeline
import XCTest

/// ``LinkLab`` on a namespace linkcond did not make, from Swift: the lab attaches to it by path, runs the
/// path monitor in it, conditions its link (the round trip seen from inside), refuses what needs a
/// sandbox's links or server, and detaches at close — the target as it was before.
final class AttachmentLabTests: SandboxTestCase {
    func testALabAttachesToANamespacePathConditionsItAndDetachesAtClose() async throws {
        let topology = try ContainerLikeTopology.make(in: self)
        let attachment = try makeAttachment()
        try NamespaceSnapshot.settle(topology.app)
        let before = try NamespaceSnapshot.take(topology.app)
        let server = ContainerLikeTopology.serverIPv4.address
        // The prober asks the server namespace (it has no sandbox server; nothing answers, nothing leaves).
        let probe = ReachabilitySettings(host: server.description, nameservers: [server])
        let reports = NSTemporaryDirectory() + "lcit-lab-report-\(getpid())-\(UniqueName.next())"
        addTeardownBlock { try? FileManager.default.removeItem(atPath: reports) }
        setenv("LINKCOND_EXECUTABLE", try linkcondExecutable(), 1)
        let options = LinkLab.Options(
            reportDirectory: reports, probe: probe, store: attachment.sandboxStore, backend: .userspace, attachmentName: attachment.name,
            attach: .namespacePath(topology.app.path))

        try await LinkLab.with(options) { lab in
            XCTAssertEqual(lab.attachment?.name, attachment.name)
            XCTAssertEqual(attachment.record?.interface, "eth0", "the lab attached to the interface of the default route")
            let path = try await lab.waitForPath(.satisfied, within: 5)
            XCTAssertEqual(path.path.availableInterfaces.map(\.name), ["eth0"], "the monitor runs in the target")
            let unconditioned = try Self.pingAverage(from: topology.app, to: server)
            try lab.apply("edge")
            let edge = try Self.pingAverage(from: topology.app, to: server)
            // Edge: 400 ms down + 440 ms up, both directions through the attachment.
            XCTAssertTrue((840...900).contains(edge ?? 0), "edge round trip through the lab's attachment: \(edge.map { "\($0) ms" } ?? "none")")
            print("linkcond-attach: LinkLab on a namespace path: unconditioned \(unconditioned ?? -1) ms, edge \(edge ?? -1) ms (ping average)")
            XCTAssertThrowsError(try lab.setPortal(on: true)) { error in
                XCTAssertTrue("\(error)".contains("attachment '\(attachment.name)' does not have"), "\(error)")
            }
            XCTAssertThrowsError(try lab.setLink(.wifi, side: .client, up: false))
            let events = try lab.events()
            XCTAssertTrue(events.first?.summary.contains("attachment '\(attachment.name)'") == true, "\(events.first.map(\.summary) ?? "none")")
            XCTAssertEqual(events.filter { $0.lane == .conditions }.compactMap(\.state), ["edge"], "the refused changes are not recorded")
        }
        XCTAssertFalse(attachment.exists, "the lab's attachment is detached at close: \(attachment.leftovers())")
        var after = try NamespaceSnapshot.take(topology.app)
        _ = try eventually(timeout: 5) {
            after = try NamespaceSnapshot.take(topology.app)
            return after == before
        }
        XCTAssertTrue(before == after, "the target differs after the lab closed:\n\(before.differences(after))")
        let events = try TimelineReader.read(path: reports + "/events.jsonl").events
        XCTAssertTrue(events.contains { $0.kind == TimelineKind.runFinished })
    }

    /// `run SCENARIO` on an attachment (from Swift, as `linkcond run --name` does): the steps condition its
    /// link, the monitor watches its target, the expectations are judged; it stays attached, its conditions
    /// put back. A scenario that needs the sandbox (its links, its server) is refused before anything runs.
    func testAScenarioRunsOnAnAttachmentAndOneThatNeedsASandboxIsRefused() throws {
        let topology = try ContainerLikeTopology.make(in: self)
        let attachment = try makeAttachment()
        try AttachmentConditioning(attachment: attachment, engineExecutable: try linkcondExecutable()).attach(.namespace(topology.app.name), backend: .userspace)
        let catalog = try ProfileCatalog.locate(directory: AttachmentSpliceTests.catalogDirectory)
        let scenario = try ScenarioParser.parse(text: """
            {"name": "attached-edge", "description": "edge on an attachment, the path satisfied throughout",
             "steps": [{"name": "baseline", "clear": true, "hold": "1s"}, {"name": "edge", "apply": "edge", "hold": "2s"},
                       {"name": "back", "clear": true, "hold": "1s"}],
             "expectations": [{"name": "path satisfied under edge", "lane": "path", "holds": "satisfied", "during": "edge"}]}
            """, source: "attached-edge.json", catalog: catalog)
        XCTAssertEqual(scenario.needsOfASandbox, [])
        let reports = NSTemporaryDirectory() + "lcit-scenario-\(getpid())-\(UniqueName.next())"
        addTeardownBlock { try? FileManager.default.removeItem(atPath: reports) }
        let options = ScenarioRunOptions(
            reportDirectory: reports, catalogDirectory: catalog.directory, store: attachment.sandboxStore, attachmentName: attachment.name)
        let outcome = try ScenarioRunner.run(scenario, options: options)
        XCTAssertTrue(outcome.passed, "\(outcome.report.expectations.map { "\($0.name): \($0.evidence)" }) \(outcome.report.errors.map(\.message))")
        let events = try TimelineReader.read(path: reports + "/events.jsonl").events
        XCTAssertEqual(events.filter { $0.lane == .conditions && $0.kind == TimelineKind.conditionsChanged }.compactMap(\.state), ["clear", "edge", "clear"])
        XCTAssertTrue(events.contains { $0.lane == .path && $0.state == "satisfied" && $0.summary.contains("eth0") }, "the monitor watched the target's eth0")
        XCTAssertEqual(attachment.status()?.healthy, true, "the run left the attachment attached")

        // ipv6-outage removes the sandbox's default route: it needs a sandbox.
        let outage = try ScenarioCatalog.beside(catalog).scenario("ipv6-outage", profiles: catalog)
        XCTAssertThrowsError(try ScenarioRunner.run(outage, options: ScenarioRunOptions(
            reportDirectory: reports + "-refused", store: attachment.sandboxStore, attachmentName: attachment.name))) { error in
            XCTAssertTrue("\(error)".contains("scenario 'ipv6-outage' cannot run on attachment '\(attachment.name)': step 'no-ipv6'"), "\(error)")
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: reports + "-refused"), "a refused run made its report directory")
    }

    /// `ping -c 4` from `namespace`: the average round trip in milliseconds, nil when nothing came back.
    static func pingAverage(from namespace: NamedNamespace, to address: IPAddress) throws -> Double? {
        let (_, output) = try spawnCapturing(namespace, "ping", ["-c", "4", "-i", "0.3", "-W", "3", "-q", address.description])
        guard let line = output.split(separator: "\n").first(where: { $0.contains("min/avg/max") }),
            let values = line.split(separator: "=").last?.split(separator: "/"), values.count >= 2
        else { return nil }
        return Double(values[1].trimmingCharacters(in: .whitespaces))
    }
}
